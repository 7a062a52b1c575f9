"""The github provider against real GitHub responses recorded in ``@octokit/fixtures``.

Each test replays one scenario of the npm package ``@octokit/fixtures``
(``tests/npm``) on loopback with :class:`tests.github_fixtures_replay.FixtureReplay`
and runs the provider through the real CLI entry point with ``GITHUB_API_URL``
pointing at the replay server. The recordings are what api.github.com actually
answered (headers, ``Link`` pagination, redirects, error bodies), so these tests
catch assumptions the hand-written double might share with the provider.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from providers.github import endpoints as ep
from providers.github.client import GitHubHTTP
from tests.conftest import Result, check_schema
from tests.github_fixtures_replay import (
    FixtureReplay,
    FixturesNotInstalledError,
    Recording,
    fixtures_dir,
)

TOKEN = "ghp_" + "R3pl4y" * 6
AUTHORIZATION = f"Bearer {TOKEN}"
ORG = "octokit-fixture-org"


def require_fixtures() -> None:
    try:
        fixtures_dir()
    except FixturesNotInstalledError as exc:
        if os.environ.get("RUNTIME_REQUIRE_INTEGRATION") == "1":
            pytest.fail(f"{exc} (RUNTIME_REQUIRE_INTEGRATION=1 is set, so this is an error)")
        pytest.skip(str(exc))


@pytest.fixture
def replay() -> Iterator[Callable[..., Any]]:
    """``with replay(scenario, **options) as server:`` -- a started FixtureReplay."""
    require_fixtures()

    @contextmanager
    def start(scenario: str, **options: Any) -> Iterator[FixtureReplay]:
        with FixtureReplay(scenario, **options) as server:
            yield server

    yield start


def run(cli: Any, server: FixtureReplay, *args: str) -> tuple[Result, dict[str, Any]]:
    """``runtime --output json github ARGS`` against the replay server."""
    result = cli(
        "--output",
        "json",
        "github",
        *args,
        extra_env={
            "GITHUB_API_URL": server.base_url,
            "GITHUB_GRAPHQL_URL": server.base_url + "/graphql",
            "RUNTIME_GITHUB_TOKEN": TOKEN,
            "RUNTIME_GITHUB_MAX_WAIT": "1",
        },
    )
    assert TOKEN not in result.stdout + result.stderr, "the token leaked into the output"
    doc = result.json()
    check_schema(doc, "execute")
    assert len(doc["steps"]) == 1
    step: dict[str, Any] = doc["steps"][0]
    return result, step


def assert_replayed(server: FixtureReplay, *, all_served: bool = True) -> None:
    """No request missed the recordings, the token went to every replay-host request."""
    assert server.unmatched == [], [f"{r.method} {r.path}" for r in server.unmatched]
    if all_served:
        assert server.pending == [], [f"{r.method} {r.path}" for r in server.pending]
    for request in server.requests:
        if request.origin == "https://api.github.com":
            assert request.headers.get("authorization") == AUTHORIZATION, request


def recorded(server: FixtureReplay, method: str, path_prefix: str) -> list[Recording]:
    return [r for r in server.recordings if r.method == method and r.path.startswith(path_prefix)]


# -- get-repository ---------------------------------------------------------------------------


def test_repo_view_returns_the_recorded_repository(cli: Any, replay: Any) -> None:
    with replay("get-repository") as server:
        result, step = run(cli, server, "repo", "view", f"{ORG}/hello-world")
        assert result.code == 0, step
        (recording,) = server.recordings
        expected = recording.json_response(server)
        assert step["status"] == "ok"
        assert step["http_status"] == 200
        assert step["data"] == expected
        assert step["data"]["full_name"] == f"{ORG}/hello-world"
        assert step["data"]["id"] == expected["id"]
        # API URLs in the body point at the replay server, web URLs are untouched.
        assert step["data"]["url"] == f"{server.base_url}/repos/{ORG}/hello-world"
        assert step["data"]["html_url"] == f"https://github.com/{ORG}/hello-world"
        assert f"full_name: {ORG}/hello-world" in step["output"]
        assert f"default_branch: {expected['default_branch']}" in step["output"]
        assert [(r.method, r.path) for r in server.requests] == [
            ("GET", f"/repos/{ORG}/hello-world")
        ]
        headers = server.requests[0].headers
        assert headers["accept"] == "application/vnd.github+json"
        assert headers["x-github-api-version"] == "2022-11-28"
        assert_replayed(server)


# -- paginate-issues ---------------------------------------------------------------------------
#
# The scenario recorded GET /repos/{owner}/{repo}/issues: the client's paginate() is driven
# with it directly, and `issue list OWNER/REPO` sends it.


def _pages(server: FixtureReplay) -> list[list[Any]]:
    pages = [r.json_response(server) for r in server.recordings]
    assert len(pages) == 5 and all(isinstance(p, list) for p in pages)
    return pages


def test_paginate_follows_every_recorded_link_next(replay: Any) -> None:
    with replay("paginate-issues") as server:
        pages = _pages(server)
        http = GitHubHTTP(ep.resolve({"GITHUB_API_URL": server.base_url}, None, None), TOKEN, {})
        try:
            items, status = http.paginate(
                f"/repos/{ORG}/paginate-issues/issues", {"per_page": "3"}, None
            )
        finally:
            http.close()
        assert status == 200
        assert len(items) == sum(len(p) for p in pages) == 13
        assert items == [item for page in pages for item in page]
        assert [i["number"] for i in items] == list(range(13, 0, -1))
        # Each page was requested once, in order, exactly as recorded (the next URLs come
        # from the recorded Link headers, /repositories/1000/issues?per_page=3&page=N).
        assert [r.path for r in server.requests] == [r.path for r in server.recordings]
        assert [r.recording for r in server.requests] == [0, 1, 2, 3, 4]
        assert_replayed(server)


def test_paginate_stops_at_the_limit(replay: Any) -> None:
    with replay("paginate-issues") as server:
        pages = _pages(server)
        http = GitHubHTTP(ep.resolve({"GITHUB_API_URL": server.base_url}, None, None), TOKEN, {})
        try:
            items, _ = http.paginate(f"/repos/{ORG}/paginate-issues/issues", {"per_page": "3"}, 4)
        finally:
            http.close()
        assert items == (pages[0] + pages[1])[:4]
        assert len(server.requests) == 2
        assert_replayed(server, all_served=False)


def test_issue_list_follows_recorded_link_headers(cli: Any, replay: Any) -> None:
    with replay("paginate-issues") as server:
        pages = _pages(server)
        assert not any("pull_request" in item for page in pages for item in page)
        result, step = run(cli, server, "issue", "list", f"{ORG}/paginate-issues", "per_page=3")
        assert result.code == 0, step
        assert step["http_status"] == 200
        assert step["data"] == [item for page in pages for item in page]
        assert "(13 items)" in step["output"]
        assert f"{ORG}/paginate-issues#13" in step["output"]  # from its repository_url
        assert [r.path for r in server.requests] == [r.path for r in server.recordings]
        assert_replayed(server)


def test_issue_list_limit_reads_only_the_pages_it_needs(cli: Any, replay: Any) -> None:
    with replay("paginate-issues") as server:
        pages = _pages(server)
        result, step = run(
            cli, server, "issue", "list", f"{ORG}/paginate-issues", "per_page=3", "--limit", "7"
        )
        assert result.code == 0, step
        assert step["data"] == (pages[0] + pages[1] + pages[2])[:7]
        assert len(server.requests) == 3
        assert_replayed(server, all_served=False)


# -- errors ------------------------------------------------------------------------------------


def test_recorded_422_fails_the_step_with_status_and_message(cli: Any, replay: Any) -> None:
    with replay("errors") as server:
        (recording,) = server.recordings
        body = recording.response
        assert recording.status == 422 and body["message"] == "Validation Failed"
        result, step = run(
            cli, server, "api", "POST", f"/repos/{ORG}/errors/labels", "name=foo", "color=invalid"
        )
        assert result.code == 1
        assert step["status"] == "failed"
        assert result.json()["exit_code"] == 1
        assert step["http_status"] == 422
        assert "422" in step["error"]
        assert "Validation Failed" in step["error"]
        assert f"POST /repos/{ORG}/errors/labels" in step["error"]
        assert body["documentation_url"] in (step["hint"] or "")
        assert step["data"]["status"] == 422
        assert step["data"]["message"].startswith("Validation Failed")
        assert step["data"]["documentation_url"] == body["documentation_url"]
        # The write went out once (never retried) with the recorded body.
        assert len(server.requests) == 1
        assert (
            server.requests[0].json()
            == recording.request_body
            == {
                "name": "foo",
                "color": "invalid",
            }
        )
        assert_replayed(server)


# -- create-file -------------------------------------------------------------------------------

CONTENTS = r"/repos/[^/]+/[^/]+/contents/"


def test_file_put_creates_the_recorded_file(cli: Any, replay: Any) -> None:
    # The scenario recorded only the PUT; the provider first GETs the file to learn its sha,
    # which GitHub answers 404 for a new file.
    with replay("create-file", not_found=[("GET", CONTENTS)]) as server:
        (recording,) = server.recordings
        assert recording.request_body["content"] == base64.b64encode(b"Test content").decode()
        result, step = run(
            cli,
            server,
            "file",
            "put",
            f"{ORG}/create-file",
            "test.txt",
            "message=create test.txt",
            "content=Test content",
        )
        assert result.code == 0, step
        assert step["http_status"] == 201
        assert step["data"] == recording.json_response(server)
        assert step["output"] == f"created test.txt in {ORG}/create-file (commit 000000000000)"
        route = f"/repos/{ORG}/create-file/contents/test.txt"
        assert [(r.method, r.path) for r in server.requests] == [("GET", route), ("PUT", route)]
        get, put = server.requests
        assert get.recording is None  # the synthetic 404
        assert put.recording == recording.index
        sent = put.json()
        assert sent == {"message": "create test.txt", "content": sent["content"]}
        assert base64.b64decode(sent["content"]).decode("utf-8") == "Test content"
        assert put.headers["content-type"].startswith("application/json")
        assert_replayed(server)


# -- more recorded behaviour: redirects, query encoding, empty bodies --------------------------


def test_repo_view_follows_the_recorded_301_of_a_renamed_repository(cli: Any, replay: Any) -> None:
    with replay("rename-repository") as server:
        result, step = run(cli, server, "repo", "view", f"{ORG}/rename-repository")
        assert result.code == 0, step
        target = recorded(server, "GET", "/repositories/1000")[0]
        assert step["data"] == target.json_response(server)
        assert step["data"]["full_name"] == f"{ORG}/rename-repository-newname"
        assert [(r.method, r.path) for r in server.requests] == [
            ("GET", f"/repos/{ORG}/rename-repository"),
            ("GET", "/repositories/1000"),
        ]
        assert_replayed(server, all_served=False)


def test_write_follows_a_same_host_307_with_its_body(cli: Any, replay: Any) -> None:
    with replay("rename-repository") as server:
        result, step = run(
            cli,
            server,
            "api",
            "PATCH",
            f"/repos/{ORG}/rename-repository",
            "name=rename-repository-newname",
            "description=test description",
        )
        assert result.code == 0, step
        assert step["data"]["full_name"] == f"{ORG}/rename-repository-newname"
        first, second = server.requests
        assert server.recordings[first.recording or 0].status == 307
        assert (second.method, second.path) == ("PATCH", "/repositories/1000")
        assert (
            first.json()
            == second.json()
            == {
                "name": "rename-repository-newname",
                "description": "test description",
            }
        )
        assert_replayed(server, all_served=False)


def test_redirect_to_another_host_does_not_carry_the_token(cli: Any, replay: Any) -> None:
    # GET .../tarball/main answers 302 to codeload.github.com (its own replay server here).
    with replay("get-archive") as server:
        result, step = run(cli, server, "api", "GET", f"/repos/{ORG}/get-archive/tarball/main")
        assert result.code == 0, step
        assert step["http_status"] == 200
        api, codeload = server.requests
        assert api.origin == "https://api.github.com"
        assert api.headers.get("authorization") == AUTHORIZATION
        assert codeload.origin == "https://codeload.github.com"
        assert "authorization" not in codeload.headers
        assert_replayed(server)


def test_search_query_matches_the_recorded_encoding(cli: Any, replay: Any) -> None:
    with replay("search-issues") as server:
        (recording,) = server.recordings
        result, step = run(
            cli, server, "api", "GET", "/search/issues", f"q=sesame repo:{ORG}/search-issues"
        )
        assert result.code == 0, step
        assert step["data"] == recording.json_response(server)
        assert step["data"]["total_count"] == 2
        assert_replayed(server)


def test_empty_205_response(cli: Any, replay: Any) -> None:
    with replay("mark-notifications-as-read") as server:
        result, step = run(cli, server, "api", "PUT", "/notifications")
        assert result.code == 0, step
        assert step["http_status"] == 205
        assert step["data"] is None
        assert_replayed(server)


def test_replay_server_reports_unrecorded_requests(replay: Any) -> None:
    """The helper itself: an unrecorded request is a 501 listed in ``unmatched``."""
    with replay("get-repository") as server:
        http = GitHubHTTP(ep.resolve({"GITHUB_API_URL": server.base_url}, None, None), TOKEN, {})
        try:
            response = http.request("GET", f"/repos/{ORG}/other", ok_statuses=(501,))
        finally:
            http.close()
        assert response.status == 501
        assert [r.path for r in server.unmatched] == [f"/repos/{ORG}/other"]
        assert len(server.pending) == 1
