"""What the GitHub client puts on the wire and how it reads what comes back.

The client speaks to httpcore directly (bench/, figure 7d); before, it used
``httpx.Client``. These tests hold it to httpx's behaviour against the loopback
double: the same requests arrive, compressed bodies are read, a body its
``Content-Encoding`` does not describe is a clear step failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from providers.github import endpoints as ep
from providers.github.client import GitHubHTTP
from runtime import __version__
from tests.github_double import GitHubDouble

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
    # httpx.Client as the client was configured before it spoke to httpcore
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


@pytest.mark.parametrize("args", [("repo", "view", "acme/app"), ("repo", "list", "acme")])
def test_a_github_step_does_not_import_httpx(
    gh: GitHubDouble, genv: dict[str, str], tmp_path: Path, args: tuple[str, ...]
) -> None:
    """httpx imports click and rich with it (its command line); the client needs neither."""
    env = {**os.environ, **genv, "RUNTIME_HOME": str(tmp_path / "home")}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "github", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, out.stderr
    modules = set(report["modules"])
    assert "httpcore" in modules  # the request went out
    assert not {m for m in modules if m.split(".")[0] in ("httpx", "rich", "click")}


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
    for result, code in ((step, 3), (status, 2)):
        text = result.stdout + result.stderr
        assert result.code == code, text
        assert f"GITHUB_API_URL={url!r} is not a valid URL ({reason}" in text
        assert "internal error" not in text and "Traceback" not in text


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
    assert refused.code == 3, text
    assert "GITHUB_API_URL" in text
    if "[::1" in url:  # quoted whole in the message: the reporter redacts the password
        assert "[REDACTED]@" in text
    status = cli(*output, "auth", "status", extra_env=env)
    assert status.code == 2, status.stdout + status.stderr
    assert "hunter2pass" not in text + status.stdout + status.stderr
