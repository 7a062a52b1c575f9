"""`runtime mcp serve`: a run the user confirms, one a client cancels, one a signal
ends, in both eras (the SDK's client over stdio, :mod:`tests.mcp_client`).

A write or destroy step the policy asks confirmation for is asked through the
protocol (elicitation; a multi-round-trip ``input_required`` for a 2026-07-28
client) before anything runs, and a declined one refuses the run, recorded. A
cancellation from the client, or a signal to the server, stops the running step's
processes (a scan of /proc finds none left) and the run is recorded as the
command line records an interrupted one.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from tests.adversarial.test_signals import new_marker, processes
from tests.conftest import capability, require_tool, write

mcp = pytest.importorskip("mcp")
import mcp_types as types  # noqa: E402

from tests.mcp_client import (  # noqa: E402
    MODES,
    Server,
    audit,
    by_run,
    from_mcp,
    make_server,
    policy,
    text_of,
)


@pytest.fixture
def server(work: Path, env: dict[str, str], tmp_path: Path) -> Server:
    return make_server(work, env, tmp_path)


@pytest.mark.parametrize("mode", MODES)
def test_a_declined_confirmation_refuses_the_run_and_is_recorded(
    server: Server, home: Path, mode: str
) -> None:
    async def call() -> types.CallToolResult:
        async with server.connect(mode) as client:
            return await client.call_tool("write-note", {"text": "hello"})

    declined = anyio.run(call)
    (question,) = server.asked
    assert "capabilities/write-note.md" in question
    assert "[1/1] files write out.txt hello (write)" in question
    assert declined.is_error is True and declined.structured_content is not None
    error = declined.structured_content["error"]
    assert error["code"] == "confirmation-declined"
    assert declined.structured_content["exit_code"] == 3
    assert error["message"].startswith("the user declined to confirm step 1 (files write)")
    assert not (server.work / "out.txt").exists()
    (record,) = [r for r in audit(home) if r["event"] == "run.refused"]
    from_mcp(record)
    assert record["status"] == "confirmation-declined"
    assert record["rules"] == ["agents.confirm: write, destroy (default)"]
    assert not [r for r in audit(home) if r["event"] == "run.start"]
    # confirmed, it runs
    server.answer = "accept"
    confirmed = anyio.run(call)
    assert confirmed.is_error is False, text_of(confirmed)
    assert (server.work / "out.txt").read_text() == "hello\n"
    assert len(server.asked) == 2
    assert confirmed.structured_content is not None
    from_mcp(by_run(audit(home), confirmed.structured_content["run_id"])[0])


@pytest.mark.parametrize("mode", MODES)
def test_a_client_that_cannot_ask_gets_a_refusal(server: Server, home: Path, mode: str) -> None:
    async def call() -> types.CallToolResult:
        async with server.connect(mode, elicit=False) as client:
            return await client.call_tool("write-note", {"text": "hello"})

    result = anyio.run(call)
    assert result.is_error is True and result.structured_content is not None
    assert result.structured_content["error"]["code"] == "confirmation-declined"
    assert "no elicitation capability" in result.structured_content["error"]["message"]
    assert not (server.work / "out.txt").exists()
    (record,) = audit(home)
    assert record["event"] == "run.refused"
    from_mcp(record)


@pytest.mark.parametrize("mode", MODES)
def test_a_cancelled_long_binary_step_leaves_no_process_and_is_recorded(
    server: Server, tmp_path: Path, home: Path, mode: str
) -> None:
    require_tool("bwrap", "the binary step runs confined")
    marker = new_marker()
    policy(server, tmp_path, "allowed_binaries: [sleep]\n")
    write(
        server.work / "capabilities" / "wait.md",
        capability(f'version: v1\nworkflow:\n  - binary: sleep\n    args: ["{marker}"]\n'),
    )
    server.answer = "accept"
    progress: list[str | None] = []

    def sleeping() -> list[int]:
        return [
            pid
            for pid, argv in processes(f"sleep {marker}").items()
            if os.path.basename(argv[0]) == "sleep"
        ]

    async def scenario() -> types.CallToolResult:
        async with server.connect(mode) as client:

            async def report(done: float, total: float | None, message: str | None) -> None:
                progress.append(message)

            async with anyio.create_task_group() as tg:

                async def wait() -> None:
                    await client.call_tool("wait", {}, progress_callback=report)

                tg.start_soon(wait)
                with anyio.fail_after(30):
                    while not sleeping():
                        await anyio.sleep(0.05)
                tg.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            with anyio.fail_after(30):
                while not [r for r in audit(home) if r["event"] == "run.end"]:
                    await anyio.sleep(0.05)
            # the server goes on serving
            return await client.call_tool("read-notes", {"path": "notes.md"})

    after = anyio.run(scenario)
    assert sleeping() == []  # the step's processes were stopped, none left behind
    assert progress[0] == f"[1/1] sleep {marker}"
    records = audit(home)
    run_id = next(r["run_id"] for r in records if r["event"] == "run.start")
    run = by_run(records, run_id)
    assert [r["event"] for r in run] == ["run.start", "step.start", "step", "run.end"]
    from_mcp(run[0])
    assert run[2]["status"] == "cancelled"
    assert run[2]["error"] == "cancelled by the client; the step's processes were stopped"
    assert (run[3]["status"], run[3]["exit_code"]) == ("cancelled", 130)
    assert after.is_error is False


def server_pids(work: Path) -> list[int]:
    """The `runtime mcp serve` processes serving in ``work``."""
    found = []
    for pid, argv in processes("mcp serve").items():
        try:
            here = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if argv[-2:] == ["mcp", "serve"] and here == os.path.realpath(work):
            found.append(pid)
    return found


@pytest.mark.parametrize("mode", MODES)
def test_a_signal_to_the_server_stops_the_running_step_and_is_recorded(
    server: Server, tmp_path: Path, home: Path, mode: str
) -> None:
    require_tool("bwrap", "the binary step runs confined")
    marker = new_marker()
    policy(server, tmp_path, "allowed_binaries: [sleep]\nagents:\n  confirm: []\n")
    write(
        server.work / "capabilities" / "wait.md",
        capability(f'version: v1\nworkflow:\n  - binary: sleep\n    args: ["{marker}"]\n'),
    )

    def sleeping() -> list[int]:
        return [p for p, argv in processes(f"sleep {marker}").items() if argv[0].endswith("sleep")]

    async def scenario() -> None:
        async with server.connect(mode) as client:

            async def wait() -> None:
                with pytest.raises(mcp.MCPError):  # the connection closes under the call
                    await client.call_tool("wait", {})

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                with anyio.fail_after(30):
                    while not sleeping():
                        await anyio.sleep(0.05)
                (pid,) = server_pids(server.work)
                os.kill(pid, signal.SIGTERM)
                with anyio.fail_after(30):
                    while server_pids(server.work):
                        await anyio.sleep(0.05)

    anyio.run(scenario)
    assert sleeping() == []
    step, end = [r for r in audit(home) if r["event"] in ("step", "run.end")]
    assert step["error"] == "terminated by SIGTERM; the step's processes were stopped"
    assert (end["status"], end["exit_code"]) == ("terminated", 143)
