#!/bin/bash
# Runs a `make` target in the background while `make test` builds, and waits for it
# before the checks that need it, so that a new machine installs what those checks use
# (podman, docker-compose, chromium, api-check's, the browser test's and kubernetes-check's
# virtual environments, the offline base image) beside the compiler instead of before or after it
# (Docs/BENCHMARKS.md, the developer's loop).
# It is only a head start: what it could not make, the checks that need it make (or
# fail on) themselves, so its failure is shown but fails nothing here.
#
# usage: beside-the-build.sh start TARGET | wait TARGET
set -u
cd "$(dirname "$0")/.."
dir=.build/beside
mkdir -p "$dir"
action=${1:?start or wait}
target=${2:?a make target}
case "$action" in
start)
    rm -f "$dir/$target.status"
    # Nothing of make's output is held: the job outlives the recipe line that starts it.
    ( make --no-print-directory "$target" >"$dir/$target.log" 2>&1; echo $? >"$dir/$target.status" ) </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/$target.pid"
    echo "▶ $target: started beside the build (its log: $dir/$target.log)"
    ;;
wait)
    pid=$(cat "$dir/$target.pid" 2>/dev/null) || { echo "$target was not started"; exit 0; }
    while kill -0 "$pid" 2>/dev/null; do sleep 1; done
    echo "=== $target (exit $(cat "$dir/$target.status" 2>/dev/null || echo unknown)) ==="
    cat "$dir/$target.log"
    [ "$(cat "$dir/$target.status" 2>/dev/null)" = 0 ] || echo "$target did not finish: the checks that need it install what is missing themselves"
    ;;
*)
    echo "usage: $0 start TARGET | wait TARGET" >&2; exit 2
    ;;
esac
