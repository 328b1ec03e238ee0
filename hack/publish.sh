#!/usr/bin/env bash
# Pushes a release of make release to its registry (make publish, with the
# VERSION, IMAGE_PREFIX and DIST of make release):
#   the image indexes shimkit-{operator,installer}-$VERSION.oci.tar, every
#   platform, under the names the release gave them (images.txt), each
#   checked to resolve to the digest the chart pins;
#   the chart shimkit-X.Y.Z.tgz (its version is $VERSION without the v) to
#   oci://$CHART_REPO (default IMAGE_PREFIX's registry and path, then
#   charts: helm install shimkit oci://$CHART_REPO/shimkit --version X.Y.Z
#   installs it).
# The files are checked against sha256sums.txt first. Credentials: the
# Docker config (docker login, helm registry login, oras login).
# PLAIN_HTTP=1 talks HTTP instead of HTTPS to the registry (a test's or
# a cluster's own): anyone on the path could change what is pushed.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${VERSION:?VERSION=vX.Y.Z is required}"
DIST=${DIST:-dist}
GO=${GO:-go}
HELM=${HELM:-bin/helm}
IMAGE_PREFIX=${IMAGE_PREFIX:-}
PLAIN_HTTP=${PLAIN_HTTP:-}
if [[ -z $IMAGE_PREFIX ]]; then
	echo "publish: IMAGE_PREFIX=registry.example/shimkit/ is required: the release's images are named under it (make release IMAGE_PREFIX=...)" >&2
	exit 2
fi
CHART_REPO=${CHART_REPO:-${IMAGE_PREFIX%/}/charts}

if [[ ! -f $DIST/sha256sums.txt ]]; then
	echo "publish: no release in $DIST (make release VERSION=$VERSION IMAGE_PREFIX=$IMAGE_PREFIX DIST=$DIST)" >&2
	exit 1
fi
(cd "$DIST" && sha256sum --quiet -c sha256sums.txt)

plain=() helmPlain=()
if [[ -n $PLAIN_HTTP ]]; then
	plain=(-plain-http -insecure) helmPlain=(--plain-http)
fi
for bin in shimkit-operator shimkit-installer; do
	want=$(grep "^${IMAGE_PREFIX}$bin:$VERSION@" "$DIST/images.txt" || true)
	if [[ -z $want ]]; then
		echo "publish: $DIST/images.txt names no ${IMAGE_PREFIX}$bin:$VERSION: was the release made with IMAGE_PREFIX=$IMAGE_PREFIX?" >&2
		exit 1
	fi
	got=$(CGO_ENABLED=0 $GO run ./hack/imagepush "${plain[@]}" "$DIST/$bin-$VERSION.oci.tar")
	if [[ ${want#*@} != "$got" ]]; then
		echo "publish: pushed ${IMAGE_PREFIX}$bin:$VERSION as $got, the release pins ${want#*@}" >&2
		exit 1
	fi
	echo "pushed $want"
done
"$HELM" push "${helmPlain[@]}" "$DIST/shimkit-${VERSION#v}.tgz" "oci://$CHART_REPO"
echo "helm install shimkit oci://$CHART_REPO/shimkit --version ${VERSION#v} -n shimkit-system --create-namespace"
