#!/usr/bin/env bash
# Builds the external binaries the tests run from the Go module proxy and caches
# them per version under $SHIMKIT_CACHE (default: the user cache dir), so a
# second run rebuilds nothing.
#
#   hack/bins.sh            envtest (the oldest supported kube-apiserver, etcd), the newest
#                           kube-apiserver, the containerd matrix, gVisor and CRI-O
#   hack/bins.sh cluster    also the newest kubelet, kube-controller-manager, kube-scheduler, kubectl
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
cache=${SHIMKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shimkit}
tags="no_btrfs no_devmapper no_zfs"
# Every binary links with -s -w (no symbols, no DWARF): -dwarf=false spares
# the compiler writing the DWARF the linker drops. kube-apiserver v1.35.4
# from an empty build cache: 245 s without it, 210 s with it (BENCHMARKS.md).
nodwarf=-gcflags=all=-dwarf=false
began=$SECONDS

# build DIR NAME... -- CMD...: runs CMD with $out set to a temporary directory
# when DIR lacks any of NAME, then moves the results into DIR.
build() {
	local dir=$1; shift
	local names=()
	while [ "$1" != "--" ]; do names+=("$1"); shift; done
	shift
	local missing=0 n
	for n in "${names[@]}"; do [ -x "$dir/$n" ] || missing=1; done
	if [ $missing = 0 ]; then echo "bins: cached $dir"; return; fi
	echo "bins: building ${names[*]} into $dir ($((SECONDS - began)) s since make bins began)"
	local start=$SECONDS
	mkdir -p "$dir"
	out=$(mktemp -d "$dir/.build.XXXXXX")
	"$@"
	for n in "${names[@]}"; do mv -f "$out/$n" "$dir/$n"; done
	rm -rf "$out"
	echo "bins: built ${names[*]} in $((SECONDS - start))s"
}

# kube_ldflags VERSION: the version stamp of a Kubernetes release (v1.MINOR.PATCH).
kube_ldflags() {
	local minor=${1#v1.}
	echo "-s -w -X k8s.io/component-base/version.gitVersion=$1 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor%%.*} -X k8s.io/component-base/version.gitTreeState=clean"
}
kube() { (cd "$here/tools/kube" && CGO_ENABLED=0 go build -trimpath $nodwarf -ldflags "$(kube_ldflags "$KUBE_VERSION")" -o "$out/" "${@/#/k8s.io/kubernetes/cmd/}"); }
# envtest's kube-apiserver: the oldest Kubernetes shimkit supports.
kube_oldest() {
	(cd "$here/tools/kube-oldest" && CGO_ENABLED=0 go build -trimpath $nodwarf -ldflags "$(kube_ldflags "$KUBE_OLDEST_VERSION")" -o "$out/" k8s.io/kubernetes/cmd/kube-apiserver)
}
etcd() { (cd "$here/tools/etcd" && CGO_ENABLED=0 go build -trimpath $nodwarf -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3); }
# One go build for the three commands: their links run side by side.
containerd1() {
	(cd "$here/tools/containerd1" && go build -trimpath $nodwarf -tags "$tags" -ldflags "-s -w -X github.com/containerd/containerd/version.Version=$CONTAINERD_17_VERSION" -o "$out/" \
		github.com/containerd/containerd/cmd/containerd github.com/containerd/containerd/cmd/ctr github.com/containerd/containerd/cmd/containerd-shim-runc-v2)
}
containerd2() {
	local v=$1
	GOBIN=$out GOFLAGS=-buildvcs=false go install -trimpath $nodwarf -tags "$tags" -ldflags "-s -w" \
		"github.com/containerd/containerd/v2/cmd/containerd@$v" \
		"github.com/containerd/containerd/v2/cmd/ctr@$v" \
		"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$v"
}
# gVisor's `go` branch (the only one that builds with Go tooling) has no
# replace or exclude directives, so `go install pkg@version` works; the shim
# is the package gvisor.dev/gvisor/shim, installed under containerd's name.
gvisor() {
	GOBIN=$out GOFLAGS=-buildvcs=false CGO_ENABLED=0 go install -trimpath $nodwarf \
		-ldflags "-s -w -X gvisor.dev/gvisor/runsc/version.version=$GVISOR_VERSION" \
		"gvisor.dev/gvisor/runsc@$GVISOR_VERSION" "gvisor.dev/gvisor/shim@$GVISOR_VERSION"
	mv "$out/shim" "$out/containerd-shim-runsc-v1"
}
# CRI-O: crio built as a dependency of hack/tools/crio (`go install
# pkg@version` is refused: the proxy answers 403 for cri-o's version list,
# which go install reads for deprecations; the module's go.sum is CRI-O's own,
# as two of its dependencies are not in the checksum database), without
# seccomp, SELinux, AppArmor, btrfs or gpgme (the Makefile's tag scripts would
# probe for their C libraries). pinns is CRI-O's small C helper, compiled with
# gcc alone from the module's source.
crio_tags="containers_image_openpgp containers_image_ostree_stub exclude_graphdriver_btrfs exclude_graphdriver_devicemapper"
crio() {
	(cd "$here/tools/crio" && go build -trimpath $nodwarf -tags "$crio_tags" -ldflags "-s -w" -o "$out/crio" github.com/cri-o/cri-o/cmd/crio)
	local src
	src=$(cd "$here/tools/crio" && go list -m -f '{{.Dir}}' github.com/cri-o/cri-o)
	gcc -std=c99 -O2 -Wall -Wextra -static -o "$out/pinns" "$src"/pinns/src/*.c
	strip -s "$out/pinns"
}

# The Kubernetes binaries in one go build (envtest needs kube-apiserver; the
# cluster the rest): one compile of what they share, their links side by side.
kube_bins=(kube-apiserver)
if [ "${1:-}" = cluster ]; then kube_bins+=(kubelet kube-controller-manager kube-scheduler kubectl); fi
kube_missing=()
for b in "${kube_bins[@]}"; do [ -x "$cache/bin/kube-$KUBE_VERSION/$b" ] || kube_missing+=("$b"); done
if [ ${#kube_missing[@]} -gt 0 ]; then
	build "$cache/bin/kube-$KUBE_VERSION" "${kube_missing[@]}" -- kube "${kube_missing[@]}"
else
	echo "bins: cached $cache/bin/kube-$KUBE_VERSION"
fi
build "$cache/bin/etcd-$ETCD_VERSION" etcd -- etcd
build "$cache/bin/kube-$KUBE_OLDEST_VERSION" kube-apiserver -- kube_oldest
for v in "$CONTAINERD_22_VERSION" "$CONTAINERD_23_VERSION"; do
	build "$cache/bin/containerd-$v" containerd ctr containerd-shim-runc-v2 -- containerd2 "$v"
done
build "$cache/bin/containerd-$CONTAINERD_17_VERSION" containerd ctr containerd-shim-runc-v2 -- containerd1
build "$cache/bin/gvisor-$GVISOR_VERSION" runsc containerd-shim-runsc-v1 -- gvisor
build "$cache/bin/crio-$CRIO_VERSION" crio pinns -- crio
echo "bins: every binary built or cached, $((SECONDS - began)) s"
