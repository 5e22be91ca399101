#!/usr/bin/env python3
"""`make run` builds the package as HEREABOUTS_BUILD=stack declares it (Package.swift's last lines), and
`make test` never builds it that way. So this checks, from the manifest alone (seconds, no build), that
the stack-only package is whole: its products are the seven executables the stack runs, and every target
it keeps names only targets it keeps and products of packages it keeps. A failure says what is missing.
"""
import json
import os
import subprocess
import sys

STACK = {"auth-service", "catalogue-service", "geo-service", "favourites-service", "chat-service",
         "edge-service", "here"}


def dump(environment):
    """The manifest as SwiftPM evaluates it; SwiftPM's own complaint (an unknown package, say) ends the check."""
    run = subprocess.run(["swift", "package", "dump-package"], env=environment, capture_output=True, text=True)
    if run.returncode != 0:
        build = environment.get("HEREABOUTS_BUILD", "unset")
        sys.exit(f"Package.swift with HEREABOUTS_BUILD={build} does not load:\n{run.stderr.strip()}")
    return json.loads(run.stdout)


def identity(dependency):
    location = dependency["sourceControl"][0]["location"]["remote"][0]["urlString"]
    name = location.rstrip("/").split("/")[-1].lower()
    return name[:-4] if name.endswith(".git") else name


def problems(package, full):
    found = []
    products = {p["name"] for p in package["products"]}
    if products != STACK:
        found.append(f"products {sorted(products)}, expected {sorted(STACK)}")
    targets = {t["name"] for t in package["targets"]}
    packages = {identity(d) for d in package["dependencies"]}
    for target in package["targets"]:
        if target["type"] == "test":
            found.append(f"test target {target['name']} kept")
        for dependency in target.get("dependencies", []):
            (kind, value), = dependency.items()
            if kind in ("target", "byName") and value[0] not in targets:
                found.append(f"{target['name']} depends on {value[0]}, which is left out")
            if kind == "product" and (value[1] or value[0]).lower() not in packages:
                found.append(f"{target['name']} uses {value[0]} of {value[1]}, a package left out")
    # What the stack leaves out must be something: the check would pass on a manifest that ignores the variable.
    if len(package["targets"]) >= len(full["targets"]):
        found.append(f"{len(package['targets'])} targets kept of {len(full['targets'])}: nothing left out")
    return found


def main():
    plain = {k: v for k, v in os.environ.items() if k != "HEREABOUTS_BUILD"}
    full = dump(plain)
    stack = dump({**plain, "HEREABOUTS_BUILD": "stack"})
    found = problems(stack, full)
    for problem in found:
        print(f"Package.swift with HEREABOUTS_BUILD=stack: {problem}", file=sys.stderr)
    if found:
        return 1
    print(f"Package.swift with HEREABOUTS_BUILD=stack: the seven executables, {len(stack['targets'])} of "
          f"{len(full['targets'])} targets, {len(stack['dependencies'])} of {len(full['dependencies'])} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
