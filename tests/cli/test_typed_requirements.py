"""Declared typed requirements (metadata.runtime.requirements): validation and preflight per type."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import capability, check_schema, write

BODY = "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"


def with_requirements(entries: str) -> str:
    return capability(BODY, "metadata:\n  runtime:\n    requirements:\n" + entries)


def validate(cli: Any, work: Path, entries: str) -> list[tuple[int, int, str, str]]:
    write(work / "cap.md", with_requirements(entries))
    doc = cli("--output", "json", "capability", "validate", "cap.md").json()
    return [
        (p["line"], p["column"], p["code"], p["message"])
        for p in doc["capabilities"][0]["problems"]
    ]


def preflight(
    cli: Any, work: Path, entries: str, *args: str, extra: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    write(work / "cap.md", with_requirements(entries))
    result = cli("--output", "json", "capability", "preflight", "cap.md", *args, extra_env=extra)
    doc = result.json()
    check_schema(doc, "preflight")
    return result.code, doc


def check_of(doc: dict[str, Any], rid: str) -> dict[str, Any]:
    return next(c for c in doc["checks"] if c["id"] == rid)


VALID = """      - id: node-runtime
        type: executable
        target: {name: git}
      - id: docs
        type: localPath
        target: {path: ., access: [read, write]}
      - id: self
        type: objectRef
        target: {kind: context, name: work}
        optional: true
      - id: mcp
        type: mcpServer
        target: {serverUrl: "http://127.0.0.1:9/mcp"}
        freshness: {maxAgeSeconds: 60}
      - id: tool
        type: mcpTool
        target: {serverUrl: "https://mcp.example.com/mcp", name: search}
        freshness: {maxAgeSeconds: 60}
      - id: resource
        type: mcpResource
        target: {serverUrl: "https://mcp.example.com/mcp", uri: "file:///a"}
        freshness: {maxAgeSeconds: 60}
      - id: token
        type: credential
        target: {env: DEPLOY_TOKEN}
        freshness: {maxAgeSeconds: 300}
      - id: gpu-runner
        type: runnerCapability
        target: {name: gpu}
        freshness: {maxAgeSeconds: 300}
      - id: notes
        type: contextSource
        target: {path: ./notes.md}
      - id: spec
        type: contextSource
        target: {url: "https://example.com/spec"}
        freshness: {maxAgeSeconds: 600}
      - id: reviewed
        type: executable
        target: {name: git, version: ">=2"}
        origin: inferred
        reviewStatus: accepted
