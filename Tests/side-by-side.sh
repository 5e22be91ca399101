#!/bin/bash
# Runs groups of `make` targets at the same time, for `make test`: each argument is one
# group, whose targets run one after another. The checks that start their own stacks
# (api-check's schemathesis, which runs for a fixed time, beside compose-test and then
# console-check) use different ports and data directories, so they do not see each
# other; side by side they take the longest group's time instead of the sum.
#
# Each target's output goes to a log of its own, printed whole when the target ends, so
# the logs do not interleave. A failing target fails the run after every group is done.
#
# usage: side-by-side.sh "api-check" "compose-test console-check"
set -u
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

run_group() {
    local target start status
    for target in $1; do
        start=$(date +%s)
        echo "▶ $target: started"
        make --no-print-directory "$target" >"$logs/$target.log" 2>&1
        status=$?
        # One writer at a time, so two groups' logs never interleave.
        {
            flock 9
            echo "=== $target (exit $status) ==="
            cat "$logs/$target.log"
            echo "⏱ $target: $(( $(date +%s) - start )) s"
        } 9>"$logs/.print"
        [ "$status" -eq 0 ] || return "$status"
    done
}

pids=()
for group in "$@"; do
    run_group "$group" &
    pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
done
exit $failed
