#!/usr/bin/env bash
# make deploy / make undeploy: operator/config/default with the images IMG and
# INSTALLER_IMG, through a kustomization in a temporary directory (no tracked
# file changes), applied to or deleted from the cluster of the current
# kubeconfig. undeploy leaves the CRDs (and so every Shim): make uninstall.
#
#   KUSTOMIZE=bin/kustomize KUBECTL=kubectl IMG=... INSTALLER_IMG=... hack/deploy.sh apply|delete
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KUSTOMIZE:?}" "${KUBECTL:=kubectl}" "${IMG:?}" "${INSTALLER_IMG:?}"
case "${1:-}" in apply | delete) ;; *) echo "usage: $0 apply|delete" >&2; exit 2 ;; esac
KUSTOMIZE=$(realpath "$KUSTOMIZE")
base=$(realpath operator/config/default)
overlay=$(mktemp -d)
trap 'rm -rf "$overlay"' EXIT
cd "$overlay"
"$KUSTOMIZE" create --resources "$(realpath --relative-to="$overlay" "$base")"
"$KUSTOMIZE" edit set image "shimkit-operator=$IMG"
"$KUSTOMIZE" edit add patch --kind Deployment --name shimkit-operator --patch "$(printf '%s' \
	'{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"shimkit-operator"},' \
	'"spec":{"template":{"spec":{"containers":[{"name":"operator","env":[{"name":"SHIMKIT_INSTALLER_IMAGE","value":"'"$INSTALLER_IMG"'"}]}]}}}}')"
if [ "$1" = apply ]; then
	"$KUSTOMIZE" build . | "$KUBECTL" apply --server-side -f -
	exit
fi
"$KUSTOMIZE" edit add patch --patch \
	'{"$patch":"delete","apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"shims.containerd.x-k8s.io"}}'
if shims=$("$KUBECTL" get shims.containerd.x-k8s.io -o name 2>/dev/null) && [ -n "$shims" ]; then
	echo "undeploy: the Shims stay, unmanaged until an operator runs again:" $shims >&2
fi
"$KUSTOMIZE" build . | "$KUBECTL" delete --ignore-not-found -f -
