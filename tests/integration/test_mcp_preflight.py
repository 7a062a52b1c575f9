"""`preflight --live` for mcpServer / mcpTool / mcpResource requirements, against MCP servers on loopback."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tests.conftest import capability, check_schema, write
from tests.mcp_servers import Hang, Oversized, Paged, real_mcp_server, serve

BODY = "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"


def entries(url: str, *extra: tuple[str, str, str]) -> str:
    text = (
        f"      - id: server\n        type: mcpServer\n        target: {{serverUrl: '{url}'}}\n"
        "        freshness: {maxAgeSeconds: 120}\n"
    )
    for rid, kind, field in extra:
        key = "name" if kind == "mcpTool" else "uri"
        text += (
            f"      - id: {rid}\n        type: {kind}\n        target: {{serverUrl: '{url}', {key}: '{field}'}}\n"
            "        freshness: {maxAgeSeconds: 120}\n"
        )
    return text


def preflight(
    cli: Any, work: Path, requirements: str, *args: str
) -> tuple[int, dict[str, Any], str]:
    write(
        work / "cap.md",
        capability(BODY, "metadata:\n  runtime:\n    requirements:\n" + requirements),
    )
    result = cli(
        "--output",
        "json",
        "capability",
        "preflight",
        "cap.md",
        *args,
        extra_env={"RUNTIME_MCP_TIMEOUT": "3"},
    )
    doc = result.json()
    check_schema(doc, "preflight")
    return result.code, {c["id"]: c for c in doc["checks"]}, result.stdout + result.stderr


def test_real_mcp_server_tools_and_resources(cli, work: Path) -> None:
    with real_mcp_server() as server:
        reqs = entries(
            server.url,
            ("echo", "mcpTool", "echo"),
            ("missing-tool", "mcpTool", "nope"),
            ("greeting", "mcpResource", "resource://greeting"),
        )
        code, offline, _ = preflight(cli, work, reqs)
        assert {offline[i]["readiness"] for i in ("server", "echo", "greeting")} == {"Unknown"}
        code, checks, _ = preflight(cli, work, reqs, "--live")
        assert checks["server"]["readiness"] == "True"
        assert checks["echo"]["readiness"] == "True"
        assert checks["greeting"]["readiness"] == "True"
        assert checks["missing-tool"]["readiness"] == "False"
        assert code == 5
        stamp = datetime.fromisoformat(checks["echo"]["checkedAt"])
        assert datetime.fromisoformat(checks["echo"]["validUntil"]) - stamp == timedelta(
            seconds=120
        )
        assert server.calls == []  # never a tool call, never a resource read


def test_pagination_is_cut_off_after_twenty_pages(cli, work: Path) -> None:
    with serve(Paged(25)) as server:
        code, checks, _ = preflight(
            cli, work, entries(server.url(), ("late", "mcpTool", "tool-24")), "--live"
        )
        assert checks["late"]["readiness"] == "Unknown"
        assert "first 20 pages" in checks["late"]["reason"]
        assert server.methods().count("tools/list") == 20
        assert code == 0  # Unknown does not block without --strict


def test_oversized_response_and_hanging_server_are_bounded(cli, work: Path) -> None:
    for mode in ("declared", "json", "sse"):
        with serve(Oversized(mode)) as big:
            code, checks, _ = preflight(
                cli, work, entries(big.url(), ("tool", "mcpTool", "x")), "--live"
            )
            assert checks["tool"]["readiness"] == "False" and "1 MiB" in checks["tool"]["reason"], (
                mode
            )
    with serve(Hang()) as hang:
        started = time.monotonic()
        code, checks, _ = preflight(cli, work, entries(hang.url()), "--live")
        assert time.monotonic() - started < 10
        assert (
            checks["server"]["readiness"] == "False"
            and "did not answer" in checks["server"]["reason"]
        )
        assert code == 5


def test_report_keeps_no_url_credentials_query_or_fragment(cli, work: Path) -> None:
    with real_mcp_server() as server:
        url = server.url.replace("http://", "http://agent:hunter2@") + "?token=sekrit#frag"
        _code, checks, text = preflight(
            cli, work, entries(url, ("echo", "mcpTool", "echo")), "--live"
        )
        for secret in ("hunter2", "agent:", "sekrit", "token=", "#frag"):
            assert secret not in text, secret
        assert checks["server"]["target"]["serverUrl"] == server.url.split("?")[0]
