#!/bin/bash
# Runs `swift test --skip-build` for `make test`. A failing test fails the run. When the
# test process itself dies of a signal, the run is repeated once, and the crashed
# thread's backtrace is printed again at the end, where a CI log's tail shows it. A
# second crash fails the run. (Three CI runs crashed in Foundation's `Process.run()`,
# which over-reads /proc/self/fd's entries with ~1,360 descriptors open; the tests
# spawn their children with `Spawn` since, and no other crash has been seen.)
set -u
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for attempt in 1 2; do
    swift test --skip-build 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    [ "$status" -eq 0 ] && exit 0
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
