#!/usr/bin/env bash
# The container image must build with the Swift the project is built and tested with: the
# Dockerfile's `FROM swift:X.Y[.Z]-…` against `swift --version` here. No container engine is
# needed (none is on CI's machine); a mismatch fails `make test` and says both.
set -euo pipefail
dockerfile="${1:-Compose/Dockerfile}"
image=$(sed -n 's/^FROM swift:\([0-9][0-9.]*\)-.*/\1/p' "$dockerfile" | head -n 1)
toolchain=$(swift --version 2>/dev/null | sed -n 's/.*Swift version \([0-9][0-9.]*\).*/\1/p' | head -n 1)
if [ -z "$image" ] || [ -z "$toolchain" ]; then
    echo "cannot read the Swift version of $dockerfile ('${image}') or of the toolchain ('${toolchain}')" >&2
    exit 1
fi
# The image tag may name X.Y or X.Y.Z: it must be the toolchain's version, as far as it goes.
if [ "$image" != "$toolchain" ] && [ "${toolchain#"$image".}" = "$toolchain" ]; then
    echo "$dockerfile builds with swift:$image, but this project is built and tested with Swift $toolchain: change its FROM line" >&2
    exit 1
fi
echo "$dockerfile builds with swift:$image, as tested (Swift $toolchain)"
