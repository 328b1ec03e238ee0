#!/usr/bin/env bash
# Builds the CRI-O node's layer once per machine: Debian's conmon and crun
# (runc and the CNI plugins are already in the node root filesystem of
# hack/node-rootfs.sh), installed with apt in a chroot of an overlay over that
# root filesystem, whose upper directory becomes the layer. A CRI-O node
# (internal/testutil/crionode.go) stacks it over the root filesystem and adds
# the CRI-O build of hack/bins.sh and its configuration when it boots.
# Cached under $SHIMKIT_CACHE/node-rootfs-$NODE_ROOTFS_VERSION/crio-$NODE_CRIO_LAYER_VERSION.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
cache=${SHIMKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shimkit}
base=$cache/node-rootfs-$NODE_ROOTFS_VERSION/rootfs
dir=$cache/node-rootfs-$NODE_ROOTFS_VERSION/crio-$NODE_CRIO_LAYER_VERSION
if [ -x "$dir/layer/usr/bin/conmon" ]; then echo "node-crio-layer: cached $dir"; exit 0; fi
[ -x "$base/lib/systemd/systemd" ] || "$here/node-rootfs.sh"

start=$SECONDS
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.build.XXXXXX")
m=$tmp/merged
cleanup() {
	for p in "$m/etc/resolv.conf" "$m/dev" "$m/proc" "$m"; do
		mountpoint -q "$p" 2>/dev/null && umount -l "$p"
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/upper" "$tmp/work" "$m"
mount -t overlay overlay -o "lowerdir=$base,upperdir=$tmp/upper,workdir=$tmp/work" "$m"
mount -t proc proc "$m/proc"
mount --bind /dev "$m/dev"
# This machine's resolver, for the duration of the build only (a bind mount
# leaves nothing in the layer).
mount --bind /etc/resolv.conf "$m/etc/resolv.conf"
export DEBIAN_FRONTEND=noninteractive
{
	chroot "$m" apt-get update -qq
	chroot "$m" apt-get install -y -qq --no-install-recommends conmon crun
	chroot "$m" apt-get clean
} >"$tmp/apt.log" 2>&1 || { tail -20 "$tmp/apt.log" >&2; exit 1; }
rm -rf "$m/var/lib/apt/lists/"*
umount "$m/etc/resolv.conf" "$m/dev" "$m/proc"
umount "$m"
mv "$tmp/upper" "$dir/layer"
echo "node-crio-layer: built $dir in $((SECONDS - start))s ($(du -sh "$dir/layer" | cut -f1))"
