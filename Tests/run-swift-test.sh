#!/bin/bash
# Runs `swift test --skip-build` for `make test`. A failing test fails the run. When the
# test process itself dies of a signal, the run is repeated once, and the crashed
# thread's backtrace is printed again at the end, where a CI log's tail shows it. A
# second crash fails the run. (Three CI runs crashed in Foundation's `Process.run()`,
# which over-reads /proc/self/fd's entries with ~1,360 descriptors open; the tests
# spawn their children with `Spawn` since, and no other crash has been seen.)
#
# A run that has not ended after SWIFT_TEST_MINUTES (default 30; a whole run takes 5-8
# here) is stopped and fails, naming the tests that started and did not end: a test
# waiting for ever would otherwise hold CI until its own limit, saying nothing. The
# output is line-buffered (stdbuf) so that the log holds every line written before then.
#
# Every process of an attempt carries HEREABOUTS_TEST_RUN: the tests hand their environment
# to what they start, and `here up` to its services. timeout signals its own process group,
# but swift-test starts the test process in a group of its own, and the tests start their
# services in groups of their own, so a stopped run left the test process going on with its
# tests, and a crashed one left its services: whatever carries the mark when an attempt
# ends is stopped (SIGTERM, then SIGKILL), before a retry and before the script exits.
set -u
log=$(mktemp)
run=$$-$RANDOM
marked() { grep -lzx "HEREABOUTS_TEST_RUN=$run" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3; }
stop_leftovers() {
    local pids
    pids=$(marked)
    [ -n "$pids" ] || return 0
    echo "=== swift test: stopping the $(wc -w <<<"$pids") processes the run left behind ==="
    kill -TERM $pids 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        sleep 0.5
        pids=$(marked)
        [ -n "$pids" ] || return 0
    done
    kill -KILL $pids 2>/dev/null
}
trap 'stop_leftovers; rm -f "$log"' EXIT
minutes=${SWIFT_TEST_MINUTES:-30}
for attempt in 1 2; do
    HEREABOUTS_TEST_RUN=$run timeout --kill-after=10 "${minutes}m" stdbuf -oL -eL swift test --skip-build 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    stop_leftovers
    [ "$status" -eq 0 ] && exit 0
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        echo "=== swift test: stopped after $minutes minutes; started and not ended: ==="
        python3 - "$log" <<'PY'
import re, sys
started, ended = [], set()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    if m := re.search(r'Test "(.*)" started\.', line):
        started.append(m.group(1))
    elif m := re.search(r'Test "(.*)" (passed|failed|skipped)', line):
        ended.add(m.group(1))
for name in started:
    if name not in ended:
        print("  " + name)
PY
        exit 1
    fi
    if ! grep -q "exited with unexpected signal code" "$log"; then
        exit "$status"
    fi
    mkdir -p .build
    cp "$log" ".build/swift-test-crash-$attempt.log"
    echo "=== swift test: the test process crashed (attempt $attempt of 2); full log in .build/swift-test-crash-$attempt.log ==="
    grep -m1 -E "^\*\*\* (Program crashed|Signal)" "$log"
    grep -A 30 -E "^Thread [0-9]+.* crashed:" "$log" | head -40
done
exit 1
