#!/bin/bash
# make compose-test: Compose/docker-compose.yml as it is, under podman and podman-compose,
# on the image Compose/offline/build-image.sh makes from an existing build (no registry,
# no second Swift build). Checks, against the published edge from the host: the stack
# comes up and every service reaches every other (`here status` in a container), a
# user registers, posts and finds the post near a named place, only the edge is
# published, the README's flows (ComposeFlowTests), catalogue and a geo replica killed with kill -9 come back with every
# acknowledged write while searches go on, data outlives `down` and `up`, and a backup
# taken in a container restores into the stopped stack. Run as root.
#
#   Compose/offline/compose-test.sh [BUILD_DIR]    (default .build/debug)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export CONTAINERS_CONF=$root/Compose/offline/containers.conf
compose() { (cd "$root/Compose" && podman-compose -p hereabouts-test -f docker-compose.yml "$@" >>"$log" 2>&1); }
log=$root/.build/compose-test.log
: >"$log"
fail() { echo "compose-test: $*" >&2; echo "(the engine's log: $log)" >&2; exit 1; }
edge=http://127.0.0.1:8080
started=$SECONDS

Compose/offline/build-image.sh "${1:-.build/debug}"
[ -f Compose/keys/here.secret ] || "${1:-.build/debug}/here" keys generate Compose/keys --owner 10001 >/dev/null
# Keys made earlier by someone else: the containers' user must read them.
"${1:-.build/debug}/here" keys generate Compose/keys --owner 10001 >/dev/null

cleanup() { compose down -v || true; podman network rm -f hereabouts-test_backend hereabouts-test_public >/dev/null 2>&1 || true; }
trap cleanup EXIT
cleanup

# Until the edge says every service answers it, and from inside every service's
# container `here status` finds every other answering (name look-ups included).
# Prints the rows that are not ok (service and state), for the wait's message.
reaches_all() {
    podman exec "hereabouts-test_$1_1" here status 2>/dev/null \
        | awk 'NR > 1 && $3 != "ok" { printf "%s%s %s", (bad ? ", " : ""), $1, $3; bad = 1 } END { exit bad }'
}
# Counted in seconds, not tries: a try's podman execs take seconds of their own on a
# busy machine. What still waits is told every 15 s, so a slow start says where it is.
ready_seconds=240
ready() {
    local start=$SECONDS told=$SECONDS waiting failing
    while [ $((SECONDS - start)) -lt $ready_seconds ]; do
        waiting=""
        if curl -sf -m 2 "$edge/health/ready" >/dev/null; then
            for service in auth catalogue geo geo-1 favourites chat; do
                if ! failing=$(reaches_all "$service"); then
                    waiting="$service's here status (${failing:-no answer})"
                    break
                fi
            done
            [ -z "$waiting" ] && return 0
        else
            waiting="the edge's /health/ready"
        fi
        if [ $((SECONDS - told)) -ge 15 ]; then
            told=$SECONDS
            echo "still waiting for $waiting ($((SECONDS - start)) s)"
        fi
        sleep 1
    done
    return 1
}
up_started=$SECONDS
compose up -d || fail "podman-compose up failed"
ready || fail "the stack was not ready within $ready_seconds s"
echo "stack ready in $((SECONDS - up_started)) s"
podman exec hereabouts-test_auth_1 here status
# Each runs as the image's user, on a root filesystem it cannot write.
for service in auth catalogue geo geo-1 favourites chat edge; do
    [ "$(podman exec "hereabouts-test_${service}_1" id -u)" = 10001 ] || fail "$service does not run as 10001"
    [ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "hereabouts-test_${service}_1")" = true ] \
        || fail "$service's root filesystem is writable"
done
echo "every container runs as 10001 on a read-only root filesystem"
# No container gets an anonymous volume (the image's VOLUME /data, where nothing else is
# mounted): `down` leaves those behind, one a container, each time the stack is made again.
for service in auth catalogue geo geo-1 favourites chat edge; do
    anonymous=$(podman inspect --format '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{.Destination}}{{"\n"}}{{end}}{{end}}' \
        "hereabouts-test_${service}_1" | awk 'NF && $1 !~ /^hereabouts-test_/ { print $2 }')
    [ -z "$anonymous" ] || fail "$service has an anonymous volume at $anonymous"
