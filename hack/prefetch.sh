#!/usr/bin/env bash
# Warms the Go module cache for every module the tests build, all at once:
# downloads wait on the network, builds on the CPU, so a cold CI run that
# starts this in the background overlaps the two. Best effort: a build still
# downloads whatever this did not get. Output goes to $1 (default /dev/null).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
log=${1:-/dev/null}
{
	for dir in "$here/.." "$here/tools" "$here/tools/kube" "$here/tools/etcd" "$here/tools/containerd1"; do
		(cd "$dir" && go mod download) &
	done
	go mod download "github.com/containerd/containerd/v2@$CONTAINERD_22_VERSION" "github.com/containerd/containerd/v2@$CONTAINERD_23_VERSION" "gvisor.dev/gvisor@$GVISOR_VERSION" &
	wait
} >>"$log" 2>&1
