#!/usr/bin/env bash
# Builds the root filesystem of the test node sandbox once per machine, from
# Debian packages only: systemd as PID 1, D-Bus, and Debian's containerd and
# runc with containerd enabled as a unit, like a node. Cached under
# $SHIMKIT_CACHE/node-rootfs-$NODE_ROOTFS_VERSION.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
cache=${SHIMKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shimkit}
dir=$cache/node-rootfs-$NODE_ROOTFS_VERSION
if [ -x "$dir/rootfs/lib/systemd/systemd" ]; then echo "node-rootfs: cached $dir"; exit 0; fi
command -v debootstrap >/dev/null || { echo "node-rootfs: debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }

# The mirror this machine's apt uses (deb822 sources first, then the
# one-line format); the project names no host itself.
mirror=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || { echo "node-rootfs: no Debian mirror in the apt sources" >&2; exit 1; }

start=$SECONDS
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,containerd,runc,iproute2,containernetworking-plugins,mount \
	bookworm "$tmp/rootfs" "$mirror" >"$tmp/debootstrap.log" 2>&1 || { tail -20 "$tmp/debootstrap.log" >&2; exit 1; }
r=$tmp/rootfs
echo shimkit-node >"$r/etc/hostname"
printf "127.0.0.1 localhost\n127.0.1.1 shimkit-node\n::1 localhost ip6-localhost ip6-loopback\n" >"$r/etc/hosts"
# This machine kind lacks CAP_SYS_RESOURCE: CRI sandboxes need
# restrict_oom_score_adj. Nothing can be pulled: the sandbox image is one
# the tests build and import.
mkdir -p "$r/etc/containerd"
cat >"$r/etc/containerd/config.toml" <<'TOML'
version = 2

[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
  sandbox_image = "shimkit.test/pause:1"
TOML
# Units that have nothing to do in a sandbox.
for u in getty@tty1.service console-getty.service systemd-udevd.service systemd-udevd-control.socket \
	systemd-udevd-kernel.socket systemd-modules-load.service e2scrub_reap.service apt-daily.timer apt-daily-upgrade.timer; do
	ln -sf /dev/null "$r/etc/systemd/system/$u"
done
rm -rf "$r/var/cache/apt/archives"/*.deb
mv "$r" "$dir/rootfs"
echo "node-rootfs: built $dir in $((SECONDS - start))s"