done
echo "no container has an anonymous volume"
# Each container's health check as the engine runs it (without systemd, podman runs them
# only when asked): `here probe`, a CMD list without spaces, which every Compose tool passes on whole.
for service in auth catalogue geo geo-1 favourites chat edge; do
    healthy=""
    for _ in $(seq 1 6); do   # a check that times out once on a busy machine is tried again, for 30 s or so
        if podman healthcheck run "hereabouts-test_${service}_1" >/dev/null 2>&1; then healthy=yes; break; fi
        sleep 5
    done
    [ -n "$healthy" ] || fail "$service's health check failed"
done
echo "every health check passes"
[ "$(podman image inspect --format '{{.HealthCheck.Test}}' hereabouts:latest)" = "[CMD here probe]" ] \
    || fail "the image has no HEALTHCHECK"
# A check that can fail: a process that stops answering (stopped by its host PID) fails it.
geo1_pid=$(podman inspect --format '{{.State.Pid}}' hereabouts-test_geo-1_1)
kill -STOP "$geo1_pid"
if podman healthcheck run hereabouts-test_geo-1_1 >/dev/null 2>&1; then kill -CONT "$geo1_pid"; fail "geo-1's health check passes while it is stopped"; fi
kill -CONT "$geo1_pid"
echo "the image's HEALTHCHECK is here probe, and it fails for a process that does not answer"

json() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }
# A request until it succeeds, for 60 s at most, as an app retries (a create with an
# Idempotency-Key, so that it is made once): on some fresh starts a container's name
# look-ups stall for about 35 s while the bridge settles (netavark; see Compose/README.md).
call() {
    local deadline=$((SECONDS + 60)) answer
    while true; do
        answer=$(curl -sf -m 10 -H "Idempotency-Key: compose-test-$1" "${@:2}") && { printf '%s' "$answer"; return 0; }
        [ $SECONDS -lt $deadline ] || return 1
        sleep 1
    done
}
session=$(call register -H 'Content-Type: application/json' -d '{"email":"compose@example.org","password":"password1"}' "$edge/v1/auth/register") \
    || fail "register failed"
token=$(json "['accessToken']" <<<"$session")
post=$(call post -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"kind":"restaurant","title":"Compose Burger","lat":52.0907,"lon":5.1214}' "$edge/v1/posts") || fail "posting failed"
post_id=$(json "['post']['id']" <<<"$post")
found=""
for _ in $(seq 1 300); do
    found=$(curl -sf -m 5 "$edge/v1/search?place=Utrecht&radius=5000&q=burger" | json "['hits'][0]['id']" 2>/dev/null || true)
    [ "$found" = "$post_id" ] && break
    sleep 0.2
done
[ "$found" = "$post_id" ] || fail "the post was not found near Utrecht"
echo "registered, posted $post_id, found it near Utrecht"
# No relay here: auth keeps the confirmation mail on its volume, where here mail finds it.
for _ in $(seq 1 50); do
    podman exec hereabouts-test_auth_1 here mail --to compose@example.org 2>/dev/null | grep -q "/email/verify?token=" && break
    sleep 0.2
done
podman exec hereabouts-test_auth_1 here mail --to compose@example.org | grep -q "http://localhost:8080/email/verify?token=" \
    || fail "no confirmation mail kept on auth's volume"
echo "the confirmation mail is kept on auth's volume (no relay), its link to the published edge"

