#!/bin/bash
# Builds the image Compose/docker-compose.yml runs (hereabouts:latest) with podman and no
# registry: a base from Debian's mirror by debootstrap (kept, by the package list's hash),
# then the executables of an existing build and the Swift runtime libraries they load.
#
#   Compose/offline/build-image.sh [BUILD_DIR]      (default .build/debug; run as root)
#   Compose/offline/build-image.sh --base-only      (the base alone: `make test` makes it beside the build)
set -euo pipefail
cd "$(dirname "$0")/../.."
base_only=""
[ "${1:-}" = --base-only ] && { base_only=yes; shift; }
bin=${1:-.build/debug}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/Compose/offline/containers.conf}
work=.build/compose-image
products="auth-service catalogue-service geo-service favourites-service chat-service edge-service here"

packages=$(grep -v '^#' Compose/runtime-packages | paste -sd, -)
base="localhost/hereabouts-base:$(printf '%s' "$packages" | sha256sum | cut -c1-12)"
mkdir -p "$work"
if ! podman image exists "$base"; then
    started=$SECONDS
    rm -rf "$work/rootfs"
    debootstrap --variant=minbase --include="$packages" bookworm "$PWD/$work/rootfs" http://deb.debian.org/debian >"$work.debootstrap.log" 2>&1 \
        || { tail -20 "$work.debootstrap.log"; exit 1; }
    tar -C "$work/rootfs" -c . | podman import --quiet - "$base" >/dev/null
    rm -rf "$work/rootfs"
    echo "base image $base made in $((SECONDS - started)) s"
fi
[ -z "$base_only" ] || exit 0

rm -rf "$work/context" && mkdir -p "$work/context/bin" "$work/context/swift"
for product in $products; do cp "$bin/$product" "$work/context/bin/"; done
cp -R "$bin/Hereabouts_Geo.resources" "$bin/Hereabouts_Edge.resources" "$work/context/bin/"
# The first RUNPATH entry is the toolchain's runtime directory; the image gets the
# libraries the executables load from there, at the same place.
runtime=$(readelf -d "$bin/here" | sed -n 's/.*runpath: \[\([^:]*\).*/\1/p')
for product in $products; do ldd "$bin/$product"; done | awk -v dir="$runtime/" 'index($3, dir) == 1 { print $3 }' | sort -u \
    | xargs -r cp -t "$work/context/swift/"
# The image this build replaces: untagged, it would stay behind (1.1 GB a `make test`).
previous=$(podman image inspect --format '{{.Id}}' hereabouts:latest 2>/dev/null || true)
# Docker's image format: podman's own (OCI) keeps no HEALTHCHECK.
podman build --quiet --format docker --build-arg BASE="$base" --build-arg SWIFT_RUNTIME="$runtime" -t hereabouts:latest \
    -f Compose/offline/Containerfile "$work/context" >/dev/null
if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect --format '{{.Id}}' hereabouts:latest)" ]; then
    # Kept when a container still uses it.
    podman image rm "$previous" >/dev/null 2>&1 || true
fi
echo "hereabouts:latest from $bin on $base"
