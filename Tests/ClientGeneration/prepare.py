"""Docs/openapi.yaml as swift-openapi-generator 1.x can read all of it, as JSON.

The document says "this member is an X or null" the OpenAPI 3.1 way,
`oneOf: [X, {type: 'null'}]`. The generator skips a `null` branch and with it the
whole member (swift-openapi-generator issue 513), so a Post would come without its
price or place. Here each such member becomes plain `X` and leaves its object's
`required` list: in Swift an optional, which decodes `null` and a missing member
alike. Nothing else changes.

    python3 prepare.py Docs/openapi.yaml > openapi.json
"""
import json
import sys

import yaml


def is_null(schema):
    return isinstance(schema, dict) and schema.get("type") == "null" and len(schema) == 1


def nullable_branch(schema):
    """The X of `{oneOf: [X, {type: null}]}` (in either order), else None."""
    if not isinstance(schema, dict) or set(schema) != {"oneOf"} or len(schema["oneOf"]) != 2:
        return None
    first, second = schema["oneOf"]
    if is_null(second):
        return first
    if is_null(first):
        return second
    return None


def prepare(node):
    if isinstance(node, list):
        return [prepare(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: prepare(value) for key, value in node.items()}
    properties = node.get("properties")
    if isinstance(properties, dict):
        for name, schema in list(properties.items()):
            branch = nullable_branch(schema)
            if branch is not None:
                properties[name] = branch
                if name in node.get("required", []):
                    node["required"] = [other for other in node["required"] if other != name]
    return node


with open(sys.argv[1]) as source:
    document = yaml.safe_load(source)
json.dump(prepare(document), sys.stdout, indent=1, sort_keys=True)
sys.stdout.write("\n")
