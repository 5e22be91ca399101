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
# A port below the kernel's ephemeral range, which outgoing connections may take meanwhile.
port=$(python3 -c '
import random, socket
while True:
    port = random.randint(12000, 19999)
    with socket.socket() as s:
        try: s.bind(("127.0.0.1", port))
        except OSError: continue
        print(port); break')
export HEREABOUTS_DATA_DIR=$work/data XDG_CONFIG_HOME=$work/config HEREABOUTS_BIN_DIR=$bin HEREABOUTS_LOG_LEVEL=warning
export HEREABOUTS_EDGE_LISTEN=127.0.0.1:$port HEREABOUTS_EDGE_RATE_LIMIT=0 HEREABOUTS_EDGE_SERVICE_TIMEOUT=60
# One address sends every request here: the per-address budget of new accounts would refuse most registrations.
export HEREABOUTS_AUTH_ACCOUNTS_PER_ADDRESS=0 HEREABOUTS_EDGE_METRICS_LISTEN=off
# Password hashes at scrypt's lowest cost, as in the Swift tests' stacks: the fuzzer registers and logs in
# again and again, and at the standard cost (~0.35 s each) auth's hashing takes CPU from the steps beside it.
export HEREABOUTS_AUTH_PASSWORD_COST=10
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

# The run's user is the demo's operator (so the operators' status is tested too), with
# things of its own that generated requests can meet: a post with an image, an avatar, a
# trip with dates, and a conversation with a buddy. Their ids go into the run's config.
json() { python3 -c 'import json,sys; v=json.load(sys.stdin)
for k in sys.argv[1].split("."): v=v[k]
print(v)' "$1"; }
post() {
    local auth=()
    if [ -n "${3:-}" ]; then auth=(-H "Authorization: Bearer $3"); fi
    curl -sf -X POST "$base$1" "${auth[@]}" -H 'Content-Type: application/json' -d "$2"
}
token=$(post /v1/auth/login '{"login":"operator@demo.hereabouts","password":"hereabouts-demo"}' | json accessToken)
buddy=$(post /v1/auth/register '{"email":"buddy@example.org","password":"password1","displayName":"Buddy"}' | json user.id)
user=$(curl -sf "$base/v1/me" -H "Authorization: Bearer $token" | json user.id)
post_id=$(post /v1/posts '{"kind":"offer","title":"Schemathesis lamp","lat":52.09,"lon":5.12}' "$token" | json post.id)
png=$(python3 -c 'import base64,sys; sys.stdout.buffer.write(base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC"))' > "$work/pixel.png"; echo "$work/pixel.png")
image=$(curl -sf -X POST "$base/v1/posts/$post_id/images" -H "Authorization: Bearer $token" -H 'Content-Type: image/png' --data-binary "@$png" | json image.id)
curl -sf -X PUT "$base/v1/me/avatar" -H "Authorization: Bearer $token" -H 'Content-Type: image/png' --data-binary "@$png" >/dev/null
trip=$(post /v1/trips '{"title":"Schemathesis trip","city":"Köln","countryCode":"DE","start":"2027-05-01","end":"2027-05-03"}' "$token" | json trip.id)
conversation=$(post /v1/messages "{\"to\":\"$buddy\",\"text\":\"Hello\"}" "$token" | json message.conversationId)

# Warnings say where the run tested less than it seems, and are shown; those that
# mean a setup problem fail it. Three stay warnings, as expected: most generated
# bodies break a rule the schema cannot express (validation_mismatch); lookups by
# email are limited to ten a minute per address (rate_limited); and once a generated
# DELETE has removed the post, image or avatar seeded here, the ops on it get 404
# (missing_test_data).
cat > "$work/schemathesis.toml" <<TOML
[warnings]
fail-on = ["missing_auth", "method_not_allowed", "missing_deserializer", "unused_openapi_auth"]

[[operations]]
include-name = ["GET /v1/conversations/{id}/messages", "POST /v1/conversations/{id}/read"]
parameters = { "path.id" = "$conversation" }

[[operations]]
include-name = ["GET /v1/trips/{id}", "GET /v1/trips/{id}/calendar.ics"]
parameters = { "path.id" = "$trip" }

[[operations]]
include-name = ["GET /v1/images/{id}", "DELETE /v1/images/{id}"]
parameters = { "path.id" = "$image" }

[[operations]]
include-name = ["GET /v1/users/{id}/avatar", "GET /v1/users/{id}"]
parameters = { "path.id" = "$user" }

[[operations]]
include-name = ["GET /v1/posts/{id}", "PATCH /v1/posts/{id}", "DELETE /v1/posts/{id}", "POST /v1/posts/{id}/images", "PUT /v1/posts/{id}/rating"]
parameters = { "path.id" = "$post_id" }

[[operations]]
include-name = "GET /v1/countries/{code}"
parameters = { "path.code" = "NL" }

[dictionaries.people]
values = ["$buddy"]

[dictionaries.addresses]
values = ["buddy@example.org"]

[[operations]]
include-name = "POST /v1/messages"
parameters = { "body.to" = { dictionary = "people" } }

[[operations]]
include-name = "POST /v1/trips/{id}/members"
parameters = { "path.id" = "$trip", "body.email" = { dictionary = "addresses" } }
TOML

# Deleting the account, logging out or leaving the trip would end what the run
# stands on; they are tested by the system tests instead.
"$venv/bin/st" --config-file "$work/schemathesis.toml" run Docs/openapi.yaml --url "$base" -H "Authorization: Bearer $token" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance \
    --phases examples,coverage,fuzzing --max-examples "$examples" --max-time "$budget" --workers 2 \
    --exclude-operation-id deleteAccount --exclude-operation-id logout --exclude-operation-id events \
    --exclude-operation-id leaveTrip \
    --request-timeout 60 "${seed_option[@]}" --suppress-health-check all --generation-database none
