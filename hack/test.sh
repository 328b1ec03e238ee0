#!/usr/bin/env bash
# The steps of make test, which runs this under hack/reaper (GOTESTSUM,
# TEST_TIMEOUT, TEST_RELEASE, MAKE):
#
#  1. make bins (the node binaries and root filesystem: on a fresh machine
#     the longest step) starts at once, beside the tools and the checks.
#  2. make test-checks builds the tools, then checks the chart and the
#     docs: a failure there stops everything in seconds.
#  3. make test-release, the cross build of the release (its linux/arm64
#     images and darwin plugin compile every dependency again), starts
#     once the checks pass: while make bins still compiles, it takes its
#     share of the CPU; the tests start at its lowest priority.
#  4. go test runs every package, but for TestCrossRelease, once bins are
#     built.
#  5. The cross build, raised to normal priority, is waited for outside any
#     test's timeout, then TestCrossRelease checks the release it wrote.
# It exits non-zero when a check, a build or a test failed.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${GOTESTSUM:?}" "${TEST_TIMEOUT:?}" "${TEST_RELEASE:?}"
MAKE=${MAKE:-make}
read -r -a longest <<<"${LONGEST_TESTS:-}"
start=$SECONDS

# Each build in its own session, so that it can be stopped as a whole.
setsid "$MAKE" --no-print-directory bins &
bins=$!
stop() {
	local g
	for g in "$@"; do kill -TERM -- "-$g" 2>/dev/null; done
	wait
}
if ! "$MAKE" --no-print-directory test-checks; then
	echo "test: the checks failed (above); stopping make bins" >&2
	stop "$bins"
	exit 1
fi

log=$TEST_RELEASE.log
mkdir -p "$(dirname "$TEST_RELEASE")"
setsid "$MAKE" --no-print-directory test-release >"$log" 2>&1 &
build=$!
echo "test: make test-release runs beside make bins, then beside the tests at the lowest priority (pid $build, log $log)"
# priority N sets the cross build's niceness. Its session is its own
# scheduling group (autogroup): the group's niceness is what weighs it
# against the tests', a process's niceness only within the group.
priority() {
	renice -n "$1" -g "$build" >/dev/null 2>&1
	[ -w "/proc/$build/autogroup" ] && echo "$1" >"/proc/$build/autogroup" 2>/dev/null
	return 0
}

if ! wait "$bins"; then
	echo "test: make bins failed (above)" >&2
	stop "$build"
	exit 1
fi
echo "test: make bins done, $((SECONDS - start)) s since make test began"
priority 19

# -p 4: four test binaries at once on two cores, as the real-parts tests
# mostly wait. -ldflags=-w: test binaries link without DWARF.
"$GOTESTSUM" --format testname -- -count=1 -p 4 -ldflags=-w -timeout "$TEST_TIMEOUT" \
	-skip '^TestCrossRelease$' "${longest[@]}" ./...
tests=$?

priority 0
echo "test: waiting for make test-release ($((SECONDS - start)) s since make test began)"
wait "$build"
built=$?
echo "test: make test-release exited $built, $((SECONDS - start)) s since make test began"
if [ $built != 0 ]; then
	tail -40 "$log"
	exit 1
fi
GOTESTSUM_JSONFILE=${GOTESTSUM_JSONFILE:+${GOTESTSUM_JSONFILE%.json}-cross.json} SHIMKIT_TEST_RELEASE=$TEST_RELEASE \
	"$GOTESTSUM" --format testname -- -count=1 -ldflags=-w -timeout "$TEST_TIMEOUT" -run '^TestCrossRelease$' ./hack/releasetest
cross=$?
[ $tests = 0 ] && [ $cross = 0 ]
