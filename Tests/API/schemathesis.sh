#!/usr/bin/env bash
# The OpenAPI document against the running edge: openapi-spec-validator on
# Docs/openapi.yaml, then schemathesis generating requests from it against a live
# stack (here up, demo data) with a registered user's bearer token. Fails on any
# 5xx and on any response that does not conform to the document (status, content
# type, headers, schema). Bounded: a few examples per operation and a time budget.
#
#   Tests/API/schemathesis.sh VENV_DIR BIN_DIR
set -euo pipefail
venv=${1:?the virtual environment with schemathesis}
bin=${2:?the directory with here and the services}
examples=${SCHEMATHESIS_EXAMPLES:-10}
budget=${SCHEMATHESIS_SECONDS:-300}
# A failed run prints its seed; SCHEMATHESIS_SEED=<that seed> generates the same cases.
seed_option=()
if [ -n "${SCHEMATHESIS_SEED:-}" ]; then seed_option=(--seed "$SCHEMATHESIS_SEED"); fi

"$venv/bin/openapi-spec-validator" Docs/openapi.yaml

work=$(mktemp -d /tmp/hb-api-XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export HEREABOUTS_DATA_DIR=$work/data XDG_CONFIG_HOME=$work/config HEREABOUTS_BIN_DIR=$bin HEREABOUTS_LOG_LEVEL=warning
export HEREABOUTS_EDGE_LISTEN=127.0.0.1:$port HEREABOUTS_EDGE_RATE_LIMIT=0 HEREABOUTS_EDGE_SERVICE_TIMEOUT=60
for service in AUTH CATALOGUE GEO FAVOURITES CHAT; do
    lower=$(echo "$service" | tr 'A-Z' 'a-z')
    export HEREABOUTS_${service}_ENDPOINT=ipc://$work/$lower.sock HEREABOUTS_${service}_EVENTS=ipc://$work/$lower-events.sock
done
"$bin/here" up --demo >"$work/up.log" 2>&1 &
up=$!
# On a failure, what the gateway and the services logged (restarts, crashes, slow
# requests) goes with schemathesis's report.
cleanup() {
    status=$?
    kill "$up" 2>/dev/null; wait "$up" 2>/dev/null || true
    if [ "$status" -ne 0 ]; then
        for log in "$work/up.log" "$work"/data/logs/*.log; do
            [ -s "$log" ] && { echo "--- $log (last 40 lines)"; tail -n 40 "$log"; }
        done
    fi
    rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 600); do grep -q "apps and browsers" "$work/up.log" && break; sleep 0.2; done
grep -q "apps and browsers" "$work/up.log" || { cat "$work/up.log"; exit 1; }
base=http://127.0.0.1:$port

# A registered user (the demo's posts belong to others), with a post of their own so
# that generated ids sometimes meet a real one.
session=$(curl -sf -X POST "$base/v1/auth/register" -H 'Content-Type: application/json' \
    -d '{"email":"schemathesis@example.org","password":"password1","displayName":"Schema Thesis"}')
token=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])' <<<"$session")
curl -sf -X POST "$base/v1/posts" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"kind":"offer","title":"Schemathesis lamp","lat":52.09,"lon":5.12}' >/dev/null

# Deleting the account or logging out would end the run's token; they are tested by
# the system tests instead.
"$venv/bin/st" run Docs/openapi.yaml --url "$base" -H "Authorization: Bearer $token" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance \
    --phases examples,coverage,fuzzing --max-examples "$examples" --max-time "$budget" --workers 2 \
    --exclude-operation-id deleteAccount --exclude-operation-id logout --exclude-operation-id events \
    --request-timeout 60 "${seed_option[@]}" --suppress-health-check all --warnings off --generation-database none
