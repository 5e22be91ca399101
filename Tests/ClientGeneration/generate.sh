#!/usr/bin/env bash
# HereaboutsKit's generated layer from Docs/openapi.yaml: prepare.py, then
# swift-openapi-generator (built by this directory's package) into OUT_DIR.
#
#   Tests/ClientGeneration/generate.sh PYTHON OUT_DIR          (make client)
#   Tests/ClientGeneration/generate.sh PYTHON OUT_DIR --check  (make client-check: fails when
#                                                                OUT_DIR differs from a fresh run)
set -euo pipefail
python=${1:?a python3 with PyYAML}
out=${2:?the directory of the generated Swift files}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

swift build --package-path "$here" --product swift-openapi-generator >/dev/null
generator=$(swift build --package-path "$here" --show-bin-path)/swift-openapi-generator

work=$(mktemp -d /tmp/hb-client-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$python" "$here/prepare.py" "$root/Docs/openapi.yaml" > "$work/openapi.json"
"$generator" generate --config "$here/openapi-generator-config.yaml" --output-directory "$work/out" \
    "$work/openapi.json" >"$work/generator.log" 2>&1 || { cat "$work/generator.log"; exit 1; }
# Every file imports Foundation's types and the runtime with `public import`, and
# Swift 6 warns where a file uses none of them publicly. Without the upcoming
# InternalImportsByDefault a plain `import` is public anyway: same meaning, no warning.
sed -i -E 's/^(@_spi\(Generated\) )?public import /\1import /' "$work"/out/*.swift
# The generator names its input's path in no file, so a fresh run in a temporary
# directory gives the same bytes as one in place.
if [ "${3:-}" = "--check" ]; then
    if ! diff -r -q "$work/out" "$out"; then
        echo "HereaboutsKit's generated code is stale: Docs/openapi.yaml (or the generator's setup) changed; run 'make client' and commit the result" >&2
        exit 1
    fi
    echo "HereaboutsKit's generated code matches Docs/openapi.yaml"
else
    rm -rf "$out"
    mkdir -p "$out"
    cp "$work"/out/*.swift "$out"/
    echo "generated $(ls "$out" | wc -l) files in $out"
fi
