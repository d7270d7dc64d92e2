#!/bin/sh
# The supervisor of one simulated node: the node's PID 1 runs under it, and it boots the node again
# when the node reboots, as a machine's firmware would.
# A PID namespace's init that calls reboot(2) is killed by SIGHUP (RESTART) or SIGINT (POWER_OFF,
# HALT) (pid_namespaces(7), "reboot(2) and PID namespaces"); `unshare --fork` then kills itself with
# the same signal, so the shell sees 128+1 for a reboot and ends the loop on anything else.
# The node runs in its own cgroup (CGROUP, a folder of the cgroup v2 hierarchy) with a cgroup
# namespace, so its systemd sees that cgroup as its root and keeps its slices inside it.
# Only builtins run before unshare, so that the shell's one child is unshare (rack.py finds the node's
# PID 1 as that child's child).
# Where the memory controller is on cgroup v1 (MEMCG, a folder of that hierarchy, or empty), the
# supervisor joins it too, so that the node's memory is counted there (cgroups.memory_folder).
# Usage: node-boot.sh CGROUP MEMCG INIT_SCRIPT LOWER UPPER WORK MERGED HOSTNAME PROC_DEVICES (CGROUP exists)
set -u
cgroup=$1 memcg=$2 init=$3
shift 3
echo $$ > "$cgroup/cgroup.procs"
[ -z "$memcg" ] || echo $$ > "$memcg/cgroup.procs"
while :; do
  unshare --mount --uts --ipc --pid --cgroup --fork --kill-child --propagation private /bin/sh "$init" "$@"
  rc=$?
  [ "$rc" -eq 129 ] || exit "$rc"
  echo "node-boot: $5 rebooted; booting it again"
done
