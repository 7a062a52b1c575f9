"""Driving `runtime mcp serve` from the tests: the official SDK's client over stdio.

:class:`Server` starts the installed ``runtime mcp serve`` as a child process in a
test's working folder and connects :class:`mcp.Client` to it through
:func:`mcp.client.stdio.stdio_client`, with the ``initialize`` handshake
(``mode="legacy"``) or as a 2026-07-28 client; it answers the confirmations the
server asks for (elicitation) as the test says, and keeps the server's stderr.
The catalog of the tests and the checks of the audit log are here too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import RUNTIME_BIN, capability, write

MODES = ["legacy", "2026-07-28"]
CLIENT = {"name": "test-assistant", "version": "4.5.6"}
TOKEN = "ghp_" + "Mcp5ecret" * 4 + "x"

READ_NOTES = """---
description: Reads a file of notes
---

# Read the notes

Reads the notes file and gives it back, so that an assistant can see what
the team wrote down.

```runtime
version: v1
inputs:
  path:
    description: The file to read, relative to the project.
    required: true
  unused:
    description: Not used by any step.
workflow:
  - provider: files
    args: [read, "${path}"]
```
"""

WRITE_NOTE = capability(
    "version: v1\ninputs:\n  text:\n    description: What to write.\n    required: true\n"
    'workflow:\n  - provider: files\n    args: [write, out.txt, "${text}"]\n',
    title="Write a note",
)

REMOVE = capability(
    "version: v1\nworkflow:\n  - provider: files\n    args: [read, notes.md]\n"
    "  - provider: files\n    args: [delete, notes.md]\n",
    title="Remove the notes",
)

REPO = capability(
    "version: v1\ninputs:\n  repository:\n    description: owner/name\n    required: true\n"
    'workflow:\n  - provider: github\n    args: [repo, view, "${repository}"]\n',
    title="View a repository",
)


def audit(home: Path) -> list[dict[str, Any]]:
    path = home / "audit" / "audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def by_run(records: list[dict[str, Any]], run_id: str) -> list[dict[str, Any]]:
    return [r for r in records if r.get("run_id") == run_id]


def from_mcp(record: dict[str, Any]) -> None:
    assert record["origin"] == "mcp", record
    assert record["client"] == CLIENT, record


@dataclass
class Server:
    """How the tests start `runtime mcp serve`: where, with what, what it said on stderr."""

    work: Path
    env: dict[str, str]
    stderr: Path
    answer: str = "decline"  # what the user answers a confirmation
    asked: list[str] = field(default_factory=list)
    options: tuple[str, ...] = ()  # runtime's own, before `mcp serve`

    def elicitation(self) -> Callable[..., Any]:
        async def answer(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            self.asked.append(params.message)
            if self.answer == "accept":
                return types.ElicitResult(action="accept", content={"confirm": True})
            return types.ElicitResult(action="decline")

        return answer

    @asynccontextmanager
    async def connect(self, mode: str, *, elicit: bool = True) -> AsyncIterator[Client]:
        params = StdioServerParameters(
            command=str(RUNTIME_BIN),
            args=[*self.options, "mcp", "serve"],
            env=self.env,
            cwd=str(self.work),
        )
        with self.stderr.open("a") as errlog:
            async with Client(
                stdio_client(params, errlog=errlog),
                mode=mode,
                client_info=types.Implementation(**CLIENT),
                elicitation_callback=self.elicitation() if elicit else None,
            ) as client:
                yield client

    def said(self) -> str:
        return self.stderr.read_text() if self.stderr.exists() else ""


def make_server(work: Path, env: dict[str, str], tmp_path: Path) -> Server:
    """The server of a test: its catalog (three capabilities) and a notes file in ``work``."""
    write(work / "capabilities" / "read-notes.md", READ_NOTES)
    write(work / "capabilities" / "write-note.md", WRITE_NOTE)
    write(work / "capabilities" / "cleanup" / "remove.md", REMOVE)
    write(work / "notes.md", "the plan: ship on Friday\n")
    return Server(work, dict(env), tmp_path / "server-stderr.txt")


def policy(server: Server, tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "policy.yaml", "version: v1\n" + text)
    path.chmod(0o600)
    server.env["RUNTIME_POLICY_FILE"] = str(path)


def same_document(mcp_doc: dict[str, Any], cli_doc: dict[str, Any]) -> None:
    """The two documents of one run, but for what differs between any two runs."""

    def plain(doc: dict[str, Any]) -> dict[str, Any]:
        doc = json.loads(json.dumps(doc))
        doc.pop("run_id", None)
        for step in doc.get("steps", []):
            step.pop("duration_ms", None)
        return doc

    assert plain(mcp_doc) == plain(cli_doc)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
