#!/usr/bin/env python3
"""Checks the two listeners' OpenAPI documents for the contract test (Tests/Contract/run.sh).

Each document must be OpenAPI 3.1 (`openapi: 3.1.x`), valid against the OAS 3.1 meta-schema
(openapi-spec-validator, which also resolves every path parameter), and every JSON Schema in it
must be a valid JSON Schema 2020-12 (the dialect of OAS 3.1). The admin listener must serve its own
document: its operations are the /admin/ routes and the public document has none of them.

Prints one line per problem and `<name>: ok (N operations)` per good document; exits 1 on any
problem.

Usage: validate_openapi.py --public public.json --admin admin.json
"""

import argparse
import json
import sys

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from openapi_spec_validator import OpenAPIV31SpecValidator

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def operations(document):
    """Every "METHOD /path" of the document."""
    return [f"{method.upper()} {path}"
            for path, item in (document.get("paths") or {}).items()
            for method in item if method in METHODS]


def schemas(node, where="$"):
    """(json path, schema) for every `schema` member and every components.schemas entry."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{where}.{key}"
            if key == "schema" and isinstance(value, (dict, bool)):
                yield here, value
            if where == "$.components" and key == "schemas" and isinstance(value, dict):
                for name, schema in value.items():
                    yield f"{here}.{name}", schema
            yield from schemas(value, here)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from schemas(value, f"{where}[{index}]")


def check(name, path):
    problems = []
    try:
        with open(path, "rb") as file:
            document = json.loads(file.read())
    except (OSError, ValueError) as error:
        return None, [f"{name}: not a JSON document: {error}"]
    if not isinstance(document, dict):
        return None, [f"{name}: not a JSON object"]
    version = document.get("openapi")
    if not (isinstance(version, str) and version.startswith("3.1.")):
        problems.append(f"{name}: openapi is {version!r}, expected 3.1.x")
    for error in OpenAPIV31SpecValidator(document).iter_errors():
        message = getattr(error, "message", str(error)).splitlines()[0]
        location = "/".join(str(part) for part in getattr(error, "absolute_path", []) or [])
        problems.append(f"{name}: OpenAPI 3.1: {message}" + (f" (at /{location})" if location else ""))
    for where, schema in schemas(document):
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as error:
            problems.append(f"{name}: {where}: not a JSON Schema 2020-12: {error.message}")
    if not operations(document):
        problems.append(f"{name}: no operations")
    return document, problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--public", required=True)
    parser.add_argument("--admin", required=True)
    arguments = parser.parse_args()

    public, problems = check("public openapi.json", arguments.public)
    admin, admin_problems = check("admin openapi.json", arguments.admin)
    problems += admin_problems
    if public is not None and admin is not None:
        public_operations, admin_operations = operations(public), operations(admin)
        leaked = [op for op in public_operations if op.split(" ", 1)[1].startswith("/admin/")]
        if leaked:
            problems.append(f"public openapi.json: describes admin routes: {', '.join(leaked)}")
        if not any(op.split(" ", 1)[1].startswith("/admin/") for op in admin_operations):
            problems.append("admin openapi.json: describes no /admin/ route (not the admin listener's own document)")
        if public == admin:
            problems.append("admin openapi.json: is the public listener's document")
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"public openapi.json: ok, OpenAPI {public['openapi']} ({len(operations(public))} operations)")
    print(f"admin openapi.json: ok, OpenAPI {admin['openapi']} ({len(operations(admin))} operations)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
