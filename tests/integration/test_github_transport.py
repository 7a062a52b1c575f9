"""What the GitHub client puts on the wire, how it reads what comes back, and its limits.

The client is an ``httpx.Client`` (providers/github/transport.py adds one thing
to it: a deadline over each whole exchange). These tests hold it to what it
promises against the loopback double: the requests httpx sends with the
client's settings, compressed bodies read, undecodable ones a clear step
failure; and the limits of specs/github.md ("Limits"), each through the real
CLI: a response trickled a byte at a time ends at the request's total
deadline (``RUNTIME_GITHUB_TIMEOUT``) or at the step's time limit
(``--timeout``), whichever comes first; a list stops after 100 pages and at a
next page it has already read; a gzip bomb stops at 32 MiB decoded, with the
process's peak RSS under 256 MiB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from providers.github import endpoints as ep
from providers.github.client import GitHubHTTP
from runtime import __version__
from runtime.errors import StepError
from tests.conftest import REPO as CHECKOUT
from tests.conftest import RUNTIME_BIN, capability, write
from tests.github_double import GitHubDouble
from tests.github_double.peak_rss import run_measured

TOKEN = "ghp_" + "W1r3" * 9


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN) as double:
        double.add_org("acme")
        double.add_repo("acme", "app", description="The app", language="Python")
        for i in range(130):  # two pages of 100
            double.add_repo("acme", f"repo-{i:03d}")
        yield double


@pytest.fixture
def genv(gh: GitHubDouble) -> dict[str, str]:
    return gh.runtime_env()


def _received(gh: GitHubDouble) -> list[tuple[str, str, dict[str, str], bytes]]:
    return [(r.method, r.path, dict(r.headers), r.body) for r in gh.requests]


# The requests of the client's kinds: plain reads, reads with parameters merged into a
# query the path already has, writes with a JSON body and without one.
CALLS: list[tuple[str, str, dict[str, Any] | None, Any]] = [
    ("GET", "/repos/acme/app", None, None),
    ("GET", "/orgs/acme/repos?type=all", {"per_page": "5", "sort": "full name"}, None),
    ("POST", "/repos/acme/app/issues", None, {"title": "Ünïcode title", "labels": ["a", "b"]}),
    ("PATCH", "/repos/acme/app", None, {"description": "new", "private": False}),
    ("POST", "/repos/acme/app/forks", None, None),
    ("DELETE", "/repos/acme/app/subscription", None, None),
]


def test_requests_arrive_as_httpx_sent_them(gh: GitHubDouble) -> None:
    endpoints = ep.resolve({"GITHUB_API_URL": gh.api_url}, None, None)
    http = GitHubHTTP(endpoints, TOKEN, {})
    try:
        for method, path, params, body in CALLS:
            http.request(method, path, params=params, body=body, ok_statuses=tuple(range(400, 600)))
    finally:
        http.close()
    ours = _received(gh)

    gh.reset_counters()
    # a plain httpx.Client with the client's settings
    with httpx.Client(
        follow_redirects=False,
        trust_env=False,
        headers={
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"runtime/{__version__}",
        },
    ) as client:
        for method, path, params, body in CALLS:
            url = httpx.URL(gh.api_url + path)
            if params:
                url = url.copy_merge_params(params)
            client.request(method, url, json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    theirs = _received(gh)

    assert len(ours) == len(theirs) == len(CALLS)
    for mine, reference in zip(ours, theirs, strict=True):
        # httpx offers br and zstd as well when their packages are installed; the
        # client offers what it decodes
        assert mine[2].pop("accept-encoding") == "gzip, deflate"
        reference[2].pop("accept-encoding")
        assert mine == reference


@pytest.mark.parametrize("mode", ["gzip", "deflate", "deflate-raw"])
def test_compressed_responses_are_read(
    cli: Any, gh: GitHubDouble, genv: dict[str, str], mode: str
) -> None:
    plain = cli("--output", "json", "github", "repo", "list", "acme", extra_env=genv)
    assert plain.code == 0, plain.stderr
    gh.compress = mode
    with httpx.Client() as client:  # the double does compress what it sends
        raw = client.get(
            gh.api_url + "/repos/acme/app", headers={"Authorization": f"token {TOKEN}"}
        )
    assert raw.headers["content-encoding"] == ("deflate" if mode == "deflate-raw" else mode)

    gh.reset_counters()
    packed = cli("--output", "json", "github", "repo", "list", "acme", extra_env=genv)
    assert packed.code == 0, packed.stderr
    assert len(gh.requests) == 2  # both pages came compressed
    repos = json.loads(packed.stdout)["steps"][0]["data"]
    assert repos == json.loads(plain.stdout)["steps"][0]["data"]
    assert len(repos) == 131


def test_a_body_its_encoding_does_not_describe_fails_the_step(
    cli: Any, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    gh.inject_bad_encoding(r"^/repos/acme/app$")
    result = cli("github", "repo", "view", "acme/app", extra_env=genv)
    assert result.code == 1
    text = result.stdout + result.stderr
    assert "sent a body that is not valid gzip: GET /repos/acme/app" in text
    assert "hint: retry later" in text
    assert "Traceback" not in text and TOKEN not in text


def test_a_provider_bug_shows_its_traceback_only_when_asked(
    cli: Any, genv: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """RUNTIME_DEBUG=1 prints where a step's internal error happened, redacted."""

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"boom near {TOKEN}")

    monkeypatch.setattr(GitHubHTTP, "request", boom)
    quiet = cli("github", "repo", "view", "acme/app", extra_env=genv)
    assert quiet.code == 1
    assert "internal error in github repo view: RuntimeError" in quiet.stdout + quiet.stderr
    assert "Traceback" not in quiet.stdout + quiet.stderr

    loud = cli("github", "repo", "view", "acme/app", extra_env={**genv, "RUNTIME_DEBUG": "1"})
    assert loud.code == 1
    assert "Traceback (most recent call last)" in loud.stderr
    assert "RuntimeError: boom near" in loud.stderr
    assert TOKEN not in loud.stdout + loud.stderr


