#!/bin/sh
# PID 1 of one simulated node, run by node-boot.sh under `unshare --mount --uts --ipc --pid --cgroup --fork`.
# Mounts the node's overlay root, its own proc, a read-only sysfs, its cgroup (v2) tree, a private /dev
# and /run, writes the boot's id, sets the hostname, pivots into the overlay and boots systemd, which
# starts sshd and the node's enabled units as on every real target.
# Usage: node-init.sh LOWER UPPER WORK MERGED HOSTNAME PROC_DEVICES
# (PROC_DEVICES: the node's /proc/devices view, a path inside its root: rack.py SIM_PROC_DEVICES)
set -eu
lower=$1 upper=$2 work=$3 merged=$4 name=$5 proc_devices=$6
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$upper,workdir=$work" "$merged"
mount -t proc proc "$merged/proc"
mount -t sysfs -o ro sysfs "$merged/sys" || true   # sysfs may be refused without a net namespace
# systemd needs a cgroup tree: the v2 hierarchy, whose root is this node's own cgroup (cgroup namespace).
mkdir -p "$merged/sys/fs/cgroup" 2>/dev/null || true
mount -t cgroup2 -o nsdelegate cgroup2 "$merged/sys/fs/cgroup"
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
# The simulated nvidia module "loads" at boot (the kernel is shared, nothing loads): with the option
# NVreg_CreateImexChannel0=1 in modprobe.d it makes IMEX channel 0, of the major its /proc/devices view lists
# (NVIDIA IMEX guide, "IMEX Channels"). Without it, no channel survives a reboot.
if grep -qs "NVreg_CreateImexChannel0=1" "$merged"/etc/modprobe.d/*.conf; then
  major=$(awk '$2 == "nvidia-caps-imex-channels" {print $1}' "$merged$proc_devices" 2>/dev/null)
  if [ -n "$major" ]; then
    mkdir -p "$merged/dev/nvidia-caps-imex-channels"
    mknod -m 666 "$merged/dev/nvidia-caps-imex-channels/channel0" c "$major" 0
  fi
fi
# The kernel's views of the simulated settings (rack.write_kernel_views, kernelviews.py), written from the hardware
# model beside PROC_DEVICES, bound over the real paths so that `cat /proc/cmdline`, `cat /proc/modules` and reads
# of the cpufreq policies and IOMMU groups show the model. A fault rewrites them in place (same inode), so the bind
# mounts show it at once. A sysfs folder is bound only where its mount point exists (this kernel's sysfs has both).
views="$merged${proc_devices%/proc/devices}"
for view in cmdline modules; do
  if [ -f "$views/proc/$view" ] && [ -e "$merged/proc/$view" ]; then
    mount --bind "$views/proc/$view" "$merged/proc/$view"
  fi
done
if [ -d "$views/sys/cpufreq" ] && [ -d "$merged/sys/devices/system/cpu/cpufreq" ]; then
  mount --bind "$views/sys/cpufreq" "$merged/sys/devices/system/cpu/cpufreq"
fi
if [ -d "$views/sys/iommu_groups" ] && [ -d "$merged/sys/kernel/iommu_groups" ]; then
  mount --bind "$views/sys/iommu_groups" "$merged/sys/kernel/iommu_groups"
fi
# /sys/module: one folder per loaded module with its initstate (this machine's kernel has no loadable modules and
# no /proc/modules at all, so that file view above is bound only where the kernel has one).
if [ -d "$views/sys/module" ] && [ -d "$merged/sys/module" ]; then
  mount --bind "$views/sys/module" "$merged/sys/module"
fi
mount -t tmpfs -o mode=755 tmpfs "$merged/run"
mkdir -p "$merged/run/lock" "$merged/run/provision-sim"
# The boot's id: the kernel's own (/proc/sys/kernel/random/boot_id) is this machine's, the same for every
# node and every reboot; Ansible's reboot module reads this one (site.yml: nvidia_driver_boot_time_command).
cat /proc/sys/kernel/random/uuid > "$merged/run/provision-sim/boot_id"
hostname "$name"
cd "$merged"
mkdir -p .oldroot
pivot_root . .oldroot
cd /
umount -l /.oldroot
rmdir /.oldroot
# `container` tells systemd it runs in a container (systemd's CONTAINER_INTERFACE: no udev, no
# hardware units); stdin from /dev/null, its log to the journal and this node's log file.
export container=provision-sim
exec /lib/systemd/systemd --log-target=journal-or-kmsg </dev/null
