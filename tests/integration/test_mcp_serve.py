"""`runtime mcp serve`, driven by the official SDK's client over stdio, in both eras.

Each test starts the installed ``runtime mcp serve`` as a child process and talks to
it with :class:`mcp.Client` over stdio (:mod:`tests.mcp_client`): once with the
``initialize`` handshake (``mode="legacy"``) and once as a 2026-07-28 client (no
handshake: ``server/discover``, each request its own envelope). Every call is
checked against what the command line does for the same run (the same document,
the same refusal) and against the audit log: each run and refusal recorded with
origin ``mcp`` and the client's name and version. Confirmation, cancellation and
signals: test_mcp_serve_runs.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import capability, schema, write
from tests.github_double import GitHubDouble

pytest.importorskip("mcp")
import mcp_types as types

from tests.mcp_client import (
    MODES,
    READ_NOTES,
    REPO,
    TOKEN,
    Server,
    audit,
    by_run,
    from_mcp,
    make_server,
    policy,
    same_document,
    text_of,
)


@pytest.fixture
def server(work: Path, env: dict[str, str], tmp_path: Path) -> Server:
    return make_server(work, env, tmp_path)


@pytest.mark.parametrize("mode", MODES)
def test_tools_and_resources_are_listed_from_the_catalog_and_the_policy(
    server: Server, mode: str
) -> None:
    async def scenario() -> tuple[Any, Any, Any, str]:
        async with server.connect(mode) as client:
            tools = (await client.list_tools()).tools
            listed = (await client.list_resources()).resources
            read = await client.read_resource("runtime://specs/capability-spec.md")
            return tools, listed, read, client.protocol_version

    tools, listed, read, version = anyio.run(scenario)
    assert version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    # the catalog's capabilities in name order, then the built-in tools; no execute:
    # the default policy lets capability text be validated and planned only
    assert [t.name for t in tools] == [
        "cleanup.remove",
        "read-notes",
        "write-note",
        "validate",
        "plan",
        "operation",
    ]
    notes = tools[1]
    assert notes.title == "Read the notes"
    assert notes.description == (
        "Read the notes\n\nReads the notes file and gives it back, so that an assistant can "
        "see what the team wrote down."
    )
    assert notes.input_schema == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to read, relative to the project."},
            "unused": {"type": "string", "description": "Not used by any step."},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    assert notes.output_schema == schema("execute")
    hints = {
        t.name: (
            t.annotations.read_only_hint,
            t.annotations.destructive_hint,
            t.annotations.open_world_hint,
        )
        for t in tools
        if t.annotations is not None
    }
    assert hints["read-notes"] == (True, False, False)
    assert hints["write-note"] == (False, False, False)
    assert hints["cleanup.remove"] == (False, True, False)
    assert hints["operation"] == (True, False, True)  # read only, by default
    plan = next(t for t in tools if t.name == "plan")
    assert plan.output_schema == schema("plan")
    assert plan.input_schema["required"] == ["text"]
    operation = next(t for t in tools if t.name == "operation")
    assert operation.input_schema["properties"]["provider"]["enum"] == ["files", "github"]
    # the references, to learn the grammar and the operations
    assert [r.uri for r in listed] == [
        "runtime://specs/capability-spec.md",
        "runtime://specs/files.md",
        "runtime://specs/github.md",
        "runtime://specs/policy.md",
    ]
    (contents,) = read.contents
    specs = Path(__file__).resolve().parents[2] / "specs"
    assert contents.text == (specs / "capability-spec.md").read_text()


@pytest.mark.parametrize("mode", MODES)
def test_what_the_policy_withholds_is_not_listed(server: Server, tmp_path: Path, mode: str) -> None:
    policy(
        server,
        tmp_path,
        "agents:\n  capabilities: [read-*]\n  execute_own_text: true\n  operations: write\n",
    )

    async def scenario() -> list[types.Tool]:
        async with server.connect(mode) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(scenario)
    assert [t.name for t in tools] == ["read-notes", "validate", "plan", "execute", "operation"]
    operation = tools[-1]
    assert operation.annotations is not None
    assert operation.annotations.read_only_hint is False
    assert operation.annotations.destructive_hint is False


@pytest.mark.parametrize("mode", MODES)
def test_a_files_capability_answers_what_the_cli_prints(
    server: Server, cli: Any, home: Path, mode: str
) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def scenario() -> types.CallToolResult:
        async with server.connect(mode) as client:

            async def report(done: float, total: float | None, message: str | None) -> None:
                progress.append((done, total, message))

            return await client.call_tool(
                "read-notes", {"path": "notes.md"}, progress_callback=report
            )

    result = anyio.run(scenario)
    assert result.is_error is False
    doc = result.structured_content
    assert doc is not None
    assert doc["steps"][0]["output"] == "the plan: ship on Friday\n"
    assert json.loads(result.content[-1].text) == doc  # and as text, for older clients
    assert progress == [(0.0, 1.0, "[1/1] files read notes.md"), (1.0, 1.0, "[1/1] files read ok")]
    shown = cli(
        "--output", "json", "capability", "execute", "read-notes", "--input", "path=notes.md"
    )
    assert shown.code == 0
    same_document(doc, shown.json())
    records = audit(home)
    mine = by_run(records, doc["run_id"])
    assert [r["event"] for r in mine] == ["run.start", "step.start", "step", "run.end"]
    from_mcp(mine[0])
    assert mine[0]["capability"] == "capabilities/read-notes.md"
    assert mine[-1]["status"] == "ok"
    theirs = by_run(records, shown.json()["run_id"])
    assert (theirs[0]["origin"], theirs[0]["client"]) == ("cli", None)
    # `audit tail` says who asked, for an assistant's run
    lines = cli("audit", "tail", "-n", "20").stdout.splitlines()
    assert lines[0].split("  ")[2:] == [
        "run.start",
        "capabilities/read-notes.md",
        "1 step",
        "inputs path='notes.md'",
        "by mcp test-assistant 4.5.6",
    ]
    assert "by " not in lines[4]  # the command line's run.start


@pytest.mark.parametrize("mode", MODES)
def test_a_github_capability_against_the_double(server: Server, home: Path, mode: str) -> None:
    write(server.work / "capabilities" / "repo.md", REPO)
    server.options = ("--log-level", "debug")  # every event on stderr: none shows the token
    with GitHubDouble(token=TOKEN) as gh:
        gh.add_org("acme")
        gh.add_repo("acme", "payments-api", description="Payments", language="Python")
        server.env.update(gh.runtime_env())

        async def scenario() -> tuple[types.CallToolResult, types.CallToolResult, list[Any]]:
            async with server.connect(mode) as client:
                tools = (await client.list_tools()).tools
                ok = await client.call_tool("repo", {"repository": "acme/payments-api"})
                missing = await client.call_tool("repo", {"repository": "acme/nothing"})
                return ok, missing, tools

        ok, missing, tools = anyio.run(scenario)
        assert [r.method + " " + r.path for r in gh.requests] == [
            "GET /repos/acme/payments-api",
            "GET /repos/acme/nothing",
        ]
    repo = next(t for t in tools if t.name == "repo")
    assert repo.annotations is not None and repo.annotations.open_world_hint is True
    assert ok.is_error is False
    assert ok.structured_content is not None
    assert ok.structured_content["steps"][0]["data"]["full_name"] == "acme/payments-api"
    assert missing.is_error is True  # a failed step: the run's document, exit 1
    assert missing.structured_content is not None
    assert missing.structured_content["exit_code"] == 1
    assert "exit 1: a step failed" in text_of(missing)
    # the token never leaves: not in a result, not in an event, not in the audit log
    assert "station.entered" in server.said()
    everything = text_of(ok) + text_of(missing) + server.said()
    everything += (home / "audit" / "audit.jsonl").read_text()
    assert TOKEN not in everything
    for result in (ok, missing):
        run = by_run(audit(home), result.structured_content["run_id"])
        from_mcp(run[0])
        assert run[-1]["event"] == "run.end"
        assert run[-1]["status"] == ("ok" if result is ok else "failed")


@pytest.mark.parametrize("mode", MODES)
def test_refusals_are_tool_errors_with_the_cli_document_and_are_recorded(
    server: Server, cli: Any, home: Path, mode: str
) -> None:
    async def scenario() -> dict[str, types.CallToolResult]:
        async with server.connect(mode) as client:
            return {
                # a step the policy refuses: a destroy no allowed_destructive entry allows
                "refused": await client.call_tool("cleanup.remove", {}),
                "missing": await client.call_tool("read-notes", {}),
                "unknown": await client.call_tool("read-notes", {"path": "x", "pth": "y"}),
                "no such tool": await client.call_tool("nothing-here", {}),
            }

    results = anyio.run(scenario)
    expected = {
        "refused": (("capability", "execute", "cleanup/remove"), 3, "policy-refused"),
        "missing": (("capability", "execute", "read-notes"), 2, "missing-input"),
        "unknown": (
            ("capability", "execute", "read-notes", "-i", "path=x", "-i", "pth=y"),
            2,
            "unknown-input",
        ),
    }
    refusals = [r for r in audit(home) if r["event"] == "run.refused"]
    assert len(refusals) == 3  # the unknown tool is no run
    for (what, result), record in zip(list(results.items())[:3], refusals, strict=True):
        args, code, status = expected[what]
        assert result.is_error is True, what
        doc = result.structured_content
        assert doc is not None and doc["exit_code"] == code and doc["error"]["code"] == status
        shown = cli("--output", "json", *args)
        assert shown.code == code
        assert doc == shown.json(), what  # the very refusal the command line gives
        # the summary beside it: the problem, its hint, what the exit code means
        assert doc["error"]["message"] in text_of(result)
        assert f"hint: {doc['error']['hint']}" in text_of(result)
        assert f"exit {code}: " in text_of(result)
        from_mcp(record)
        assert (record["status"], record["exit_code"]) == (status, code)
    assert refusals[0]["rules"] == ["effect destroy (allowed_destructive)"]
    assert (server.work / "notes.md").exists()
    unknown = results["no such tool"]
    assert unknown.is_error is True
    assert unknown.structured_content is not None
    assert unknown.structured_content["error"]["message"] == "no tool named 'nothing-here'"


@pytest.mark.parametrize("mode", MODES)
def test_a_write_operation_is_withheld_by_default(
    server: Server, tmp_path: Path, home: Path, mode: str
) -> None:
    async def calls() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with server.connect(mode) as client:
            read = await client.call_tool(
                "operation", {"provider": "files", "args": ["read", "notes.md"]}
            )
            written = await client.call_tool(
                "operation", {"provider": "files", "args": ["write", "new.txt", "hello"]}
            )
            return read, written

    read, written = anyio.run(calls)
    assert read.is_error is False and read.structured_content is not None
    assert read.structured_content["steps"][0]["output"] == "the plan: ship on Friday\n"
    assert written.is_error is True and written.structured_content is not None
    error = written.structured_content["error"]
    assert written.structured_content["exit_code"] == 3
    assert "agents.operations: read (default)" in error["message"]
    assert "its effect is write" in error["message"]
    assert not (server.work / "new.txt").exists()
    refused = [r for r in audit(home) if r["event"] == "run.refused"]
    assert len(refused) == 1
    from_mcp(refused[0])
    assert refused[0]["rules"] == ["agents.operations: read (default)"]
    assert refused[0]["capability"] == "runtime files"
    # a policy that offers writes, and asks no confirmation, lets it run
    policy(server, tmp_path, "agents:\n  operations: write\n  confirm: []\n")
    _, written = anyio.run(calls)
    assert written.is_error is False
    assert (server.work / "new.txt").read_text() == "hello\n"


@pytest.mark.parametrize("mode", MODES)
def test_capability_text_is_validated_and_planned_not_run(
    server: Server, home: Path, mode: str
) -> None:
    broken = capability("version: v1\nworkflow:\n  - provider: files\n    args: [reed, x]\n")
    writes = capability(
        "version: v1\nworkflow:\n  - provider: files\n    args: [write, out.txt, hi]\n"
    )

    async def scenario() -> dict[str, types.CallToolResult]:
        async with server.connect(mode) as client:
            return {
                "valid": await client.call_tool("validate", {"text": READ_NOTES}),
                "broken": await client.call_tool("validate", {"text": broken}),
                "plan": await client.call_tool(
                    "plan", {"text": READ_NOTES, "inputs": {"path": "notes.md"}}
                ),
                "plan writes": await client.call_tool("plan", {"text": writes}),
                "execute": await client.call_tool("execute", {"text": writes}),
            }

    results = anyio.run(scenario)
    assert results["valid"].is_error is False
    broken_doc = results["broken"].structured_content
    assert results["broken"].is_error is True and broken_doc is not None
    (problem,) = broken_doc["capabilities"][0]["problems"]
    assert (problem["file"], problem["line"], problem["column"]) == ("(text)", 9, 12)
    assert "(text):9:12: error:" in text_of(results["broken"])
    planned = results["plan"].structured_content
    assert planned is not None and planned["ok"] is True
    assert planned["steps"][0]["decision"]["allowed"] is True
    # the assistant's own steps may only read, by default: the plan says so
    writes_plan = results["plan writes"].structured_content
    assert writes_plan is not None and writes_plan["exit_code"] == 3
    assert writes_plan["steps"][0]["decision"]["rule"] == "agents.operations: read (default)"
    # and its text is not executed: there is no such tool
    assert results["execute"].is_error is True
    assert not (server.work / "out.txt").exists()
    assert audit(home) == []  # nothing ran, nothing was refused at run time


@pytest.mark.parametrize("mode", MODES)
def test_stdout_carries_the_protocol_alone(server: Server, tmp_path: Path, mode: str) -> None:
    """What runtime says besides the protocol (a policy warning, a capability it cannot
    offer) is on stderr; the client, reading stdout, sees only messages."""
    policy(server, tmp_path, "allowed_binaries: [python3]\n")
    write(server.work / "capabilities" / "plan.md", capability("version: v1\nworkflow: []\n"))

    async def scenario() -> list[str]:
        async with server.connect(mode) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("read-notes", {"path": "notes.md"})
            assert result.is_error is False
            return names

    names = anyio.run(scenario)
    assert names.count("plan") == 1
    said = server.said()
    assert "warning: allowed_binaries entry 'python3' has no effect" in said
    assert "capability 'plan'" in said and "a built-in tool's name" in said


def test_without_the_sdk_the_server_says_how_to_install_it(
    env: dict[str, str], work: Path, tmp_path: Path
) -> None:
    """The SDK is an optional extra: a Python where it cannot be imported gets a usage
    error naming the extra (exit 2), not a traceback."""
    import subprocess
    import sys

    blocked = write(
        tmp_path / "no-sdk" / "mcp" / "__init__.py", "raise ModuleNotFoundError(name='mcp')\n"
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "runtime", "mcp", "serve"],
        env={**env, "PYTHONPATH": f"{blocked.parent.parent}:{repo}"},
        cwd=work,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert (
        "error: runtime mcp serve needs the MCP SDK, which is not installed (no module 'mcp')"
    ) in done.stderr
    assert "pip install 'runtime-engine[mcp]'" in done.stderr


@pytest.mark.parametrize("mode", MODES)
def test_own_text_runs_where_the_policy_lets_it_within_its_effects(
    server: Server, tmp_path: Path, home: Path, mode: str
) -> None:
    policy(server, tmp_path, "agents:\n  execute_own_text: true\n")
    reads = capability(
        "version: v1\ninputs:\n  path:\n    required: true\nworkflow:\n"
        '  - provider: files\n    args: [read, "${path}"]\n'
    )
    writes = capability(
        "version: v1\nworkflow:\n  - provider: files\n    args: [write, out.txt, hi]\n"
    )

    async def scenario() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with server.connect(mode) as client:
            read = await client.call_tool(
                "execute", {"text": reads, "inputs": {"path": "notes.md"}}
            )
            written = await client.call_tool("execute", {"text": writes})
            return read, written

    read, written = anyio.run(scenario)
    assert read.is_error is False and read.structured_content is not None
    assert read.structured_content["capability"]["path"] == "(text)"
    assert read.structured_content["steps"][0]["output"] == "the plan: ship on Friday\n"
    assert written.is_error is True and written.structured_content is not None
    assert "agents.operations: read" in written.structured_content["error"]["message"]
    assert not (server.work / "out.txt").exists()
    start, refused = [r for r in audit(home) if r["event"] in ("run.start", "run.refused")]
    from_mcp(start)
    from_mcp(refused)
    assert start["capability"] == refused["capability"] == "(text)"
    assert refused["rules"] == ["agents.operations: read (default)"]
