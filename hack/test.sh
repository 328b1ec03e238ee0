#!/usr/bin/env bash
# The tests of make test, which runs this under hack/reaper with the tools
# and binaries built (GOTESTSUM, TEST_TIMEOUT, TEST_RELEASE, MAKE):
#
#  1. make test-release, the cross build of the release (its linux/arm64
#     images and darwin plugin compile every dependency again), starts
#     beside the tests at normal priority, in a session of its own (ended
#     as a whole). It shares the CPU with them, and has it while they wait.
#     (Niced, where the scheduler groups by session, autogroup, niceness
#     orders only within a group: it changed nothing; where it does not,
#     the build would run after the tests, minutes of waiting.)
#  2. go test runs every package, but for TestCrossRelease.
#  3. The build is waited for outside any test's timeout, then
#     TestCrossRelease checks the release it wrote.
# It exits non-zero when a test or the build failed.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${GOTESTSUM:?}" "${TEST_TIMEOUT:?}" "${TEST_RELEASE:?}"
MAKE=${MAKE:-make}
read -r -a longest <<<"${LONGEST_TESTS:-}"

log=$TEST_RELEASE.log
mkdir -p "$(dirname "$TEST_RELEASE")"
start=$SECONDS
setsid "$MAKE" --no-print-directory test-release >"$log" 2>&1 &
build=$!
echo "test: make test-release runs beside the tests (pid $build, log $log)"

# -p 4: four test binaries at once on two cores, as the real-parts tests
# mostly wait. -ldflags=-w: test binaries link without DWARF.
"$GOTESTSUM" --format testname -- -count=1 -p 4 -ldflags=-w -timeout "$TEST_TIMEOUT" \
	-skip '^TestCrossRelease$' "${longest[@]}" ./...
tests=$?

echo "test: waiting for make test-release ($((SECONDS - start)) s since it began)"
wait "$build"
built=$?
echo "test: make test-release exited $built after $((SECONDS - start)) s"
if [ $built != 0 ]; then
	tail -40 "$log"
	exit 1
fi
GOTESTSUM_JSONFILE=${GOTESTSUM_JSONFILE:+${GOTESTSUM_JSONFILE%.json}-cross.json} SHIMKIT_TEST_RELEASE=$TEST_RELEASE \
	"$GOTESTSUM" --format testname -- -count=1 -ldflags=-w -timeout "$TEST_TIMEOUT" -run '^TestCrossRelease$' ./hack/releasetest
cross=$?
[ $tests = 0 ] && [ $cross = 0 ]
