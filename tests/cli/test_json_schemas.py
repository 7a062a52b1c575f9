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
    ("capability-new", ["capability", "new", "my-job"]),
    ("capability-spec", ["capability", "spec"]),
    ("capability-spec", ["capability", "spec", "github"]),
    ("policy", ["policy", "show"]),
    ("policy-check", ["policy", "check", "notes"]),
    ("policy-import", ["policy", "import", str(EXAMPLES / "engineering-runtime-policy.yaml")]),
    ("audit", ["audit", "tail"]),
    ("doctor", ["doctor"]),
    ("provider-help", ["files", "--help"]),
    ("provider-help", ["github", "--help"]),
    ("provider-help", ["github", "repo", "list", "--help"]),
    ("provider-help", ["files", "read", "--help"]),
    ("auth-status", ["auth", "status"]),
    ("auth-logout", ["auth", "logout", "github"]),
    ("context", ["context", "set", "work", "organization=acme"]),
    ("context", ["context", "list"]),
    ("context", ["context", "show"]),
    ("validate", ["capability", "validate", "capabilities"]),
    ("plan", ["capability", "plan", "notes", "--input", "folder=f", "--input", "note=n"]),
    ("preflight", ["capability", "preflight", "notes", "--input", "folder=f", "--input", "note=n"]),
    ("execute", ["capability", "execute", "notes", "--input", "folder=f", "--input", "note=n"]),
    ("error", ["capability", "execute", "notes"]),
    ("agent-init", ["agent", "init", "--dry-run"]),
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
    assert names == {schema for schema, _ in CASES} | CHECKED_BELOW


# schemas whose documents need more than a Home to produce (a GitHub host to check a
# token against, a keyring): each has its own test below
CHECKED_BELOW = {"auth-login"}


def test_auth_login_and_logout_match_their_schemas(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from tests.github_double import GitHubDouble
    from tests.memory_keyring import SELECTOR, use_memory_keyring

    use_memory_keyring(monkeypatch)
    token = "rt-schema-token-5c1e9a7d30"
    with GitHubDouble(token=token) as gh:
        env = {"PYTHON_KEYRING_BACKEND": SELECTOR, "GITHUB_API_URL": gh.api_url}
        host = ["--host", gh.host]
        monkeypatch.setattr(sys, "stdin", io.StringIO(token))
        stored = cli("-o", "json", "auth", "login", "github", *host, extra_env=env)
        assert stored.code == 0, stored.stderr
        check_schema(json.loads(stored.stdout), "auth-login")
        # no token on stdin: the environment variable's is checked and nothing stored
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))
        env["RUNTIME_GITHUB_TOKEN"] = token
        checked = cli("-o", "json", "auth", "login", "github", *host, extra_env=env)
        assert checked.code == 0, checked.stderr
        check_schema(json.loads(checked.stdout), "auth-login")
        out = cli("-o", "json", "auth", "logout", "github", *host, extra_env=env)
        assert out.code == 0, out.stderr
        doc = json.loads(out.stdout)
        check_schema(doc, "auth-logout")
        assert doc == {
            "ok": True,
            "host": gh.host,
            "removed": True,
            "still_used": "RUNTIME_GITHUB_TOKEN",
        }
        # the note the text form gives is on stderr under --output json too
        assert "note: RUNTIME_GITHUB_TOKEN is still set in this environment" in out.stderr
