"""Every command's --output json document matches its JSON Schema under specs/schemas/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO, check_schema, write

CASES = [
    ("version", ["version"]),
    ("bootstrap", ["bootstrap"]),
    ("capability-list", ["capability", "list"]),
    ("capability-show", ["capability", "show", "notes"]),
    ("dependents", ["capability", "dependents", "github/repositories"]),
    ("policy", ["policy", "show"]),
    ("policy-check", ["policy", "check", "notes"]),
    ("audit", ["audit", "tail"]),
    ("doctor", ["doctor"]),
    ("provider-help", ["files", "--help"]),
    ("provider-help", ["github", "--help"]),
    ("provider-help", ["github", "repo", "list", "--help"]),
    ("provider-help", ["files", "read", "--help"]),
    ("auth-status", ["auth", "status"]),
    ("context", ["context", "set", "work", "organization=acme"]),
    ("context", ["context", "list"]),
    ("context", ["context", "show"]),
    ("validate", ["capability", "validate", "capabilities"]),
    ("plan", ["capability", "plan", "notes", "--input", "folder=f", "--input", "note=n"]),
    ("preflight", ["capability", "preflight", "notes", "--input", "folder=f", "--input", "note=n"]),
    ("execute", ["capability", "execute", "notes", "--input", "folder=f", "--input", "note=n"]),
    ("error", ["capability", "execute", "notes"]),
]


@pytest.mark.parametrize(("schema", "args"), CASES, ids=[" ".join(a) for _, a in CASES])
def test_json_output_matches_its_schema(cli, work: Path, schema: str, args: list[str]) -> None:
    write(work / "capabilities" / "notes.md", (EXAMPLES / "notes-roundtrip.md").read_text())
    write(work / "capabilities" / "audit.md", (EXAMPLES / "repository-audit.md").read_text())
    cli("bootstrap")
    cli("context", "set", "home", "organization=acme")
    result = cli(
        "--output",
        "json",
        *args,
        extra_env={"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"},
    )
    doc = json.loads(result.stdout)  # exactly one document
    check_schema(doc, schema)


def test_every_schema_is_valid_and_used() -> None:
    import jsonschema

    names = {
        p.name.removesuffix(".schema.json")
        for p in (REPO / "specs" / "schemas").glob("*.schema.json")
    }
    for name in names:
        jsonschema.Draft202012Validator.check_schema(
            json.loads((REPO / "specs" / "schemas" / f"{name}.schema.json").read_text())
        )
    assert names == {schema for schema, _ in CASES}