PROBE = """
import json, sys
from runtime.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stdout.write("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _modules(args: tuple[str, ...], env: dict[str, str], cwd: Path) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, out.stdout + out.stderr
    return set(report["modules"])


def test_httpx_is_imported_only_to_send_requests(
    gh: GitHubDouble, genv: dict[str, str], tmp_path: Path
) -> None:
    """httpx is slow to import (a large part of a GitHub step's start): planning a
    GitHub step, or asking for the provider's help, sends nothing and never imports it;
    running the step does."""
    env = {**os.environ, **genv, "RUNTIME_HOME": str(tmp_path / "home")}
    (tmp_path / "view.md").write_text(VIEW_CAPABILITY, encoding="utf-8")
    for args in (("capability", "plan", "view.md"), ("github", "--help")):
        assert "httpx" not in _modules(args, env, tmp_path), args
    assert "httpx" in _modules(("github", "repo", "view", "acme/app"), env, tmp_path)


def test_a_cookie_a_server_sets_is_never_sent_back(
    cli: Any, gh: GitHubDouble, genv: dict[str, str], work: Path
) -> None:
    """The client keeps no cookies: a ``Set-Cookie`` in a response is not sent with the
    run's next request, as a plain httpx client would send it."""
    gh.inject(
        REPO,
        200,
        count=None,
        body={"full_name": "acme/app", "description": "The app"},
        headers={"Set-Cookie": "session=kept-by-httpx; Path=/"},
    )
    with httpx.Client() as plain:
        for _ in range(2):
            plain.get(gh.api_url + "/repos/acme/app")
    assert gh.requests[-1].headers.get("cookie") == "session=kept-by-httpx"

    gh.reset_counters()
    twice = VIEW_CAPABILITY.replace(
        "    args: [repo, view, acme/app]\n",
        "    args: [repo, view, acme/app]\n  - provider: github\n    args: [repo, view, acme/app]\n",
    )
    (work / "twice.md").write_text(twice, encoding="utf-8")
    result = cli("capability", "execute", "twice.md", extra_env=genv)
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.count("The app") == 2
    assert [r.path for r in gh.requests] == ["/repos/acme/app"] * 2
    assert not any("cookie" in r.headers for r in gh.requests)


# -- limits: time, pages, size ----------------------------------------------------------

VIEW_CAPABILITY = """---
name: view
description: View one repository.
---

# View

Reads one repository.

```runtime
version: v1

workflow:
  - provider: github
    args: [repo, view, acme/app]
```
"""
REPO = r"^/repos/acme/app$"
MARGIN = 1.5  # seconds a failure may take past its deadline (start-up, a loaded machine)


def _step_record(home: Path) -> dict[str, Any]:
    lines = (home / "audit" / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    steps = [r for r in map(json.loads, lines) if r.get("event") == "step"]
    assert steps, lines
    found: dict[str, Any] = steps[-1]
    return found


def _execute(
    cli_proc: Any, work: Path, genv: dict[str, str], step_limit: str, **extra: str
) -> tuple[float, Any]:
    """``runtime capability execute`` of one `github repo view` step, and how long it took."""
    (work / "view.md").write_text(VIEW_CAPABILITY, encoding="utf-8")
    started = time.monotonic()
    result = cli_proc(
        *("--output", "json", "capability", "execute", "view.md", "--timeout", step_limit),
        # this checkout's code, whichever checkout the installed `runtime` was made from
        extra_env={**genv, "PYTHONPATH": str(CHECKOUT), **extra},
        timeout=30,
    )
    return time.monotonic() - started, result


def test_trickled_headers_end_at_the_request_deadline(
    cli_proc: Any, gh: GitHubDouble, genv: dict[str, str], work: Path, home: Path
) -> None:
    """Issue 18, item 7: headers at a byte a second, RUNTIME_GITHUB_TIMEOUT=2 and
    --timeout 5 (it ran past 40 s): the request's 2 s are a total, not a bound on each
    read. The step fails (exit 1) with its audit record."""
    gh.inject_trickle(REPO, part="headers", interval=1.0)
    took, result = _execute(cli_proc, work, genv, "5", RUNTIME_GITHUB_TIMEOUT="2")
    assert result.code == 1, result.stdout + result.stderr
    error = result.json()["steps"][0]["error"]
    assert "timed out waiting for 127.0.0.1: GET /repos/acme/app" in error
    assert "no complete response within 2 s" in error
    assert 2 <= took < 2 + MARGIN, took
    record = _step_record(home)
    assert record["status"] == "failed" and "no complete response within 2 s" in record["error"]


@pytest.mark.parametrize("part", ["headers", "body"])
def test_a_trickle_ends_at_the_step_time_limit(
    cli_proc: Any, gh: GitHubDouble, genv: dict[str, str], work: Path, home: Path, part: str
) -> None:
    """With the request's own 30 s, the step's --timeout 3 ends the request, headers or
    body, however slowly they trickle in; the audit log records the failed step."""
    gh.inject_trickle(REPO, part=part, interval=0.3)  # type: ignore[arg-type]
    took, result = _execute(cli_proc, work, genv, "3")
    assert result.code == 1, result.stdout + result.stderr
    error = result.json()["steps"][0]["error"]
    assert "timed out waiting for 127.0.0.1: GET /repos/acme/app" in error
    assert "the step's time limit of 3 s ran out" in error
    assert 3 <= took < 3 + MARGIN, took
    record = _step_record(home)
    assert record["status"] == "failed" and "time limit of 3 s" in record["error"]
    assert record["duration_ms"] < (3 + MARGIN) * 1000


@pytest.mark.parametrize("as_date", [False, True], ids=["seconds", "date"])
def test_a_rate_limit_wait_past_the_step_limit_fails_at_once(
    cli_proc: Any, gh: GitHubDouble, genv: dict[str, str], work: Path, as_date: bool
) -> None:
    """Retry-After: 10 (or the date 10 s ahead) is within RUNTIME_GITHUB_MAX_WAIT (60 s),
    not within --timeout 3."""
    gh.inject_secondary_rate_limit(REPO, count=None, retry_after=10, as_date=as_date)
    took, result = _execute(cli_proc, work, genv, "3")
    assert result.code == 1, result.stdout + result.stderr
    error = result.json()["steps"][0]["error"]
    assert "429 rate limited: GET /repos/acme/app" in error
    assert "waiting would pass the step's time limit of 3 s" in error
    assert took < 3 and len(gh.requests) == 1


# 07:27:30 GMT by the client's clock: a Retry-After date is read against it
CLOCK = datetime(2026, 10, 21, 7, 27, 30, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("retry_after", "waits"),
    [
        ("Wed, 21 Oct 2026 07:28:00 GMT", [30.0]),
        ("Wed, 21 Oct 2026 09:28:00 +0200", [30.0]),
        # RFC 9110's obsolete forms, which a recipient must read: RFC 850 and asctime (in
        # GMT, though it names no zone)
        ("Wednesday, 21-Oct-26 07:28:00 GMT", [30.0]),
        ("Wed Oct 21 07:28:00 2026", [30.0]),
        # a date already past waits a second, as Retry-After: 0 does
        ("Wed, 21 Oct 2026 07:00:00 GMT", [1.0]),
    ],
    ids=["imf", "offset", "rfc850", "asctime", "past"],
)
def test_a_retry_after_date_is_measured_against_the_clients_clock(
    gh: GitHubDouble, retry_after: str, waits: list[float]
) -> None:
    gh.inject(REPO, 429, kind="secondary_rate_limit", headers={"Retry-After": retry_after})
    endpoints = ep.resolve({"GITHUB_API_URL": gh.api_url}, None, None)
    slept: list[float] = []
    http = GitHubHTTP(endpoints, TOKEN, {}, sleep=slept.append, clock=lambda: CLOCK)
    try:
        response = http.request("GET", "/repos/acme/app")
    finally:
        http.close()
    assert response.status == 200 and slept == waits
    assert len(gh.requests) == 2


def test_a_retry_after_date_past_the_max_wait_fails_naming_it(gh: GitHubDouble) -> None:
    """07:29:00 is 90 s ahead of the client's clock: more than the 60 s it may wait."""
    limited = {"Retry-After": "Wed, 21 Oct 2026 07:29:00 GMT"}
    gh.inject(REPO, 429, count=None, kind="secondary_rate_limit", headers=limited)
    endpoints = ep.resolve({"GITHUB_API_URL": gh.api_url}, None, None)
    slept: list[float] = []
    http = GitHubHTTP(endpoints, TOKEN, {}, sleep=slept.append, clock=lambda: CLOCK)
    try:
        with pytest.raises(StepError) as failed:
            http.request("GET", "/repos/acme/app")
    finally:
        http.close()
    assert failed.value.message == (
        "429 rate limited: GET /repos/acme/app; retry after 2026-10-21 07:29:00 UTC "
        "(waiting would exceed 60 s)"
    )
    assert slept == [] and len(gh.requests) == 1


def test_endless_next_links_stop_after_100_pages(
    cli_proc: Any, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    """Issue 18, item 8a: a new Link rel="next" on every page (it looped forever)."""
    gh.inject_next_link(r"^/orgs/acme/repos$")
    result = cli_proc("--output", "json", "github", "repo", "list", "acme", extra_env=genv)
    assert result.code == 1, result.stdout + result.stderr
    error = result.json()["steps"][0]["error"]
    assert "GET /orgs/acme/repos has more than 100 pages" in error
    assert len(gh.requests) == 100
    # limit= stops before, and RUNTIME_GITHUB_MAX_PAGES sets another bound
    gh.reset_counters()
    limited = cli_proc("github", "repo", "list", "acme", "per_page=1", "limit=3", extra_env=genv)
    assert limited.code == 0, limited.stdout + limited.stderr
    assert len(gh.requests) == 3
    gh.reset_counters()
    fewer = cli_proc(
        "github", "repo", "list", "acme", extra_env={**genv, "RUNTIME_GITHUB_MAX_PAGES": "3"}
    )
    assert fewer.code == 1 and "more than 3 pages" in fewer.stdout + fewer.stderr
    assert len(gh.requests) == 3
    # a bound that is not a whole number of pages is refused before any request
    gh.reset_counters()
    for bad in ("0.5", "0", "-1", "many"):
        env = {**genv, "RUNTIME_GITHUB_MAX_PAGES": bad}
        refused = cli_proc("github", "repo", "list", "acme", extra_env=env)
        assert refused.code == 2  # invalid usage, said at plan time: no step has started
        assert f"RUNTIME_GITHUB_MAX_PAGES='{bad}' is not a whole number of 1 or more" in (
            refused.stderr
        )
    assert gh.requests == []


def test_a_repeated_next_url_fails_naming_it(
    cli_proc: Any, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    """A next page already read ends the list. The URL shown keeps its query's names,
    not their values (a signed link carries a secret), page and per_page excepted."""
    secret = "s3cr3t-signature"
    loop = f"{gh.api_url}/orgs/acme/repos?page=2&signature={secret}"
    gh.inject_next_link(r"^/orgs/acme/repos$", location=loop)
    result = cli_proc("--output", "json", "github", "repo", "list", "acme", extra_env=genv)
    assert result.code == 1, result.stdout + result.stderr
    error = result.json()["steps"][0]["error"]
    assert f"is {gh.api_url}/orgs/acme/repos?page=2&signature=..., a page already read" in error
    assert secret not in result.stdout + result.stderr
    assert len(gh.requests) == 2


def test_a_gzip_bomb_fails_with_memory_bounded(
    gh: GitHubDouble, genv: dict[str, str], env: dict[str, str], work: Path
) -> None:
    """A 2 MB gzip body that decodes to 2 GiB (issue 18: 4.2 GB of memory): reading stops
    past 32 MiB decoded, and the process's peak RSS stays under 256 MiB (about 200 MiB
    measured: httpx decodes a 64 KiB network read at once, up to ~66 MiB of zeros)."""
    gh.inject_gzip_bomb(REPO)
    measured = run_measured(
        [str(RUNTIME_BIN), "--output", "json", "github", "repo", "view", "acme/app"],
        {**env, **genv},
        work,
    )
    assert measured.code == 1, measured.stdout + measured.stderr
    error = json.loads(measured.stdout)["steps"][0]["error"]
    assert "the response to GET /repos/acme/app is over the 32 MiB limit" in error
    assert measured.peak_mib < 256, f"peak RSS {measured.peak_mib:.0f} MiB"


@pytest.mark.parametrize(
    ("url", "reason"),
    [("http://127.0.0.1:99999", "Port out of range"), ("http://[::1", "Invalid IPv6 URL")],
)
def test_a_github_api_url_that_is_not_a_url_is_refused_by_name(
    cli: Any, genv: dict[str, str], url: str, reason: str
) -> None:
    """urlsplit raises only when the port is read: each reader used to crash (exit 70)."""
    env = {**genv, "GITHUB_API_URL": url}
    step = cli("github", "repo", "view", "acme/app", extra_env=env)
    status = cli("auth", "status", extra_env=env)
    for result in (step, status):  # invalid usage both: no policy decided it
        text = result.stdout + result.stderr
        assert result.code == 2, text
        assert f"GITHUB_API_URL={url!r} is not a valid URL ({reason}" in text
        assert "internal error" not in text and "Traceback" not in text


def test_a_bad_client_setting_stops_a_run_before_its_first_step(
    cli: Any, gh: GitHubDouble, genv: dict[str, str], work: Path
) -> None:
    # a files step before the github one: it wrote its file, then the github step failed
    # on RUNTIME_GITHUB_TIMEOUT=abc (exit 1)
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n    args: [write, a.txt, x]\n"
            "  - provider: github\n    args: [repo, view, acme/app]\n"
        ),
    )
    for name, value in (
        ("RUNTIME_GITHUB_TIMEOUT", "abc"),
        ("RUNTIME_GITHUB_MAX_WAIT", "-1"),
        ("GITHUB_API_URL", "http://api.example.com"),
    ):
        result = cli("capability", "execute", "cap.md", extra_env={**genv, name: value})
        assert result.code == 2, result.stdout + result.stderr
        assert f"{name}=" in result.stderr or name in result.stderr
        assert "(step 2); nothing ran" in result.stderr
        assert not (work / "a.txt").exists()
    assert gh.requests == []


def test_a_redirect_to_a_location_that_is_not_a_url_fails_the_step(
    cli: Any, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    gh.inject(r"^/repos/acme/app$", 302, headers={"Location": "http://[::1/elsewhere"})
    result = cli("github", "repo", "view", "acme/app", extra_env=genv)
    text = result.stdout + result.stderr
    assert result.code == 1
    assert "302 redirect of GET /repos/acme/app points to 'http://[::1/elsewhere'" in text
    assert "not a valid URL" in text and "internal error" not in text


@pytest.mark.parametrize("url", ["http://me:hunter2pass@[::1", "ftp://me:hunter2pass@example.com"])
@pytest.mark.parametrize("output", [(), ("--output", "json")])
def test_a_refusal_quoting_a_url_does_not_show_its_password(
    cli: Any, genv: dict[str, str], url: str, output: tuple[str, ...]
) -> None:
    """Failures leave the process through one reporter, which redacts what they quote."""
    env = {**genv, "GITHUB_API_URL": url}
    refused = cli(*output, "github", "repo", "view", "acme/app", extra_env=env)
    text = refused.stdout + refused.stderr
    assert refused.code == 2, text
    assert "GITHUB_API_URL" in text
    if "[::1" in url:  # quoted whole in the message: the reporter redacts the password
        assert "[REDACTED]@" in text
    status = cli(*output, "auth", "status", extra_env=env)
    assert status.code == 2, status.stdout + status.stderr
    assert "hunter2pass" not in text + status.stdout + status.stderr
