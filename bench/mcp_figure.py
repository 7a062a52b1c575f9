"""Figure 9: a warm `runtime mcp serve` answering a `files read` capability call, side by
side with the same call through the CLI (a process per call).

The server is started once, untimed, and driven by the official SDK's client over
stdio as an assistant drives it (a 2026-07-28 client: each call its own request,
its result checked against the tool's output schema); a call is the client's
whole round trip. The reference is `runtime -o json capability execute` of the
same capability with the same input, a process per call. Both answer the same
document, which is checked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from harness import (
    RUNTIME,
    BenchError,
    Figure,
    Workspace,
    fmt_seconds,
    interleave,
    median,
    run,
    timed,
)

CAPABILITY = """# Read the notes

Reads a notes file.

```runtime
version: v1
inputs:
  path:
    description: The file to read.
    required: true
workflow:
  - provider: files
    args: [read, "${path}"]
```
"""
NOTES = "the plan: ship on Friday\n"
BUDGET = 0.1


def fig_mcp(ws: Workspace, fig: Figure, reps: int) -> list[Figure]:
    try:
        import anyio.from_thread
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client
    except ImportError as exc:
        raise BenchError(
            f"the MCP SDK is not installed ({exc.name}): make .venv/.installed-test"
        ) from None

    work = ws.folder("mcp")
    (work / "capabilities").mkdir()
    (work / "capabilities" / "read-notes.md").write_text(CAPABILITY, encoding="utf-8")
    (work / "notes.md").write_text(NOTES, encoding="utf-8")
    env = ws.env_with_home()
    params = StdioServerParameters(command=RUNTIME, args=["mcp", "serve"], env=env, cwd=str(work))
    arguments = {"path": "notes.md"}
    cli = [
        RUNTIME,
        "--output",
        "json",
        "capability",
        "execute",
        "read-notes",
        "-i",
        "path=notes.md",
    ]
    errlog = (work / "server-stderr.txt").open("w")
    answers: list[Any] = []

    with anyio.from_thread.start_blocking_portal() as portal:
        client = portal.wrap_async_context_manager(
            Client(stdio_client(params, errlog=errlog), mode="2026-07-28")
        )
        with client as connected:
            portal.call(connected.list_tools)  # the client learns the output schema

            def warm_call() -> float:
                start = time.perf_counter()
                result = portal.call(connected.call_tool, "read-notes", arguments)
                elapsed = time.perf_counter() - start
                answers.append(result)
                return elapsed

            variants: dict[str, Callable[[], float]] = {
                "mcp": warm_call,
                "cli": lambda: timed(cli, env=ws.env_with_home(), cwd=work),
            }
            samples = interleave(variants, reps, warmup=list(variants))
    errlog.close()

    problems = _check(answers)
    cli_doc = json.loads(run(cli, env=env, cwd=work).stdout)
    if cli_doc["steps"][0]["output"] != NOTES:
        problems.append("the CLI did not answer the notes")
    fig.measured, fig.reference = median(samples["mcp"]), median(samples["cli"])
    fig.ratio = fig.measured / fig.reference if fig.reference > 0 else None
    fig.ok = fig.ratio is not None and fig.ratio <= BUDGET and not problems
    ordered = sorted(samples["mcp"])
    fig.notes.append(
        f"warm call: median {fmt_seconds(fig.measured)} (min {fmt_seconds(ordered[0])}, "
        f"max {fmt_seconds(ordered[-1])}) over {len(ordered)} calls; a CLI process: "
        f"{fmt_seconds(fig.reference)}"
    )
    fig.notes.extend(problems)
    fig.details = {"samples_s": samples}
    return [fig]


def _check(answers: list[Any]) -> list[str]:
    """Every call answered the document, its output the notes, without error."""
    bad = [
        r
        for r in answers
        if r.is_error
        or r.structured_content is None
        or r.structured_content["steps"][0]["output"] != NOTES
    ]
    return [f"{len(bad)} of {len(answers)} MCP calls did not answer the notes"] if bad else []
