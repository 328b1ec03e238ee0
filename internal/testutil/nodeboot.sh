#!/bin/sh
# Runs inside fresh PID, mount, UTS, IPC, network and cgroup namespaces
# (see node.go): makes ROOT a machine of its own and execs systemd as its
# PID 1. ROOT/run is a tmpfs the host mounted, so the host sees the node's
# sockets (containerd, D-Bus) under ROOT/run.
set -eu
ROOT=$1
mount --make-rprivate /
# runc needs / to be a mount point.
mount --rbind "$ROOT" "$ROOT"
mount -t proc proc "$ROOT/proc"
mount -t sysfs -o ro sysfs "$ROOT/sys"
# NODE_CRIO (a CRI-O node): this machine's kernel has controllers no
# hierarchy mounts (hugetlb, net_cls, net_prio, perf_event), which a real
# node mounts. CRI-O reads /proc/cgroups and uses each controller it
# lists: it would pass the kubelet's hugetlb limits on, and runc fail to
# apply them ("cannot set hugetlb limit"); with cgroupfs, it fails to move
# a conmon into the pod's cgroups ("creating cgroup path for net_cls").
# So the node's /proc/cgroups lists only the
# mounted controllers, and it has no huge page sizes, so that the kubelet
# asks for no hugetlb limits.
if [ -n "${NODE_CRIO:-}" ]; then
	mount -t tmpfs -o ro,mode=755 none "$ROOT/sys/kernel/mm/hugepages"
	awk 'NR == 1 || $2 != 0' /proc/cgroups >"$ROOT/../proc-cgroups"
	mount --bind -o ro "$ROOT/../proc-cgroups" "$ROOT/proc/cgroups"
fi
# A boot ID of the node's own (NODE_BOOT_ID, a file of the host's that
# newBoot writes; NodeOptions.OwnBootID), not this machine's: a reboot's
# stand-in writes a new one there.
if [ -n "${NODE_BOOT_ID:-}" ]; then
	mount --bind "$NODE_BOOT_ID" "$ROOT/proc/sys/kernel/random/boot_id"
fi
mount -t tmpfs -o mode=755 cgroup "$ROOT/sys/fs/cgroup"
# Every cgroup v1 hierarchy of the host, then cgroup2; in this cgroup
# namespace their root is the node's own cgroup.
awk '$3 == "cgroup" {print $2, $4}' /proc/mounts | while read -r mp opts; do
	d="$ROOT/sys/fs/cgroup/$(basename "$mp")"
	mkdir -p "$d"
	mount -t cgroup -o "$opts" cgroup "$d"
done
if [ -d /sys/fs/cgroup/unified ]; then
	mkdir -p "$ROOT/sys/fs/cgroup/unified"
	mount -t cgroup2 cgroup2 "$ROOT/sys/fs/cgroup/unified"
fi
# A minimal /dev.
mount -t tmpfs -o mode=755,nosuid tmpfs "$ROOT/dev"
for d in null zero full random urandom tty kmsg; do
	touch "$ROOT/dev/$d"
	mount --bind "/dev/$d" "$ROOT/dev/$d"
done
mkdir -p "$ROOT/dev/pts" "$ROOT/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$ROOT/dev/pts"
ln -sf pts/ptmx "$ROOT/dev/ptmx"
mount -t tmpfs -o mode=1777 tmpfs "$ROOT/dev/shm"
mount -t tmpfs -o mode=1777 tmpfs "$ROOT/tmp"
[ "${NODE_NET:-}" = host ] || ip link set lo up
# Read-only directories (NODE_RO: node paths), as on an immutable or
# hardened host: bound onto themselves, then remounted read-only.
for d in ${NODE_RO:-}; do
	mount --bind "$ROOT$d" "$ROOT$d"
	mount -o remount,bind,ro "$ROOT$d"
done
cd "$ROOT"
mkdir -p .oldroot
pivot_root . .oldroot
umount -l /.oldroot
rmdir /.oldroot
# Like a node booted by systemd, / is shared (pods' mount propagation relies
# on it); this namespace's mounts were made private first, so nothing
# propagates to the host.
mount --make-rshared /
exec env -i container=other /lib/systemd/systemd
