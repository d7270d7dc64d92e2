#!/bin/sh
# PID 1 of one simulated node, run under `unshare --mount --uts --ipc --pid --fork`.
# Mounts the node's overlay root, its own proc, a read-only sysfs, a private /dev and /run,
# sets the hostname, pivots into the overlay and becomes tini -> sshd.
# Usage: node-init.sh LOWER UPPER WORK MERGED HOSTNAME
set -eu
lower=$1 upper=$2 work=$3 merged=$4 name=$5
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$upper,workdir=$work" "$merged"
mount -t proc proc "$merged/proc"
mount -t sysfs -o ro sysfs "$merged/sys" || true   # sysfs may be refused without a net namespace; nothing reads it
mount -t tmpfs -o mode=755,size=16m tmpfs "$merged/dev"
for dev in null zero full random urandom tty; do
  touch "$merged/dev/$dev"
  mount --bind "/dev/$dev" "$merged/dev/$dev"
done
mkdir -p "$merged/dev/pts" "$merged/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$merged/dev/pts"
ln -s pts/ptmx "$merged/dev/ptmx"
ln -s /proc/self/fd "$merged/dev/fd"
mount -t tmpfs -o mode=1777 tmpfs "$merged/dev/shm"
mount -t tmpfs -o mode=755 tmpfs "$merged/run"
mkdir -p "$merged/run/sshd" "$merged/run/lock"
hostname "$name"
cd "$merged"
mkdir -p .oldroot
pivot_root . .oldroot
cd /
umount -l /.oldroot
rmdir /.oldroot
exec /usr/bin/tini -s -- /usr/sbin/sshd -D -e