"""


def test_all_nine_types_validate(cli, work: Path) -> None:
    assert validate(cli, work, VALID) == []


MISTAKES = [
    (
        "      - id: x\n        type: contextSource\n        target: {path: a, url: 'https://e.com'}\n        freshness: {maxAgeSeconds: 5}\n",
        (7, 17, "requirement-target", "exactly one of path or url (requirement 1 has both)"),
    ),
    (
        "      - id: x\n        type: contextSource\n        target: {}\n",
        (7, 17, "requirement-target", "has neither"),
    ),
    (
        "      - id: x\n        type: mcpServer\n        target: {serverUrl: 'https://e.com'}\n",
        (6, 15, "requirement-freshness", "needs freshness.maxAgeSeconds"),
    ),
    (
        "      - id: x\n        type: contextSource\n        target: {url: 'https://e.com'}\n",
        (6, 15, "requirement-freshness", "needs freshness.maxAgeSeconds"),
    ),
    (
        "      - id: x\n        type: executable\n        target: {name: git, path: /usr/bin/git}\n",
        (7, 29, "requirement-target", "'path' does not belong to a executable target"),
    ),
    (
        "      - id: x\n        type: localPath\n        target: {path: a, access: []}\n",
        (7, 35, "requirement-target", "non-empty list"),
    ),
    (
        "      - id: x\n        type: localPath\n        target: {path: a, access: [read, read]}\n",
        (7, 42, "requirement-target", "'read' is repeated"),
    ),
    (
        "      - id: x\n        type: localPath\n        target: {path: a, access: [delete]}\n",
        (7, 36, "requirement-target", "read, write or execute"),
    ),
    (
        "      - id: x\n        type: credential\n        target: {env: deploy-token}\n        freshness: {maxAgeSeconds: 5}\n",
        (7, 23, "requirement-target", "not an environment variable name"),
    ),
    (
        "      - id: x\n        type: mcpTool\n        target: {serverUrl: 'ftp://e.com', name: t}\n        freshness: {maxAgeSeconds: 5}\n",
        (7, 29, "requirement-target", "must start with http:// or https://"),
    ),
    (
        "      - id: x\n        type: objectRef\n        target: {kind: secret, name: a}\n",
        (7, 24, "requirement-target", "objectRef kind 'secret'"),
    ),
    (
        "      - id: x\n        type: objectRef\n        target: {kind: context, name: a, generation: 0}\n",
        (7, 54, "requirement-target", "generation must be an integer of at least 1"),
    ),
    (
        "      - id: x\n        type: runnerCapability\n        target: {name: GPU!}\n        freshness: {maxAgeSeconds: 5}\n",
        (7, 24, "requirement-target", "not a valid capability name"),
    ),
    (
        "      - id: x\n        type: executable\n        target: {name: git}\n        freshness: {maxAgeSeconds: 0}\n",
        (8, 36, "requirement-freshness", "at least 1"),
    ),
    (
        "      - id: x\n        type: executable\n        target: {name: git}\n        origin: inferred\n",
        (8, 17, "requirement-review", "no reviewStatus"),
    ),
    (
        "      - id: x\n        type: executable\n        target: {name: git}\n        origin: inferred\n        reviewStatus: maybe\n",
        (9, 23, "requirement-shape", "accepted or needsReview"),
    ),
    (
        "      - id: Bad_Id\n        type: executable\n        target: {name: git}\n",
        (5, 13, "requirement-id", "not a valid name"),
    ),
    (
        "      - id: x\n        type: gadget\n        target: {name: git}\n",
        (6, 15, "requirement-type", "unknown requirement type 'gadget'"),
    ),
    (
        "      - id: x\n        type: executable\n        target: {name: git}\n        optional: maybe\n",
        (8, 19, "requirement-shape", "true or false"),
    ),
    (
        "      - id: x\n        type: executable\n        target: {name: git}\n        extra: 1\n",
        (8, 9, "requirement-key", "unknown key 'extra'"),
    ),
    ("      - id: x\n        type: executable\n", (5, 9, "requirement-missing", "has no 'target'")),
]


@pytest.mark.parametrize(
    ("entries", "expected"), MISTAKES, ids=[m[1][2] + str(i) for i, m in enumerate(MISTAKES)]
)
def test_schema_rules_and_common_mistakes(
    cli, work: Path, entries: str, expected: tuple[int, int, str, str]
) -> None:
    problems = validate(cli, work, entries)
    line, column, code, text = expected
    hits = [p for p in problems if p[2] == code and text in p[3]]
    assert hits, problems
    assert hits[0][:2] == (line, column), hits[0]


def test_duplicate_ids_validate_but_fail_preflight(cli, work: Path) -> None:
    entries = (
        "      - id: dup\n        type: executable\n        target: {name: git}\n"
        "      - id: dup\n        type: executable\n        target: {name: git}\n"
    )
    assert validate(cli, work, entries) == []
    code, doc = preflight(cli, work, entries)
    assert code == 5
    dup = check_of(doc, "duplicate-id:dup")
    assert dup["readiness"] == "False" and "declared 2 times" in dup["reason"]


# -- preflight per type, offline ----------------------------------------------------------------------


def test_executable_offline_and_version_unknown(cli, work: Path) -> None:
    entries = (
        "      - id: git\n        type: executable\n        target: {name: git}\n"
        "      - id: git-version\n        type: executable\n        target: {name: git, version: '>=2'}\n"
        "      - id: missing\n        type: executable\n        target: {name: surely-not-a-binary}\n"
    )
    code, doc = preflight(cli, work, entries)
    assert code == 5
    assert check_of(doc, "git")["readiness"] == "True"
    version = check_of(doc, "git-version")
    assert version["readiness"] == "Unknown" and "not probed offline" in version["reason"]
    assert check_of(doc, "missing")["readiness"] == "False"
    code, doc = preflight(cli, work, entries, "--live")
    assert check_of(doc, "git-version")["readiness"] == "True"
    entries_old = (
        "      - id: v\n        type: executable\n        target: {name: git, version: '>=99'}\n"
    )
    code, doc = preflight(cli, work, entries_old, "--live")
    assert code == 5 and check_of(doc, "v")["readiness"] == "False"


def test_local_path_permissions(cli, work: Path) -> None:
    write(work / "ro.txt", "x")
    (work / "ro.txt").chmod(0o444)
    entries = (
        "      - id: here\n        type: localPath\n        target: {path: ., access: [read, write, execute]}\n"
        "      - id: ro\n        type: localPath\n        target: {path: ro.txt, access: [read]}\n"
        "      - id: ro-write\n        type: localPath\n        target: {path: ro.txt, access: [write]}\n"
        "        optional: true\n"
        "      - id: gone\n        type: localPath\n        target: {path: gone.txt, access: [read]}\n"
    )
    _code, doc = preflight(cli, work, entries)
    assert check_of(doc, "here")["readiness"] == "True"
    assert check_of(doc, "ro")["readiness"] == "True"
    ro_write = check_of(doc, "ro-write")
    import os

    if os.geteuid() != 0:  # root may write anything
        assert ro_write["readiness"] == "False"
    assert check_of(doc, "gone")["readiness"] == "False"
    assert doc["blocking"] == ["gone"]  # the optional one never blocks


def test_credential_is_only_whether_the_variable_is_set(cli, work: Path) -> None:
    entries = "      - id: token\n        type: credential\n        target: {env: DEPLOY_TOKEN}\n        freshness: {maxAgeSeconds: 300}\n"
    code, doc = preflight(cli, work, entries)
    assert code == 5 and check_of(doc, "token")["readiness"] == "False"
    code, doc = preflight(cli, work, entries, extra={"DEPLOY_TOKEN": "s3cr3t-deploy-value"})
    token = check_of(doc, "token")
    assert code == 0 and token["readiness"] == "True"
    assert "s3cr3t-deploy-value" not in str(doc)
    at = datetime.fromisoformat(token["checkedAt"])
    assert datetime.fromisoformat(token["validUntil"]) - at == timedelta(seconds=300)


def test_runner_capability(cli, work: Path) -> None:
    entries = "      - id: gpu\n        type: runnerCapability\n        target: {name: gpu}\n        freshness: {maxAgeSeconds: 60}\n"
    code, doc = preflight(cli, work, entries)
    assert code == 0 and check_of(doc, "gpu")["readiness"] == "Unknown"
    assert "validUntil" not in check_of(doc, "gpu")
    code, doc = preflight(
        cli, work, entries, "--runner-capability", "gpu", "--runner-capability", "arm64"
    )
    assert (
        code == 0
        and check_of(doc, "gpu")["readiness"] == "True"
        and "validUntil" in check_of(doc, "gpu")
    )
    code, doc = preflight(cli, work, entries, "--runner-capability", "arm64")
    assert code == 5 and check_of(doc, "gpu")["readiness"] == "False"


def test_object_refs(cli, work: Path) -> None:
    write(work / "capabilities" / "other.md", capability(BODY))
    cli("context", "set", "work", "organization=acme")
    entries = (
        "      - id: cap\n        type: objectRef\n        target: {kind: capability, name: other}\n"
        "      - id: ctx\n        type: objectRef\n        target: {kind: context, name: work}\n"
        "      - id: pol\n        type: objectRef\n        target: {kind: policy, name: default, generation: 2}\n"
        "      - id: nocap\n        type: objectRef\n        target: {kind: capability, name: nope}\n"
        "      - id: noctx\n        type: objectRef\n        target: {kind: context, name: home}\n"
    )
    code, doc = preflight(cli, work, entries)
    ready = {c["id"]: (c["resolution"], c["readiness"]) for c in doc["checks"]}
    assert ready["cap"] == ("True", "True") and ready["ctx"] == ("True", "True")
    assert (
        ready["pol"] == ("True", "True") and "generation ignored" in check_of(doc, "pol")["reason"]
    )
    assert ready["nocap"] == ("False", "False") and ready["noctx"] == ("False", "False")
    assert code == 5


def test_context_source_path_and_url(cli, work: Path) -> None:
    write(work / "notes.md", "notes")
    entries = (
        "      - id: notes\n        type: contextSource\n        target: {path: notes.md}\n"
        "      - id: spec\n        type: contextSource\n        target: {url: 'https://user:pw@example.invalid/spec?k=v#f'}\n"
        "        freshness: {maxAgeSeconds: 60}\n"
    )
    _code, doc = preflight(cli, work, entries)
    assert check_of(doc, "notes")["readiness"] == "True"
    spec = check_of(doc, "spec")
    assert spec["readiness"] == "Unknown" and "validUntil" not in spec
    assert spec["target"]["url"] == "https://example.invalid/spec"
    assert "user:pw" not in str(doc) and "k=v" not in str(doc) and "#f" not in str(doc)


def test_needs_review_and_optional(cli, work: Path) -> None:
    entries = (
        "      - id: pending\n        type: executable\n        target: {name: surely-not-a-binary}\n"
        "        origin: inferred\n        reviewStatus: needsReview\n"
        "      - id: soft\n        type: executable\n        target: {name: surely-not-a-binary}\n        optional: true\n"
    )
    code, doc = preflight(cli, work, entries)
    pending = check_of(doc, "pending")
    assert (pending["resolution"], pending["readiness"]) == ("Unknown", "Unknown")
    assert check_of(doc, "soft")["readiness"] == "False"
    assert code == 0
    strict = cli("--output", "json", "capability", "preflight", "--strict", "cap.md").json()
    assert strict["blocking"] == ["pending"]


def test_mcp_offline_is_unknown(cli, work: Path) -> None:
    entries = "      - id: mcp\n        type: mcpServer\n        target: {serverUrl: 'http://127.0.0.1:9/mcp'}\n        freshness: {maxAgeSeconds: 60}\n"
    code, doc = preflight(cli, work, entries)
    assert code == 0 and check_of(doc, "mcp")["readiness"] == "Unknown"


def test_typed_requirements_join_the_execute_gate(cli, work: Path) -> None:
    entries = "      - id: token\n        type: credential\n        target: {env: DEPLOY_TOKEN}\n        freshness: {maxAgeSeconds: 300}\n"
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n    args: [write, out.txt, x]\n",
            "metadata:\n  runtime:\n    requirements:\n"
            + entries
            + "  mda:\n    requires:\n      network: none\n",
        ),
    )
    result = cli("capability", "execute", "cap.md")
    assert result.code == 4  # only a credential is missing
    assert not (work / "out.txt").exists()
    doc = cli("--output", "json", "capability", "preflight", "cap.md").json()
    origins = {c["id"]: c["origin"] for c in doc["checks"]}
    assert origins["token"] == "declared" and origins["network"] == "declared"
    assert origins["operation:files write"] == "inferred"
    assert cli("capability", "execute", "cap.md", extra_env={"DEPLOY_TOKEN": "x"}).code == 0


QUALIFIED = """      - id: spec-writer
        type: runnerCapability
        target: {name: huoban.dev/specification}
        freshness: {maxAgeSeconds: 60}
