#!/usr/bin/env python3
"""Where a cold run's CPU went, from BSD process accounting.

    hack/acctsplit.py ACCT_FILE RUN_LOG START_EPOCH

ACCT_FILE is what `accton` recorded over the run (hack/coldrun.sh with
COLDRUN_ACCT=1), RUN_LOG the run's log with the seconds since START_EPOCH
at the head of each line. Each process counts its user and system CPU
time in the make step during which it started (the steps are the log's
"bins: building", "test: make test-release runs" lines); the test
release's processes (the descendants of the pid that line names) are a
step of their own. It prints the CPU seconds of each step, its busiest
commands, and the run's total against its wall time.

Accounting writes a record when a process exits, with its start to the
second; pids are matched to their parents by the time they lived.
"""
import collections
import re
import subprocess
import sys
import time


def records(path):
    out = subprocess.run(['dump-acct', path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = [x.strip() for x in line.split('|')]
        if len(f) < 15:
            continue
        # utime, stime and the elapsed time are in clock ticks (100 a
        # second); the start is local time, to the second.
        start = time.mktime(time.strptime(f[14], '%a %b %d %H:%M:%S %Y'))
        yield dict(comm=f[0], cpu=(float(f[2]) + float(f[3])) / 100, life=float(f[4]) / 100,
                   pid=int(f[9]), ppid=int(f[10]), start=start)


def steps(log):
    """The make steps (name, start second) in the order they began, the
    test release's pid and start, and the second of the log's last line."""
    out, release, t = [('tools and checks', 0)], None, 0
    for line in open(log, errors='replace'):
        m = re.match(r'\s*(\d+) (.*)', line)
        if not m:
            continue
        t, text = int(m[1]), m[2]
        if b := re.match(r'bins: building (.*?) into .*/bin/([^/ ]+) ', text):
            out.append((f'bins: {b[2]}', t))
        elif r := re.match(r'test: make test-release runs beside the tests \(pid (\d+)', text):
            out.append(('tests', t))
            release = (int(r[1]), t)
    return out, release, t


def main(acct, log, epoch):
    recs = list(records(acct))
    for r in recs:
        r['s'] = r['start'] - epoch
        r['e'] = r['s'] + r['life']
    by_pid = collections.defaultdict(list)
    for r in recs:
        by_pid[r['pid']].append(r)

    def parent(r):
        for p in by_pid.get(r['ppid'], []):
            if p['s'] <= r['s'] + 1 and p['e'] >= r['s'] - 1:
                return p
        return None

    def in_release(r, pid, began):
        for _ in range(64):
            if r is None:
                return False
            if r['pid'] == pid and abs(r['s'] - began) < 3:
                return True
            r = parent(r)
        return False

    marks, release, wall = steps(log)
    cpu = collections.defaultdict(collections.Counter)
    for r in recs:
        if r['s'] < -5 or r['s'] > wall:
            continue
        name = 'before the run'
        for step, t in marks:
            if r['s'] >= t - 1:
                name = step
        if release and name == 'tests' and in_release(r, *release):
            name = 'test release (cross build)'
        cpu[name][r['comm']] += r['cpu']
    order = [m[0] for m in marks] + ['test release (cross build)']
    total = sum(sum(c.values()) for c in cpu.values())
    print(f"coldrun: CPU time by step (process accounting): {total:.0f} s in all, {total / 60:.1f} CPU-minutes; "
          f"{total / wall:.2f} cores on average over {wall:.0f} s")
    for name in order:
        c = cpu.get(name)
        if not c:
            continue
        top = ', '.join(f'{k} {v:.0f}' for k, v in c.most_common(5) if v >= 1)
        print(f"  {sum(c.values()):6.0f} s  {name}: {top}")


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
