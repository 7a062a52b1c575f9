"""`preflight --live` for mcpServer / mcpTool / mcpResource requirements, through the CLI.

A real server built with the official ``mcp`` SDK checks interoperability; the
stdlib doubles of ``tests/mcp_servers.py`` check the bounds (pages, bytes, one
deadline), TLS, what a failure reason may show, and that nothing but discovery
is asked for. The SDK itself is an optional extra: without it a live check is
Unknown and says how to install it, and commands without ``--live`` never
import it.
"""

from __future__ import annotations

import base64
import gc
import gzip
import json
import subprocess
import sys
import time
import tracemalloc
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import capability, check_schema, write
from tests.github_double.tls import create_certificates
from tests.mcp_servers import (
    SECRET,
    BadServerInfo,
    Drip,
    Hang,
    HttpError,
    Malformed,
    MiB,
    Oversized,
    Paged,
    RpcError,
    Scenario,
    SseFraming,
    free_port,
    real_mcp_server,
    serve,
)

BODY = "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"
READ_ONLY = {"initialize", "notifications/initialized", "tools/list", "resources/list", "GET"}


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


def write_cap(work: Path, requirements: str) -> None:
    write(
        work / "cap.md",
        capability(BODY, "metadata:\n  runtime:\n    requirements:\n" + requirements),
    )


def preflight(
    cli: Any, work: Path, requirements: str, *args: str, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], str]:
    """Exit code, checks by id, and everything printed (stdout and stderr)."""
    write_cap(work, requirements)
    result = cli(
        "--output",
        "json",
        "capability",
        "preflight",
        "cap.md",
        *args,
        extra_env={"RUNTIME_MCP_TIMEOUT": "5", **(env or {})},
    )
    doc = result.json()
    check_schema(doc, "preflight")
    assert "Traceback" not in result.stderr, result.stderr
    return result.code, {c["id"]: c for c in doc["checks"]}, result.stdout + result.stderr


# ---------------------------------------------------------------------------
# The official SDK's server


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
def test_real_mcp_server_tools_and_resources(cli, work: Path, json_response: bool) -> None:
    with real_mcp_server(json_response=json_response) as server:
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
        assert checks["missing-tool"]["reason"] == f"{server.url} does not list the tool nope"
        assert code == 5
        stamp = datetime.fromisoformat(checks["echo"]["checkedAt"])
        assert datetime.fromisoformat(checks["echo"]["validUntil"]) - stamp == timedelta(
            seconds=120
        )
        assert server.calls == []  # never a tool call, never a resource read


# ---------------------------------------------------------------------------
# Pages


def test_pagination_is_cut_off_after_twenty_pages(cli, work: Path) -> None:
    with serve(Paged(25)) as server:
        code, checks, _ = preflight(
            cli, work, entries(server.url(), ("late", "mcpTool", "tool-24")), "--live"
        )
        assert checks["late"]["readiness"] == "Unknown"
        assert "first 20 pages" in checks["late"]["reason"]
        listings = [s.message for s in server.seen if s.verb == "POST" and "id" in s.message]
        pages = [m for m in listings if m["method"] == "tools/list"]
        assert len(pages) == 20
        assert "cursor" not in (pages[0].get("params") or {})
        assert pages[1]["params"]["cursor"] == "cursor-1"
        assert set(server.methods()) <= READ_ONLY
        assert code == 0  # Unknown does not block without --strict
        code, _, _ = preflight(
            cli, work, entries(server.url(), ("late", "mcpTool", "tool-24")), "--live", "--strict"
        )
        assert code == 5


def test_listing_stops_at_the_page_that_names_it_and_reads_short_lists_to_the_end(
    cli, work: Path
) -> None:
    with serve(Paged(25)) as server:
        _, checks, _ = preflight(
            cli, work, entries(server.url(), ("early", "mcpTool", "tool-3")), "--live"
        )
        assert checks["early"]["readiness"] == "True"
        assert server.methods().count("tools/list") == 4
    with serve(Paged(5)) as server:
        _, checks, _ = preflight(
            cli, work, entries(server.url(), ("r", "mcpResource", "file:///r/9")), "--live"
        )
        assert checks["r"]["readiness"] == "False"
        assert server.methods().count("resources/list") == 5


def test_answers_as_event_streams(cli, work: Path) -> None:
    paged = Paged(3)
    paged.sse = True
    for scenario in (paged, SseFraming()):
        with serve(scenario) as server:
            _, checks, _ = preflight(
                cli, work, entries(server.url(), ("t", "mcpTool", "tool-2")), "--live"
            )
            expected = "True" if scenario is paged else "False"  # SseFraming lists alpha, beta
            assert checks["server"]["readiness"] == "True", checks["server"]
            assert checks["t"]["readiness"] == expected, checks["t"]


# ---------------------------------------------------------------------------
# Bytes and time