"""


def test_a_qualified_runner_capability_validates(cli, work: Path) -> None:
    assert validate(cli, work, QUALIFIED) == []
    bad = QUALIFIED.replace("huoban.dev/specification", "Huoban.dev/Spec//x")
    [(_, _, code, message)] = validate(cli, work, bad)
    assert (code, message) == (
        "requirement-target",
        "'Huoban.dev/Spec//x' is not a valid capability name",
    )


def test_execute_takes_runner_capabilities_as_preflight_does(cli, work: Path) -> None:
    offered = ("--runner-capability", "huoban.dev/specification")
    code, doc = preflight(cli, work, QUALIFIED, *offered)
    assert code == 0 and check_of(doc, "spec-writer")["readiness"] == "True"
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n    args: [write, out.txt, x]\n",
            "metadata:\n  runtime:\n    requirements:\n" + QUALIFIED,
        ),
    )
    refused = cli("capability", "execute", "cap.md", "--runner-capability", "gpu")
    assert refused.code == 5, refused.stderr
    assert "the runner does not offer huoban.dev/specification" in refused.stderr
    assert not (work / "out.txt").exists()
    strict = cli("capability", "execute", "cap.md", "--strict")
    assert strict.code == 5 and not (work / "out.txt").exists()
    ran = cli("capability", "execute", "cap.md", "--strict", *offered)
    assert ran.code == 0, ran.stderr
    assert (work / "out.txt").exists()
