"""Tests for runtime.preflight.mcp: read-only MCP discovery over Streamable HTTP.

A real server built with the official ``mcp`` SDK checks interoperability; the
stdlib doubles of ``tests/mcp_servers.py`` check the bounds (pages, bytes, one
deadline), the framing (JSON, SSE) and what a failure reason may show.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

# Make the repository root importable however pytest is started (ruff's E402
# allows imports after a sys.path change).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runtime.preflight.mcp import Discovery, _SseParser, discover, sanitize_url
from tests.mcp_servers import (
    SECRET,
    SESSION_ID,
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

# Generous: these tests are not about time, and a loaded machine must not fail them.
PATIENT = 30.0

READ_ONLY = {"initialize", "notifications/initialized", "tools/list", "resources/list"}


def assert_no_leak(found: Discovery, *texts: str) -> None:
    for text in (SECRET, *texts):
        assert text not in found.reason, found.reason


# ---------------------------------------------------------------------------
# The official SDK's server


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
def test_real_server_discovery(json_response: bool) -> None:
    with real_mcp_server(json_response=json_response) as server:
        found = discover(server.url, "server", timeout=PATIENT)
        assert found.ok, found.reason
        assert found.server_name == "runtime-test-server"
        assert (found.names, found.pages, found.cut_off) == ([], 0, False)

        tools = discover(server.url, "tools", timeout=PATIENT)
        assert tools.ok, tools.reason
        assert sorted(tools.names) == ["add", "echo"]
        assert (tools.pages, tools.cut_off) == (1, False)

        resources = discover(server.url, "resources", timeout=PATIENT)
        assert resources.ok, resources.reason
        assert resources.names == ["resource://greeting"]

        hit = discover(server.url, "tools", timeout=PATIENT, find="echo")
        assert hit.ok and "echo" in hit.names and hit.pages == 1
        miss = discover(server.url, "tools", timeout=PATIENT, find="nope")
        assert miss.ok and "nope" not in miss.names and not miss.cut_off

        assert server.calls == []  # no tool was called, no resource was read


# ---------------------------------------------------------------------------
# Protocol details against the double


def test_session_and_protocol_headers_and_read_only() -> None:
    with serve(Scenario()) as server:
        found = discover(server.url(), "tools", timeout=PATIENT)
        assert found.ok, found.reason
        assert found.names == ["alpha", "beta"]
        assert found.server_name == "double"
        assert found.reason == f"http://127.0.0.1:{server.port}/mcp listed 2 tools on 1 page"
        initialize, initialized, listing = server.seen
        assert initialize.message["method"] == "initialize"
        assert initialize.message["params"]["protocolVersion"] == "2025-11-25"
        assert "mcp-session-id" not in initialize.headers
        for seen in (initialized, listing):
            assert seen.headers["mcp-session-id"] == SESSION_ID
            assert seen.headers["mcp-protocol-version"] == "2025-11-25"
        assert "id" not in initialized.message
        assert initialized.message["method"] == "notifications/initialized"
        for seen in server.seen:
            assert seen.verb == "POST"
            assert "application/json" in seen.headers["accept"]
            assert "text/event-stream" in seen.headers["accept"]
            assert seen.headers["content-type"] == "application/json"
        assert set(server.methods()) <= READ_ONLY


def test_server_kind_only_initializes() -> None:
    with serve(Scenario()) as server:
        found = discover(server.url(), "server", timeout=PATIENT)
        assert found.ok and found.pages == 0
        assert server.methods() == ["initialize", "notifications/initialized"]


def test_resources_list() -> None:
    with serve(Scenario()) as server:
        found = discover(server.url(), "resources", timeout=PATIENT)
        assert found.ok and found.names == ["file:///notes/today.md"]
        assert server.methods()[-1] == "resources/list"


def test_pagination_stops_at_max_pages() -> None:
    with serve(Paged(25)) as server:
        found = discover(server.url(), "tools", find="tool-24", timeout=PATIENT)
        assert found.ok, found.reason
        assert found.pages == 20
        assert found.cut_off is True
        assert "tool-24" not in found.names
        assert found.names == [f"tool-{n}" for n in range(20)]
        listings = [s for s in server.seen if s.message.get("method") == "tools/list"]
        assert len(listings) == 20
        assert "params" not in listings[0].message
        assert listings[1].message["params"] == {"cursor": "cursor-1"}
        assert set(server.methods()) <= READ_ONLY


def test_pagination_reads_to_the_end_within_the_limit() -> None:
    with serve(Paged(5)) as server:
        found = discover(server.url(), "resources", max_pages=5, timeout=PATIENT)
        assert found.ok and found.pages == 5 and not found.cut_off
        assert found.names == [f"file:///r/{n}" for n in range(5)]


def test_find_stops_early() -> None:
    with serve(Paged(25)) as server:
        found = discover(server.url(), "tools", find="tool-3", timeout=PATIENT)
        assert found.ok and found.pages == 4 and not found.cut_off
        assert found.names[-1] == "tool-3"
        assert server.methods().count("tools/list") == 4


def test_sse_framing() -> None:
    with serve(SseFraming()) as server:
        found = discover(server.url(), "tools", timeout=PATIENT)
        assert found.ok, found.reason
        assert found.server_name == "double"
        assert found.names == ["alpha", "beta"]


def test_sse_answers_throughout() -> None:
    scenario = Paged(3)
    scenario.sse = True
    with serve(scenario) as server:
        found = discover(server.url(), "tools", timeout=PATIENT)
        assert found.ok and found.names == ["tool-0", "tool-1", "tool-2"]


def test_odd_entries_are_skipped_and_server_name_truncated() -> None:
    with serve(BadServerInfo()) as server:
        found = discover(server.url(), "tools", timeout=PATIENT)
        assert found.ok, found.reason
        assert found.names == ["alpha", "beta"]
        assert found.server_name == "n" * 100


# ---------------------------------------------------------------------------
# Bounds


@pytest.mark.parametrize("mode", ["declared", "json", "sse"])
def test_oversized_response_is_cut_and_memory_bounded(mode: str) -> None:
    with serve(Scenario()) as server:  # first-use imports and caches are not the body
        discover(server.url(), "tools", timeout=PATIENT)
    with serve(Oversized(mode, size=2 * MiB)) as server:
        gc.collect()
        tracemalloc.start()
        try:
            found = discover(server.url(), "tools", timeout=PATIENT)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert not found.ok
    assert found.reason.endswith("to tools/list exceeded 1 MiB"), found.reason
    assert found.server_name == "double"  # initialize went through
    # The 2 MiB body was never held whole: what was held is the 1 MiB cap and a read.
    assert peak < 2 * MiB, peak


def test_smaller_cap_is_named_in_the_reason() -> None:
    with serve(Oversized("json", size=256 * 1024)) as server:
        found = discover(server.url(), "tools", max_bytes=64 * 1024, timeout=PATIENT)
    assert not found.ok and found.reason.endswith("exceeded 64 KiB")


@pytest.mark.parametrize("scenario", [Hang(), Drip()], ids=["hang", "drip"])
def test_total_deadline(scenario: Scenario) -> None:
    with serve(scenario) as server:
        started = time.monotonic()
        found = discover(server.url(), "tools", timeout=0.5)
        elapsed = time.monotonic() - started
    assert not found.ok
    assert found.reason == f"http://127.0.0.1:{server.port}/mcp did not answer within 0.5 s"
    assert 0.5 <= elapsed < 1.5, elapsed


def test_deadline_covers_the_whole_discovery() -> None:
    # Each page is quick, but together they outlast the deadline.
    class SlowPages(Paged):
        def page(self, method: str, cursor: str | None) -> dict[str, object]:
            time.sleep(0.1)
            return super().page(method, cursor)

    with serve(SlowPages(25)) as server:
        started = time.monotonic()
        found = discover(server.url(), "tools", timeout=0.5)
        elapsed = time.monotonic() - started
    assert not found.ok and "did not answer within 0.5 s" in found.reason
    assert 0 < found.pages < 20
    assert elapsed < 1.5, elapsed


def test_running_event_loop_is_left_alone() -> None:
    async def inside_a_loop() -> Discovery:
        return discover(url, "tools", timeout=PATIENT)

    with serve(Scenario()) as server:
        url = server.url()
        found = asyncio.run(inside_a_loop())
    assert found.ok and found.names == ["alpha", "beta"]


# ---------------------------------------------------------------------------
# Failures and what their reasons show


def test_http_error_shows_status_only_and_sends_basic_auth() -> None:
    with serve(HttpError(500)) as server:
        url = server.url(userinfo="user:pw", rest="?token=abc#frag")
        found = discover(url, "tools", timeout=PATIENT)
        (seen,) = server.seen
    assert not found.ok
    assert found.reason == f"http://127.0.0.1:{server.port}/mcp answered HTTP 500 to initialize"
    assert_no_leak(found, "user", "pw", "token", "abc", "frag", "?", "#", "@")
    assert seen.headers["authorization"] == "Basic " + base64.b64encode(b"user:pw").decode()
    assert seen.path == "/mcp?token=abc"  # the query is the endpoint's; the fragment is not sent


def test_percent_encoded_credentials_are_decoded() -> None:
    with serve(Scenario()) as server:
        found = discover(server.url(userinfo="us%40er:p%3Aw"), "server", timeout=PATIENT)
        (seen, *_) = server.seen
    assert found.ok
    assert seen.headers["authorization"] == "Basic " + base64.b64encode(b"us@er:p:w").decode()


def test_jsonrpc_error_shows_no_message() -> None:
    with serve(RpcError()) as server:
        found = discover(server.url(), "tools", timeout=PATIENT)
    assert not found.ok
    assert "server returned a JSON-RPC error to tools/list" in found.reason
    assert "-32603" in found.reason
    assert_no_leak(found, "internal failure")


@pytest.mark.parametrize("mode", ["json", "sse", "html", "sse-empty", "wrong-id"])
def test_malformed_responses(mode: str) -> None:
    with serve(Malformed(mode)) as server:
        found = discover(server.url(), "server", timeout=PATIENT)
    assert not found.ok
    assert (
        found.reason == f"malformed response from http://127.0.0.1:{server.port}/mcp to initialize"
    )


def test_connection_refused() -> None:
    port = free_port()
    found = discover(f"http://127.0.0.1:{port}/mcp", "server", timeout=PATIENT)
    assert not found.ok
    assert found.reason == f"http://127.0.0.1:{port}/mcp did not answer"


@pytest.mark.parametrize(
    "url",
    [
        "ftp://127.0.0.1/mcp",
        "not a url",
        "http:///nohost",
        "http://127.0.0.1:99999/",
        "http://[::1/mcp",
        "http://\u2603\u2603..com/mcp",
        "http://xn--a.com/mcp",
    ],
)
def test_invalid_urls(url: str) -> None:
    found = discover(url, "server", timeout=1)
    assert not found.ok and "is not a valid http(s) URL" in found.reason


def test_tls_to_a_plain_http_server_fails_cleanly() -> None:
    with serve(Scenario()) as server:
        found = discover(f"https://127.0.0.1:{server.port}/mcp", "server", timeout=PATIENT)
    assert found.reason == f"https://127.0.0.1:{server.port}/mcp failed the TLS handshake"


def test_unresolvable_host() -> None:
    found = discover("http://no-such-host.invalid/mcp", "server", timeout=5)
    assert not found.ok
    assert found.reason.startswith("http://no-such-host.invalid/mcp did not answer")


@pytest.mark.parametrize("step", [1, 2, 5, 64])
def test_sse_parser_framing(step: int) -> None:
    stream = (
        b"\xef\xbb\xbfdata: one\r\rdata: a\rdata: b\r\n\r\n"  # BOM, CR and CRLF line ends
        b"event: other\ndata: skipped\n\n"  # not a message event
        b"id: 7\ndata:\n\n"  # no data: nothing dispatched
        b"retry: 10\ndata:last"  # the stream ends before the blank line
    )
    parser = _SseParser()
    events: list[str] = []
    for i in range(0, len(stream), step):
        events += parser.feed(stream[i : i + step])
    events += parser.finish()
    assert events == ["one", "a\nb", "last"]


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError):
        discover("http://127.0.0.1/", "prompts", timeout=PATIENT)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        discover("http://127.0.0.1/", "tools", max_pages=0, timeout=PATIENT)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:pw@127.0.0.1:8080/mcp?token=abc#frag", "http://127.0.0.1:8080/mcp"),
        ("https://Example.COM/a/b?x=1", "https://example.com/a/b"),
        ("http://[::1]:9000/mcp", "http://[::1]:9000/mcp"),
        ("http://u@host:99999/p", "http://host/p"),
        ("https://token@host", "https://host"),
    ],
)
def test_sanitize_url(url: str, shown: str) -> None:
    assert sanitize_url(url) == shown