@pytest.mark.parametrize("mode", ["declared", "json", "sse"])
def test_an_oversized_response_is_cut_at_one_mib(cli, work: Path, mode: str) -> None:
    with serve(Scenario()) as server:  # first-use imports and caches are not the body
        preflight(cli, work, entries(server.url(), ("tool", "mcpTool", "alpha")), "--live")
    with serve(Oversized(mode, size=8 * MiB)) as big:
        gc.collect()
        tracemalloc.start()
        try:
            code, checks, _ = preflight(
                cli, work, entries(big.url(), ("tool", "mcpTool", "x")), "--live"
            )
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert checks["server"]["readiness"] == "True"  # initialize went through
    assert checks["tool"]["readiness"] == "False"
    assert checks["tool"]["reason"] == (
        f"the response from {big.url()} to tools/list exceeded 1 MiB"
    )
    assert code == 5
    # The 8 MiB body was never held whole: what was held is at most the cap and a read.
    assert peak < 4 * MiB, peak


class Gzipped(Scenario):
    """``tools/list`` answered by a small gzip body that inflates to 8 MiB."""

    def handle(self, h: Any, message: Any) -> None:
        if not (isinstance(message, dict) and message.get("method") == "tools/list"):
            super().handle(h, message)
            return
        tools = [{"name": "x" * 1000, "inputSchema": {"type": "object"}}] * (8 * 1024)
        page = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": tools}}
        body = gzip.compress(json.dumps(page).encode())
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)


def test_a_compressed_response_is_refused(cli, work: Path) -> None:
    with serve(Gzipped()) as server:
        _, checks, _ = preflight(
            cli, work, entries(server.url(), ("tool", "mcpTool", "x")), "--live"
        )
        asked = {s.headers.get("accept-encoding") for s in server.seen}
    assert checks["server"]["readiness"] == "True"
    assert checks["tool"]["reason"] == (
        f"{server.url()} sent a compressed response to tools/list, which is refused"
    )
    assert asked == {"identity"}


@pytest.mark.parametrize("scenario", [Hang(), Drip()], ids=["hang", "drip"])
def test_a_server_that_hangs_or_drips_is_given_up_at_the_deadline(
    cli, work: Path, scenario: Scenario
) -> None:
    with serve(scenario) as server:
        started = time.monotonic()
        code, checks, _ = preflight(
            cli, work, entries(server.url()), "--live", env={"RUNTIME_MCP_TIMEOUT": "1"}
        )
        elapsed = time.monotonic() - started
    assert checks["server"]["readiness"] == "False"
    assert checks["server"]["reason"] == f"{server.url()} did not answer within 1 s"
    assert code == 5
    assert elapsed < 4, elapsed


def test_the_deadline_covers_the_whole_discovery(cli, work: Path) -> None:
    class SlowPages(Paged):  # each page is quick, but together they outlast the deadline
        def page(self, method: str, cursor: str | None) -> dict[str, Any]:
            time.sleep(0.1)
            return super().page(method, cursor)

    with serve(SlowPages(25)) as server:
        started = time.monotonic()
        _, checks, _ = preflight(
            cli,
            work,
            entries(server.url(), ("late", "mcpTool", "tool-24")),
            "--live",
            env={"RUNTIME_MCP_TIMEOUT": "0.8"},
        )
        elapsed = time.monotonic() - started
        listed = server.methods().count("tools/list")
    assert checks["late"]["reason"].endswith("did not answer within 0.8 s")
    assert 0 < listed < 20
    assert elapsed < 4, elapsed


# ---------------------------------------------------------------------------
# Servers that are not (working) MCP servers, and what a reason may show


@pytest.mark.parametrize(
    ("scenario", "reason"),
    [
        (Malformed("html"), "malformed response from {url} to initialize"),
        (Malformed("json"), "malformed response from {url} to initialize"),
        (Malformed("sse"), "malformed response from {url} to initialize"),
        (HttpError(404), "{url} answered HTTP 404 to initialize"),
        (HttpError(500), "{url} answered HTTP 500 to initialize"),
    ],
    ids=["html", "broken-json", "broken-sse", "http-404", "http-500"],
)
def test_a_server_that_is_not_an_mcp_server(
    cli, work: Path, scenario: Scenario, reason: str
) -> None:
    with serve(scenario) as server:
        code, checks, printed = preflight(
            cli, work, entries(server.url(), ("tool", "mcpTool", "alpha")), "--live"
        )
    for rid in ("server", "tool"):
        assert checks[rid]["readiness"] == "False"
        assert checks[rid]["reason"] == reason.format(url=server.url())
    assert code == 5
    assert SECRET not in printed


def test_a_json_rpc_error_shows_its_code_only(cli, work: Path) -> None:
    with serve(RpcError()) as server:
        _, checks, printed = preflight(
            cli, work, entries(server.url(), ("tool", "mcpTool", "alpha")), "--live"
        )
    assert checks["server"]["readiness"] == "True"
    assert checks["tool"]["reason"] == (
        f"{server.url()}: server returned a JSON-RPC error to tools/list (code -32603)"
    )
    assert SECRET not in printed and "internal failure" not in printed


