"""Replay recorded GitHub responses from ``@octokit/fixtures`` on loopback.

``@octokit/fixtures`` (npm, a test-only dependency in ``tests/npm/package.json``)
ships scenarios recorded against the real ``api.github.com``: each
``scenarios/api.github.com/<scenario>/normalized-fixture.json`` is a list of
request/response pairs (``scope``, ``method``, ``path`` with query, request
``body``, ``status``, response ``headers`` and ``response`` body,
``responseIsBinary``).

:class:`FixtureReplay` serves one scenario::

    with FixtureReplay("get-repository") as replay:
        replay.base_url      # http://127.0.0.1:PORT, stands in for https://api.github.com
        ...                  # point GITHUB_API_URL at it and run the client
        replay.requests      # what was received, in order (method, path, headers, body)
        replay.pending       # recorded interactions nobody asked for
        replay.unmatched     # requests that matched no recording (answered 501)

- One HTTP/1.1 keep-alive server (stdlib ``http.server``, always a
  ``Content-Length``) per origin the scenario talks to (``api.github.com``,
  and e.g. ``codeload.github.com`` for a redirect target), each on
  ``127.0.0.1`` with an ephemeral port.
- A request is answered with the first not yet used recording of its origin
  whose method and path match (query parameters compared as decoded,
  order-insensitive pairs) and, when the recording has a JSON request body,
  whose body is equal. Recordings are therefore served in recorded order.
- Every ``https://<recorded origin>`` in response headers (``Link``,
  ``Location``) and text bodies is rewritten to the matching replay server, so
  pagination and redirects stay on loopback.
- Authentication is not checked (the recordings carry a dummy token); the
  received headers are kept so tests can assert on ``Authorization``.
- ``not_found=[("GET", regex)]`` answers unrecorded requests matching a rule
  with GitHub's 404 body; ``aliases={("GET", "/a"): "/b"}`` serves a recording
  made for ``/b`` to a request for ``/a`` (for a route the client uses that the
  scenario did not record, with responses of the same shape).
- Anything else unrecorded gets 501 and is listed in :attr:`unmatched`.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = [
    "INSTALL_COMMAND",
    "FixtureReplay",
    "FixturesNotInstalledError",
    "Received",
    "Recording",
    "fixtures_dir",
    "load_scenario",
    "scenario_path",
]

INSTALL_COMMAND = "npm install --prefix tests/npm --no-audit --no-fund"

_FIXTURES = (
    Path(__file__).resolve().parent
    / "npm"
    / "node_modules"
    / "@octokit"
    / "fixtures"
    / "scenarios"
    / "api.github.com"
)

#: Response headers that describe the recorded connection or encoding, not the
#: resource: the replay server frames its own responses.
_HOP_HEADERS = frozenset(
    {"connection", "keep-alive", "content-length", "transfer-encoding", "content-encoding"}
)
_NO_BODY_STATUSES = frozenset({204, 304})
_NOT_FOUND = {
    "message": "Not Found",
    "documentation_url": "https://docs.github.com/rest",
    "status": "404",
}


class FixturesNotInstalledError(FileNotFoundError):
    """``@octokit/fixtures`` (or the scenario) is not installed under ``tests/npm``."""


def fixtures_dir() -> Path:
    """``tests/npm/node_modules/@octokit/fixtures/scenarios/api.github.com``."""
    if not _FIXTURES.is_dir():
        raise FixturesNotInstalledError(
            f"@octokit/fixtures not found at {_FIXTURES}. "
            f"Install the npm test dependencies from the repository root with: {INSTALL_COMMAND}"
        )
    return _FIXTURES


def scenario_path(name: str) -> Path:
    path = fixtures_dir() / name / "normalized-fixture.json"
    if not path.is_file():
        raise FixturesNotInstalledError(
            f"scenario {name!r} not found at {path} (is @octokit/fixtures 23.1.2 installed? "
            f"{INSTALL_COMMAND})"
        )
    return path


@dataclass(frozen=True)
class Recording:
    """One recorded request/response pair."""

    index: int
    origin: str  # "https://api.github.com"
    method: str  # upper case
    path: str  # path and query as recorded
    request_body: Any  # JSON value, text, or None when the recording has none
    status: int
    headers: tuple[tuple[str, str], ...]
    response: Any  # JSON value, text (hex for binary), or None
    binary: bool

    def json_response(self, replay: FixtureReplay | None = None) -> Any:
        """The recorded JSON body, with recorded origins rewritten for ``replay``."""
        text = json.dumps(self.response)
        if replay is not None:
            text = replay.rewrite(text)
        return json.loads(text)


@dataclass(frozen=True)
class Received:
    """One request as the replay server received it."""

    origin: str  # the recorded origin this server stands in for
    method: str
    path: str  # raw request target, with query
    headers: dict[str, str]  # lower-cased names
    body: bytes
    recording: int | None  # index of the recording served, None when synthetic/unmatched

    def json(self) -> Any:
        return json.loads(self.body) if self.body.strip() else None


def _origin(scope: str) -> str:
    parts = urlsplit(scope)
    default = {"https": 443, "http": 80}.get(parts.scheme)
    host = parts.hostname or ""
    if parts.port is not None and parts.port != default:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}"


def _header_items(raw: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    items: list[tuple[str, str]] = []
    for name, value in raw.items():
        values = value if isinstance(value, list) else [value]
        items.extend((name, str(v)) for v in values)
    return tuple(items)


def load_scenario(name: str) -> list[Recording]:
    """The recordings of ``scenarios/api.github.com/<name>``, in recorded order."""
    raw = json.loads(scenario_path(name).read_text(encoding="utf-8"))
    recordings = []
    for index, entry in enumerate(raw):
        body = entry.get("body")
        recordings.append(
            Recording(
                index=index,
                origin=_origin(entry["scope"]),
                method=str(entry["method"]).upper(),
                path=entry["path"],
                request_body=None if body in (None, "") else body,
                status=int(entry["status"]),
                headers=_header_items(entry.get("headers") or {}),
                response=entry.get("response"),
                binary=bool(entry.get("responseIsBinary")),
            )
        )
    return recordings


def _split(target: str) -> tuple[str, list[tuple[str, str]]]:
    parts = urlsplit(target)
    return unquote(parts.path or "/"), sorted(parse_qsl(parts.query, keep_blank_values=True))


def _body_matches(recorded: Any, body: bytes) -> bool:
    if recorded is None:
        return True
    if isinstance(recorded, dict | list):
        try:
            return bool(json.loads(body) == recorded)
        except ValueError:
            return False
    return body.decode("utf-8", "replace") == str(recorded)


class FixtureReplay:
    """Loopback servers replaying one ``@octokit/fixtures`` scenario; see the module docstring."""

    def __init__(
        self,
        scenario: str,
        *,
        not_found: Iterable[tuple[str, str]] = (),
        aliases: Mapping[tuple[str, str], str] | None = None,
    ) -> None:
        self.scenario = scenario
        self.recordings = load_scenario(scenario)
        self._not_found = [(m.upper(), re.compile(rx)) for m, rx in not_found]
        self._aliases = {(m.upper(), p): target for (m, p), target in (aliases or {}).items()}
        self._lock = threading.Lock()
        self._used: set[int] = set()
        self._received: list[Received] = []
        self._servers: dict[str, _ReplayServer] = {}
        self._threads: list[threading.Thread] = []

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> FixtureReplay:
        if self._servers:
            return self
        origins = ["https://api.github.com"]
        origins += [r.origin for r in self.recordings if r.origin not in origins]
        for origin in origins:
            server = _ReplayServer(self, origin)
            self._servers[origin] = server
            thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"fixture-replay {origin}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.shutdown()
            server.close_open_connections()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()

    def __enter__(self) -> FixtureReplay:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --------------------------------------------------------------------- URLs
    def url_for(self, origin: str) -> str:
        """The loopback base URL standing in for a recorded origin (``https://HOST``)."""
        server = self._servers.get(origin)
        if server is None:
            raise KeyError(f"{origin} is not an origin of scenario {self.scenario!r} (or stopped)")
        return f"http://127.0.0.1:{server.server_address[1]}"

    @property
    def base_url(self) -> str:
        """Stands in for ``https://api.github.com``: use it as GITHUB_API_URL."""
        return self.url_for("https://api.github.com")

    def rewrite(self, text: str) -> str:
        """``text`` with every recorded origin replaced by its replay server's base URL."""
        for origin in sorted(self._servers, key=len, reverse=True):
            text = text.replace(origin, self.url_for(origin))
        return text

    # ------------------------------------------------------------------ records
    @property
    def requests(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    @property
    def pending(self) -> list[Recording]:
        """Recordings not served (yet)."""
        with self._lock:
            return [r for r in self.recordings if r.index not in self._used]

    @property
    def unmatched(self) -> list[Received]:
        """Requests answered 501 because nothing recorded (or configured) matched."""
        return [
            r
            for r in self.requests
            if r.recording is None and not self._is_not_found(r.method, r.path)
        ]

    def _is_not_found(self, method: str, target: str) -> bool:
        path = urlsplit(target).path
        return any(m == method and rx.search(path) for m, rx in self._not_found)

    # ----------------------------------------------------------------- matching
    def _answer(
        self, origin: str, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        parts = urlsplit(target)
        alias = self._aliases.get((method, unquote(parts.path)))
        lookup = alias + (f"?{parts.query}" if parts.query else "") if alias else target
        wanted = _split(lookup)
        with self._lock:
            found = next(
                (
                    r
                    for r in self.recordings
                    if r.index not in self._used
                    and r.origin == origin
                    and r.method == method
                    and _split(r.path) == wanted
                    and _body_matches(r.request_body, body)
                ),
                None,
            )
            if found is not None:
                self._used.add(found.index)
            self._received.append(
                Received(
                    origin,
                    method,
                    target,
                    headers,
                    body,
                    None if found is None else found.index,
                )
            )
        if found is not None:
            return self._replay(found)
        if self._is_not_found(method, target):
            return 404, [("Content-Type", "application/json; charset=utf-8")], _dump(_NOT_FOUND)
        message = {
            "message": f"fixture replay: no recording of {method} {target} in {self.scenario!r}",
            "documentation_url": "https://github.com/octokit/fixtures",
        }
        return 501, [("Content-Type", "application/json; charset=utf-8")], _dump(message)

    def _replay(self, recording: Recording) -> tuple[int, list[tuple[str, str]], bytes]:
        headers = [
            (name, self.rewrite(value))
            for name, value in recording.headers
            if name.lower() not in _HOP_HEADERS
        ]
        response = recording.response
        if recording.binary and isinstance(response, str):
            payload = bytes.fromhex(response)
        elif response is None or response == "":
            payload = b""
        elif isinstance(response, str):
            payload = self.rewrite(response).encode("utf-8")
        else:
            payload = self.rewrite(json.dumps(response)).encode("utf-8")
        return recording.status, headers, payload


def _dump(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8")


class _ReplayServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, replay: FixtureReplay, origin: str) -> None:
        self.replay = replay
        self.origin = origin
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._open_lock:
            self._open.add(sock)
        return sock, address

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_open_connections(self) -> None:
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up is not the test's business


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "GitHub.com"
    sys_version = ""
    timeout = 10  # idle keep-alive connections close after this many seconds
    server: _ReplayServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _dispatch(self) -> None:
        body = self._read_body()
        headers = {name.lower(): value for name, value in self.headers.items()}
        status, response_headers, payload = self.server.replay._answer(
            self.server.origin, self.command, self.path, headers, body
        )
        self.send_response_only(status)
        names = {name.lower() for name, _ in response_headers}
        if "date" not in names:
            self.send_header("Date", self.date_time_string())
        for name, value in response_headers:
            self.send_header(name, value)
        if status not in _NO_BODY_STATUSES:
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD" and status not in _NO_BODY_STATUSES:
            self.wfile.write(payload)