# Only the edge is published: no service port answers from the host (the same probe
# reaches the edge's).
(exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null || fail "the probe does not reach the edge's port"
for port in 7101 7102 7103 7104 7105 7201 7202 7203 7205 9464; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then fail "port $port is reachable from the host"; fi
done
echo "only the edge is published"

# The README's flows over HTTP and the events WebSocket (Tests/SystemTests/ComposeFlowTests.swift).
HEREABOUTS_COMPOSE_EDGE_PORT=8080 swift test --skip-build --filter ComposeFlowTests >"$root/.build/compose-flows.log" 2>&1 \
    || { tail -30 "$root/.build/compose-flows.log"; fail "the README's flows failed"; }
grep -q 'Test run with 1 test' "$root/.build/compose-flows.log" || fail "the README's flows did not run"
echo "the README's flows: a photo, search near a place, a favourite, chat and a live query over the WebSocket, a trip's calendar"

# Faults. kill -9 of the main process of catalogue's container (by its PID on the host:
# `podman kill` counts as a stop, which `restart: unless-stopped` leaves down): the
# container is restarted and every acknowledged write is there.
pid_of() { podman inspect --format '{{.State.Pid}}' "hereabouts-test_$1_1"; }
restarted() {
    local old=$2
    for _ in $(seq 1 600); do
        local now; now=$(pid_of "$1" 2>/dev/null || echo 0)
        if [ "$now" != 0 ] && [ "$now" != "$old" ]; then return 0; fi
        sleep 0.1
    done
    return 1
}
ids=()
for n in $(seq 1 20); do
    created=$(call "fault-$n" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
        -d "{\"kind\":\"tip\",\"title\":\"Acknowledged $n\",\"lat\":52.09,\"lon\":5.12}" "$edge/v1/posts") || fail "post $n failed"
    ids+=("$(json "['post']['id']" <<<"$created")")
done
old=$(pid_of catalogue)
kill -9 "$old"
restarted catalogue "$old" || fail "catalogue was not restarted after kill -9"
for id in "${ids[@]}"; do
    call "read-$id" "$edge/v1/posts/$id" >/dev/null || fail "post $id, acknowledged before the kill, is gone"
done
echo "catalogue restarted after kill -9 with its ${#ids[@]} acknowledged posts"

# kill -9 of one geo replica while searches go on: every search is answered (the edge
# goes round the replicas), and the replica comes back.
searches=$root/.build/compose-test.searches
: >"$searches"
( end=$((SECONDS + 8)); while [ $SECONDS -lt $end ]; do
      curl -s -o /dev/null -m 30 -w '%{http_code}\n' "$edge/v1/search?lat=52.09&lon=5.12&radius=2000&q=acknowledged" >>"$searches"
      sleep 0.1   # under the edge's rate limit for one address
  done ) &
searcher=$!
sleep 2
old=$(pid_of geo-1)
kill -9 "$old"
restarted geo-1 "$old" || fail "geo-1 was not restarted after kill -9"
wait "$searcher"
answered=$(grep -c '^200$' "$searches" || true)
total=$(wc -l <"$searches")
[ "$answered" = "$total" ] && [ "$total" -gt 0 ] \
    || fail "$((total - answered)) of $total searches failed while geo-1 was killed ($(sort "$searches" | uniq -c | tr '\n' ' '))"
echo "geo-1 restarted after kill -9; $answered of $total searches answered meanwhile"

# Data outlives down and up (the named volumes).
compose down || fail "down failed"
compose up -d || fail "up again failed"
ready || fail "the stack was not ready again within $ready_seconds s"
call read "$edge/v1/posts/$post_id" | grep -q "Compose Burger" || fail "the post is gone after down and up"
call login -H 'Content-Type: application/json' -d '{"login":"compose@example.org","password":"password1"}' "$edge/v1/auth/login" >/dev/null \
    || fail "the account is gone after down and up"
echo "data kept across down and up"

# A backup taken by `here backup` in a container while the stack serves (each service
# copies its file onto the shared backups volume), then, with the stack down, restored
# into each service's volume by `here restore` in a one-off container: what was written
# after the backup is gone, what was before is there.
podman exec hereabouts-test_auth_1 here backup /backups/compose-test >>"$log" 2>&1 || fail "here backup in a container failed"
later=$(call later -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"kind":"tip","title":"After the backup","lat":52.09,"lon":5.12}' "$edge/v1/posts") || fail "posting after the backup failed"
later_id=$(json "['post']['id']" <<<"$later")
compose down || fail "down failed"
for service in auth catalogue geo favourites chat; do
    podman run --rm -v "hereabouts-test_$service-data:/data" -v hereabouts-test_backups:/backups hereabouts:latest \
        here restore /backups/compose-test --only "$service" --data /data >>"$log" 2>&1 || fail "here restore of $service failed"
done
compose up -d || fail "up after the restore failed"
ready || fail "the stack was not ready after the restore"
call restored "$edge/v1/posts/$post_id" | grep -q "Compose Burger" || fail "a post from before the backup is missing after the restore"
status=""
for _ in $(seq 1 60); do   # 404 or 200, past any 503 of a stall
    status=$(curl -s -o /dev/null -w '%{http_code}' -m 10 "$edge/v1/posts/$later_id" || true)
    case $status in 200|404) break ;; esac
    sleep 1
done
[ "$status" = 404 ] || fail "a post made after the backup is still there (HTTP $status)"
echo "here backup in a container, here restore into the stopped stack's volumes"
echo "compose-test passed in $((SECONDS - started)) s"
