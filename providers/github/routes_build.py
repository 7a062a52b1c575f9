"""Build ``routes.json``: the REST routes GitHub documents, from its OpenAPI descriptions.

    .venv/bin/python -m providers.github.routes_build [OPENAPI_DIR]    (or: make routes)

``OPENAPI_DIR`` is the ``@octokit/openapi`` npm package (default
``tests/npm/node_modules/@octokit/openapi``). The table is the union of the
api.github.com description and the newest GitHub Enterprise Server one
(``generated/ghes-X.Y.json``): for each (method, path template) its
operationId, and the path parameters GitHub marks as spanning several
segments (``x-multi-segment``: a file path, a branch or ref name). Operations
served from another base than the REST API's (``servers`` of their own: the
GHES Manage API) are left out, since ``api`` sends every route to the REST
base. A test fails when the committed table differs from what this makes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

DEFAULT_DIR = Path("tests/npm/node_modules/@octokit/openapi")
TARGET = Path(__file__).with_name("routes.json")
METHODS = ("get", "put", "post", "delete", "patch")


def newest_ghes(generated: Path) -> Path:
    found = []
    for path in generated.glob("ghes-*.json"):
        match = re.fullmatch(r"ghes-(\d+)\.(\d+)\.json", path.name)
        if match:
            found.append(((int(match[1]), int(match[2])), path))
    if not found:
        raise FileNotFoundError(f"no ghes-X.Y.json in {generated}")
    return max(found)[1]


def _routes(document: dict[str, Any]) -> dict[tuple[str, str], list[Any]]:
    shared = document.get("components", {}).get("parameters", {})

    def parameter(node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref", "")
        if ref.startswith("#/components/parameters/"):
            found: dict[str, Any] = shared[ref.rsplit("/", 1)[1]]
            return found
        return node

    out: dict[tuple[str, str], list[Any]] = {}
    for path, item in document["paths"].items():
        for method in METHODS:
            op = item.get(method)
            if op is None or "servers" in op or "servers" in item:
                continue
            multi = sorted(
                p["name"]
                for p in map(parameter, [*item.get("parameters", []), *op.get("parameters", [])])
                if p.get("in") == "path" and p.get("x-multi-segment")
            )
            entry: list[Any] = [method.upper(), path, op["operationId"]]
            if multi:
                entry.append(multi)
            out[(path, method.upper())] = entry
    return out


def build(openapi_dir: Path = DEFAULT_DIR) -> str:
    """The text of ``routes.json`` for the ``@octokit/openapi`` package in ``openapi_dir``."""
    generated = openapi_dir / "generated"
    package = json.loads((openapi_dir / "package.json").read_text(encoding="utf-8"))
    sources = [generated / "api.github.com.json", newest_ghes(generated)]
    table: dict[tuple[str, str], list[Any]] = {}
    for source in sources:
        document = json.loads(source.read_text(encoding="utf-8"))
        for key, entry in _routes(document).items():
            table.setdefault(key, entry)  # api.github.com first: its entry wins
    head = {
        "generator": "python -m providers.github.routes_build",
        "openapi": f"@octokit/openapi {package['version']}",
        "descriptions": [s.stem for s in sources],
        "entry": ["method", "path", "operation_id", "multi-segment parameters (if any)"],
    }
    lines = [json.dumps(table[key], separators=(",", ":")) for key in sorted(table)]
    text = json.dumps(head, separators=(",", ":"))[:-1]
    return text + ',\n"routes":[\n' + ",\n".join(lines) + "\n]}\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = build(Path(args[0]) if args else DEFAULT_DIR)
    TARGET.write_text(text, encoding="utf-8")
    routes = sum(1 for line in text.splitlines() if line.startswith('["'))
    print(f"wrote {TARGET} ({routes} routes, {len(text)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
