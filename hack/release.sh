#!/usr/bin/env bash
# Writes a release of shimkit into $DIST (make release VERSION=vX.Y.Z):
#   shimkit-{operator,installer}-$VERSION.oci.tar  the images: each a multi-platform OCI image index
#                                               (IMAGE_PLATFORMS, default linux/amd64 and linux/arm64)
#                                               tagged $VERSION, as an OCI image layout archive
#                                               (make publish, or oras/skopeo/crane, push it)
#   shimkit-{operator,installer}-$VERSION-linux-$ARCH.cdx.json  a CycloneDX SBOM of each platform's image
#   shimkit-$CHART_VERSION.tgz                  the chart: version $CHART_VERSION ($VERSION without its v:
#                                               Helm wants SemVer 2), appVersion $VERSION (the images'
#                                               tag), the images pinned to the indexes' digests (image.digest)
#   images.txt                                  each image as name:tag@digest
#   kubectl-shimkit-$VERSION-linux-amd64        the kubectl plugin (static), and its SBOM (.cdx.json)
#   kubectl-shimkit-$VERSION-{linux,darwin}-{amd64,arm64}.tar.gz  the plugin for each platform, as krew installs it
#   kubectl-shimkit.krew.yaml                   the krew manifest of those archives (RELEASE_URL: where they are
#                                               downloaded from; default the project's release page of $VERSION)
#   release-notes.md                            CHANGELOG.md's section of $VERSION (a pre-release such as
#                                               v1.2.3-rc.1 without one: its Unreleased section), then
#                                               where to install it from (the chart's oci:// reference,
#                                               CHART_REPO as make publish pushes it) and the images' digests
#   sha256sums.txt                              the sha256 of each file above (sha256sum -c reads it)
# Every image (/licenses, label org.opencontainers.image.licenses), plugin
# archive and the chart carry LICENSE (Apache-2.0) and NOTICE; each SBOM
# names the license of its component.
# Environment: VERSION (required, semver with a leading v), DIST (default dist),
# IMAGE_PLATFORMS (default "linux/amd64 linux/arm64"), PLUGIN_PLATFORMS (the
# plugin's archives; default "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"),
# IMAGE_PREFIX (e.g. registry.example/shimkit/: prefixed to both images' names,
# in their tags and in the chart's default repositories; required), GO, HELM,
# CHART_REPO (default IMAGE_PREFIX's registry and path, then charts), CYCLONEDX_GOMOD. Each step is printed with the time since the start: a cold
# build of every platform takes many minutes, a warm one about a minute.
# CROSS_GCFLAGS (tests only, default none) compiles the other platforms'
# binaries with those -gcflags: make test's cross build, whose binaries
# are checked and never run, compiles them without optimisation.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${VERSION:?VERSION=vX.Y.Z is required}"
: "${IMAGE_PREFIX:?IMAGE_PREFIX=registry.example/shimkit/ is required: the registry and path the images are pushed to, which the chart pins}"
DIST=${DIST:-dist}
RELEASE_URL=${RELEASE_URL:-https://github.com/shimkit/shimkit/releases/download/$VERSION}
GO=${GO:-go}
HELM=${HELM:-bin/helm}
CYCLONEDX_GOMOD=${CYCLONEDX_GOMOD:-bin/cyclonedx-gomod}
CHART=charts/shimkit
CHART_REPO=${CHART_REPO:-${IMAGE_PREFIX%/}/charts}
CHART_VERSION=${VERSION#v}
IMAGE_PLATFORMS=${IMAGE_PLATFORMS:-linux/amd64 linux/arm64}
PLUGIN_PLATFORMS=${PLUGIN_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}

# The release notes: the CHANGELOG's section of the version (## [X.Y.Z] or
# ## [vX.Y.Z]); a pre-release without one takes the Unreleased section. A
# release whose section is not written is refused, before anything is
# built (notes, below, are written last).
# changelog_section prints the section whose heading starts with one of
# its arguments.
changelog_section() {
	awk -v heads="$*" '
		BEGIN { n = split(heads, h, " ") }
		/^## \[/ { on = 0; for (i = 1; i <= n; i++) if (index($0, "## " h[i]) == 1) on = 1 }
		on' CHANGELOG.md
}

# Semantic Versioning 2.0.0 with the leading v of Go module tags.
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
if ! [[ $VERSION =~ $semver ]]; then
	echo "release: VERSION=$VERSION: want a semantic version with a leading v, such as v1.2.3 or v1.2.3-rc.1" >&2
	exit 2
fi

section=$(changelog_section "[${VERSION#v}]" "[$VERSION]")
if [[ -z $section && $VERSION == *-* ]]; then
	section=$(changelog_section "[Unreleased]")
fi
if [[ -z $section ]]; then
	echo "release: CHANGELOG.md has no section ## [${VERSION#v}]: write the release's changes there first (a pre-release, $VERSION-rc.1, may use Unreleased)" >&2
	exit 2
fi

# Only the files of a release are replaced: DIST may be any directory.
mkdir -p "$DIST"
rm -f "$DIST"/shimkit-*.tar "$DIST"/shimkit-*.tgz "$DIST"/shimkit-*.cdx.json "$DIST"/kubectl-shimkit-* "$DIST"/sha256sums.txt \
	"$DIST"/release-notes.md "$DIST"/kubectl-shimkit.krew.yaml "$DIST"/images.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS
step() { printf 'release: %4ss  %s\n' "$((SECONDS - started))" "$*"; }

ldflags="-s -w -X github.com/shimkit/shimkit/internal/version.version=$VERSION"
for bin in shimkit-operator shimkit-installer kubectl-shimkit; do
	step "building $bin $VERSION for $($GO env GOOS)/$($GO env GOARCH) (the first build compiles every dependency: minutes)"
	CGO_ENABLED=0 $GO build -trimpath -ldflags "$ldflags" -o "$work/$bin" "./cmd/$bin"
	if ! got=$("$work/$bin" --version) || [[ $got != "$bin $VERSION "* ]]; then
		echo "release: $bin --version says '$got', want $VERSION" >&2
		exit 1
	fi
done

# The images: an index of each image's platforms, with an SBOM of each
# platform's binary; the operator runs as a non-root user, as operator/config
# has it.
declare -A digest
native="$($GO env GOOS)/$($GO env GOARCH)" # the platform the binaries above were built for
# build_for BIN OS ARCH writes $work/OS-ARCH/BIN: this machine's, built and
# checked above, copied; another platform's built.
build_for() {
	local bin=$1 os=$2 arch=$3
	mkdir -p "$work/$os-$arch"
	if [[ $os/$arch == "$native" ]]; then
		cp "$work/$bin" "$work/$os-$arch/$bin"
		return
	fi
	step "building $bin for $os/$arch"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch $GO build -trimpath ${CROSS_GCFLAGS:+-gcflags "$CROSS_GCFLAGS"} -ldflags "$ldflags" -o "$work/$os-$arch/$bin" "./cmd/$bin"
}
for bin in shimkit-operator shimkit-installer; do
	members=()
	for platform in $IMAGE_PLATFORMS; do
		os=${platform%/*} arch=${platform#*/}
		if [[ $os != linux ]]; then
			echo "release: IMAGE_PLATFORMS: $platform: images are for linux" >&2
			exit 2
		fi
		build_for "$bin" "$os" "$arch"
		members+=(-platform "$platform=$work/$os-$arch/$bin")
		# Its packages URLs name the platform (goarch=, goos=): from the environment.
		GOOS=$os GOARCH=$arch "$CYCLONEDX_GOMOD" bin -json -version "$VERSION" -output "$DIST/$bin-$VERSION-$os-$arch.cdx.json" "$work/$os-$arch/$bin"
	done
	user=()
	[[ $bin == shimkit-operator ]] && user=(-user 65532)
	step "writing the image index ${IMAGE_PREFIX}$bin:$VERSION ($IMAGE_PLATFORMS)"
	digest[$bin]=$(CGO_ENABLED=0 $GO run ./hack/imagebuild "${members[@]}" -name "$bin" "${user[@]}" -license Apache-2.0 -legal LICENSE -legal NOTICE \
		-ref "${IMAGE_PREFIX}$bin:$VERSION" -out "$DIST/$bin-$VERSION.oci.tar")
	echo "${IMAGE_PREFIX}$bin:$VERSION@${digest[$bin]}" >>"$DIST/images.txt"
done

# The kubectl plugin, as a plain binary (linux/amd64), and an archive per
# platform with the krew manifest that installs them.
plugin="kubectl-shimkit-$VERSION-linux-amd64"
cp "$work/kubectl-shimkit" "$DIST/$plugin"
read -r -a platforms <<<"$PLUGIN_PLATFORMS"
for platform in "${platforms[@]}"; do
	os=${platform%/*} arch=${platform#*/}
	build_for kubectl-shimkit "$os" "$arch"
	cp LICENSE NOTICE "$work/$os-$arch/"
	tar -C "$work/$os-$arch" --owner=0 --group=0 --mtime=@0 -czf "$DIST/kubectl-shimkit-$VERSION-$os-$arch.tar.gz" kubectl-shimkit LICENSE NOTICE
done
{
	cat <<EOF
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: shimkit
spec:
  version: $VERSION
  homepage: https://github.com/shimkit/shimkit
  shortDescription: See and steer shimkit's rollouts of container runtime shims
  description: |
    kubectl shimkit shows what the shimkit operator sees of a Shim on each
    node (status), what it would do with a spec, a file or a deletion (plan),
    an installer's log (logs), and pauses, resumes or retries a rollout.
  platforms:
EOF
	for platform in "${platforms[@]}"; do
		os=${platform%/*} arch=${platform#*/}
		archive="kubectl-shimkit-$VERSION-$os-$arch.tar.gz"
		cat <<EOF
  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $RELEASE_URL/$archive
    sha256: $(sha256sum "$DIST/$archive" | cut -d' ' -f1)
    files:
    - from: kubectl-shimkit
      to: .
    - from: LICENSE
      to: .
    - from: NOTICE
      to: .
    bin: kubectl-shimkit
EOF
	done
} >"$DIST/kubectl-shimkit.krew.yaml"

# The plugin's SBOM: every module linked into it, read from its build info.
"$CYCLONEDX_GOMOD" bin -json -version "$VERSION" -output "$DIST/$plugin.cdx.json" "$work/kubectl-shimkit"

# The chart: its images' tags default to appVersion, their digests pin the
# release's indexes; its repositories name the images under IMAGE_PREFIX.
step "packaging the chart shimkit $VERSION, its images pinned by digest"
cp -r "$CHART" "$work/shimkit"
cp LICENSE NOTICE "$work/shimkit/"
sed -i -e "/^image:\$/,/^[^ ]/ s|^  digest: \"\"\$|  digest: \"${digest[shimkit-operator]}\"|" \
	-e "/^installer:\$/,/^[^ ]/ s|^    digest: \"\"\$|    digest: \"${digest[shimkit-installer]}\"|" "$work/shimkit/values.yaml"
grep -q "^  digest: \"${digest[shimkit-operator]}\"\$" "$work/shimkit/values.yaml"
grep -q "^    digest: \"${digest[shimkit-installer]}\"\$" "$work/shimkit/values.yaml"
sed -i -e "s|^  repository: shimkit-operator\$|  repository: ${IMAGE_PREFIX}shimkit-operator|" \
	-e "s|^    repository: shimkit-installer\$|    repository: ${IMAGE_PREFIX}shimkit-installer|" "$work/shimkit/values.yaml"
grep -q "repository: ${IMAGE_PREFIX}shimkit-operator\$" "$work/shimkit/values.yaml"
grep -q "repository: ${IMAGE_PREFIX}shimkit-installer\$" "$work/shimkit/values.yaml"
"$HELM" package "$work/shimkit" --version "$CHART_VERSION" --app-version "$VERSION" --destination "$DIST" >/dev/null

# The release notes (section read and checked before the build), their
# links to the project's files at the release's tag, not at main.
{
	echo "# shimkit $VERSION"
	echo
	printf '%s\n' "$section" | tail -n +2 | sed "s|/blob/main/|/blob/$VERSION/|g"
	echo
	echo "## Install"
	echo
	echo '```sh'
	echo "helm install shimkit oci://$CHART_REPO/shimkit --version $CHART_VERSION -n shimkit-system --create-namespace --wait"
	echo '```'
	echo
	echo "The chart pins its images by digest:"
	echo
	sed 's/^/- `/; s/$/`/' "$DIST/images.txt"
} >"$DIST/release-notes.md"

# Each SBOM names its component's license (cyclonedx-gomod detects
# licenses only by downloading every module).
CGO_ENABLED=0 $GO run ./hack/sbomlicense -license Apache-2.0 "$DIST"/*.cdx.json

(cd "$DIST" && sha256sum -- shimkit-*.oci.tar shimkit-*.tgz shimkit-*.cdx.json images.txt kubectl-shimkit-* kubectl-shimkit.krew.yaml release-notes.md >sha256sums.txt)
echo "release $VERSION in $DIST ($((SECONDS - started)) s):"
ls -l "$DIST"