def test_a_list_that_is_not_an_mcp_list_is_malformed(cli, work: Path) -> None:
    with serve(BadServerInfo()) as server:  # tools without names, a string among them
        _, checks, _ = preflight(
            cli, work, entries(server.url(), ("tool", "mcpTool", "alpha")), "--live"
        )
    assert checks["server"]["readiness"] == "True"
    assert checks["tool"]["reason"] == f"malformed response from {server.url()} to tools/list"


def test_nobody_listening(cli, work: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    code, checks, _ = preflight(cli, work, entries(url), "--live")
    assert checks["server"]["reason"] == f"{url} did not answer"
    assert code == 5


def test_report_keeps_no_url_credentials_query_or_fragment(cli, work: Path) -> None:
    with real_mcp_server() as server:
        url = server.url.replace("http://", "http://agent:hunter2@") + "?token=sekrit#frag"
        _code, checks, text = preflight(
            cli, work, entries(url, ("echo", "mcpTool", "echo")), "--live"
        )
        assert checks["echo"]["readiness"] == "True"
        for secret in ("hunter2", "agent:", "sekrit", "token=", "#frag"):
            assert secret not in text, secret
        assert checks["server"]["target"]["serverUrl"] == server.url.split("?")[0]


def test_url_credentials_go_as_basic_auth_and_the_query_stays_with_the_endpoint(
    cli, work: Path
) -> None:
    with serve(HttpError(401)) as server:
        # values that no sha256 in the report can hold by chance (not hex)
        url = server.url(userinfo="us%40er:p%3Aw", rest="?token=qwz#frag")
        _, checks, text = preflight(cli, work, entries(url), "--live")
        (seen,) = server.seen
    assert checks["server"]["reason"] == f"{server.url()} answered HTTP 401 to initialize"
    for secret in ("us%40er", "us@er", "p%3Aw", "token", "qwz", "frag", SECRET):
        assert secret not in text, secret
    assert seen.headers["authorization"] == "Basic " + base64.b64encode(b"us@er:p:w").decode()
    assert seen.path == "/mcp?token=qwz"  # the fragment is not sent


# ---------------------------------------------------------------------------
# TLS with a private certificate authority


def test_tls_with_a_private_ca(cli, work: Path, tmp_path: Path) -> None:
    import ssl

    certs = create_certificates(tmp_path / "tls")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs.cert_file, certs.key_file)
    with serve(Scenario(), tls=context) as server:
        reqs = entries(server.url(), ("tool", "mcpTool", "beta"))
        _, trusted, _ = preflight(
            cli, work, reqs, "--live", env={"SSL_CERT_FILE": str(certs.ca_file)}
        )
        _, untrusted, _ = preflight(cli, work, reqs, "--live")
        _, broken, _ = preflight(
            cli, work, reqs, "--live", env={"SSL_CERT_FILE": str(tmp_path / "nothing.pem")}
        )
    assert server.url().startswith("https://")
    assert trusted["server"]["readiness"] == trusted["tool"]["readiness"] == "True"
    assert untrusted["server"]["reason"] == f"{server.url()} failed the TLS handshake"
    assert broken["server"]["readiness"] == "False"
    assert broken["server"]["fix"] == "fix SSL_CERT_FILE / SSL_CERT_DIR"


# ---------------------------------------------------------------------------
# The optional extra


def test_without_the_sdk_a_live_check_is_unknown_and_says_how_to_install_it(
    cli, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")] + ["mcp"]:
        monkeypatch.setitem(sys.modules, name, None)  # importing it fails as if not installed
    monkeypatch.delitem(sys.modules, "runtime.preflight.mcp", raising=False)
    code, checks, printed = preflight(cli, work, entries("http://127.0.0.1:9/mcp"), "--live")
    check = checks["server"]
    assert check["readiness"] == "Unknown"
    assert check["reason"] == (
        "live MCP checks need the mcp SDK, an optional extra that is not installed"
    )
    assert check["fix"] == "pip install 'runtime-engine[mcp]'"
    assert code == 0
    assert "Traceback" not in printed


PROBE = """
import json, sys
from runtime.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stdout.write("\\n" + json.dumps([code, sorted(sys.modules)]))
"""


@pytest.mark.parametrize("command", ["preflight", "execute"])
def test_commands_without_live_do_not_import_the_sdk(
    work: Path, env: dict[str, str], command: str
) -> None:
    write_cap(work, entries("http://127.0.0.1:9/mcp"))
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "capability", command, "cap.md"],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=60,
        check=True,
    )
    code, modules = json.loads(out.stdout.strip().splitlines()[-1])
    assert code in (0, None), out.stdout + out.stderr
    assert "runtime.preflight.checks" in modules  # the requirement was checked (offline)
    loaded = [
        m
        for m in modules
        if m.partition(".")[0] in ("mcp", "mcp_types", "httpx2", "anyio")
        or m == "runtime.preflight.mcp"
    ]
    assert loaded == []
