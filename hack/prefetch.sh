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
	# go list -deps downloads the modules of exactly these packages.
	(cd "$here/.." && go list -deps -test ./... >/dev/null) &
	(cd "$here/tools" && go list -deps helm.sh/helm/v4/cmd/helm sigs.k8s.io/kustomize/kustomize/v5 gotest.tools/gotestsum >/dev/null) &
	(cd "$here/tools/kube" && go list -deps k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubelet \
		k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl >/dev/null) &
	(cd "$here/tools/etcd" && go list -deps go.etcd.io/etcd/server/v3 >/dev/null) &
	(cd "$here/tools/containerd1" && go list -deps -tags "no_btrfs no_devmapper no_zfs" github.com/containerd/containerd/cmd/containerd >/dev/null) &
	go mod download "github.com/containerd/containerd/v2@$CONTAINERD_22_VERSION" "github.com/containerd/containerd/v2@$CONTAINERD_23_VERSION" "gvisor.dev/gvisor@$GVISOR_VERSION" &
	wait
} >>"$log" 2>&1
