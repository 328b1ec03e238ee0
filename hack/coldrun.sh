#!/usr/bin/env bash
# CI's run on a machine that has never built shimkit, measured:
#
#   hack/coldrun.sh [-busy] [COMMIT]
#
# clones COMMIT (default HEAD; uncommitted changes are not in it) into a
# new temporary directory and runs `CI=true bash .ci/run` there with empty
# Go module, Go build and shimkit caches of its own (the user's are not
# touched), its output timestamped with the seconds since the start. It
# prints the total, each make step's start, the slowest test packages with
# their share of the go test timeout, and fails when CI fails or a package
# used more than half of the timeout. -busy keeps one core busy with a
# shell loop all along, as another job on a shared CI machine may: in a
# session of its own, since where the kernel groups CPU time by session
# (autogroup) a loop in the run's session gets only a thread's share
# (0.28 cores measured, against 0.94 in its own).
# COLDRUN_DIR (default a new directory under TMPDIR) keeps the log
# (run.log) and the tests' record (tests.json); the caches are removed,
# unless COLDRUN_KEEP=1 keeps them and the clone for a warm run there
# (the commands printed at the end).
# COLDRUN_ACCT=1 turns on the kernel's process accounting (acct's accton;
# root) for the run, into $dir/acct, and prints the CPU time of each make
# step and its busiest commands (hack/acctsplit.py): what a busy core
# takes away from is that CPU time, not the wall time.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
busy=0
if [ "${1:-}" = -busy ]; then busy=1; shift; fi
commit=$(git -C "$repo" rev-parse "${1:-HEAD}")
dir=${COLDRUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/shimkit-coldrun.XXXXXX")}
mkdir -p "$dir"
caches=$(mktemp -d "$dir/caches.XXXXXX")
# acct_off ends the process accounting this script turned on, once.
acct_off() {
	if [ "${acct:-}" = on ]; then
		accton off >/dev/null
		acct=off
	fi
}
cleanup() {
	[ -n "${loop:-}" ] && { kill "$loop" 2>/dev/null || true; } # a loop gone already is no failure
	acct_off
	if [ "${COLDRUN_KEEP:-}" = 1 ]; then
		echo "coldrun: kept; a warm run: cd $caches/src && GOMODCACHE=$GOMODCACHE GOCACHE=$GOCACHE SHIMKIT_CACHE=$SHIMKIT_CACHE CI=true make test"
		return
	fi
	chmod -R u+w "$caches" 2>/dev/null || true # the module cache is read-only
	rm -rf "$caches"
}
trap cleanup EXIT

git clone -q --no-local "$repo" "$caches/src"
git -C "$caches/src" checkout -q "$commit"
export GOMODCACHE=$caches/gomod GOCACHE=$caches/gobuild SHIMKIT_CACHE=$caches/shimkit GOTESTSUM_JSONFILE=$dir/tests.json
if [ $busy = 1 ]; then
	setsid bash -c 'while :; do :; done' &
	loop=$!
fi
if [ "${COLDRUN_ACCT:-}" = 1 ]; then
	: >"$dir/acct"
	accton "$dir/acct" >/dev/null
	acct=on
fi
echo "coldrun: $commit in $caches/src$([ $busy = 1 ] && echo ", one core kept busy (pid $loop)"); log: $dir/run.log"
start=$SECONDS
epoch=$(date +%s)
set +e
(cd "$caches/src" && CI=true bash .ci/run </dev/null 2>&1) |
	while IFS= read -r line; do printf '%5d %s\n' $((SECONDS - start)) "$line"; done >"$dir/run.log"
rc=${PIPESTATUS[0]}
set -e
total=$((SECONDS - start))
acct_off
timeout=$(make -s -C "$caches/src" --no-print-directory -f Makefile -f - print-timeout <<<'print-timeout: ; @echo $(TEST_TIMEOUT)' 2>/dev/null || echo 25m)

echo "coldrun: .ci/run exited $rc after $((total / 60)) m $((total % 60)) s ($total s)"
if [ $busy = 1 ] && [ -r "/proc/$loop/stat" ]; then
	# Its user and system time, in clock ticks: what the loop took of the two cores.
	awk -v t="$total" -v hz="$(getconf CLK_TCK)" '{ s = ($14 + $15) / hz; printf "coldrun: the busy loop had %.0f s of CPU, %.2f cores over the run\n", s, s / t }' "/proc/$loop/stat"
fi
echo "coldrun: make's steps (seconds since the start):"
grep -E '^ *[0-9]+ (bins: (building|built|every)|node-(rootfs|crio-layer): built|test: |DONE )' "$dir/run.log" | sed 's/^/  /' || true
if [ "${COLDRUN_ACCT:-}" = 1 ]; then
	python3 "$repo/hack/acctsplit.py" "$dir/acct" "$dir/run.log" "$epoch" || echo "coldrun: no CPU split of $dir/acct"
fi
[ -s "$dir/tests.json" ] || { echo "coldrun: no test record ($dir/tests.json)"; exit 1; }
python3 - "$timeout" "$dir"/tests*.json <<'PY'
import json, re, sys
timeout, paths = sys.argv[1], sys.argv[2:]
m = re.fullmatch(r'(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?', timeout)
limit = int(m[1] or 0) * 3600 + int(m[2] or 0) * 60 + int(m[3] or 0)
pkgs = {}
for line in (l for p in paths for l in open(p)):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if not e.get('Test') and e.get('Action') in ('pass', 'fail') and 'Elapsed' in e:
        # A package run twice (hack/releasetest) is under the timeout in each.
        pkgs[e['Package']] = max(pkgs.get(e['Package'], (0, '')), (e['Elapsed'], e['Action']))
print(f"coldrun: the slowest test packages (go test -timeout {timeout}):")
over = 0
for pkg, (secs, action) in sorted(pkgs.items(), key=lambda kv: -kv[1][0])[:8]:
    share = secs / limit
    over += share > 0.5
    print(f"  {secs:7.1f} s  {share:4.0%} of the timeout  {action}  {pkg}")
sys.exit(1 if over else 0)
PY
exit "$rc"
