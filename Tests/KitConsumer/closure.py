#!/usr/bin/env python3
"""Fails when a target HereaboutsKit depends on, within this package, is a system
library or carries unsafe flags: SwiftPM refuses such a product in an app that
adds the package by URL, and the KitConsumer target, inside this package, does not show it.

usage: swift package dump-package | closure.py HereaboutsKit
"""
import json
import sys


def main(product):
    package = json.load(sys.stdin)
    targets = {t["name"]: t for t in package["targets"]}
    roots = next(p["targets"] for p in package["products"] if p["name"] == product)
    seen, todo, problems = set(), list(roots), []
    while todo:
        name = todo.pop()
        if name in seen or name not in targets:
            continue  # a product of another package: SwiftPM checks those itself
        seen.add(name)
        target = targets[name]
        if target["type"] == "system":
            problems.append(f"{name} is a system library target")
        for setting in target.get("settings", []):
            if "unsafeFlags" in setting["kind"]:
                problems.append(f"{name} has unsafeFlags {setting['kind']['unsafeFlags']['_0']}")
        for dependency in target["dependencies"]:
            kind, value = next(iter(dependency.items()))
            if kind in ("byName", "target"):
                todo.append(value[0])
    if problems:
        sys.exit(f"product {product}: " + "; ".join(problems))
    print(f"product {product}: targets {sorted(seen)}, no system library, no unsafe flags")


if __name__ == "__main__":
    main(sys.argv[1])
