"""REST v3 routes of the GitHub double.

Handlers receive a :class:`Request` and return a :class:`Response`; they raise
:class:`ApiError` for GitHub-style error answers.  JSON shapes follow GitHub's
REST API (the commonly used subset of fields).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import math
import re
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlencode

from .http_types import ApiError, Request, Response
from .state import (
    Issue,
    Notification,
    Org,
    PullRequest,
    Release,
    Repo,
    RepoFile,
    Run,
    State,
    Team,
    User,
    Workflow,
    blob_sha,
    fake_sha,
    iso,
    node_id,
    parse_time,
    utcnow,
)

__all__ = ["RestApi", "repo_json", "user_json"]

Handler = Callable[..., Response]

_DOCS_REPOS = "https://docs.github.com/rest/repos/repos"
_DOCS_CONTENTS = "https://docs.github.com/rest/repos/contents"
_DOCS_ISSUES = "https://docs.github.com/rest/issues/issues"
_DOCS_ACTIONS = "https://docs.github.com/rest/actions/workflows"

_COMMUNITY_FILES: dict[str, tuple[str, ...]] = {
    "readme": ("README", "README.md", "README.rst", "README.txt", "readme.md"),
    "license": ("LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING"),
    "contributing": ("CONTRIBUTING.md", "CONTRIBUTING", "CONTRIBUTING.rst"),
    "code_of_conduct_file": ("CODE_OF_CONDUCT.md", "CODE_OF_CONDUCT"),
    "pull_request_template": ("PULL_REQUEST_TEMPLATE.md", "pull_request_template.md"),
}
_COMMUNITY_DIRS = ("", ".github/", "docs/")


# ------------------------------------------------------------------ helpers
def _bool(value: str | None, default: bool = False) -> bool:
    if value is None:
        return default
    return value.lower() in ("1", "true", "yes")


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _account_type(account: User | Org) -> str:
    return "Organization" if isinstance(account, Org) else account.type


# Hypermedia URL templates GitHub embeds in objects (relative to the object URL).
_USER_URLS = {
    "followers_url": "/followers",
    "following_url": "/following{/other_user}",
    "gists_url": "/gists{/gist_id}",
    "starred_url": "/starred{/owner}{/repo}",
    "subscriptions_url": "/subscriptions",
    "organizations_url": "/orgs",
    "repos_url": "/repos",
    "events_url": "/events{/privacy}",
    "received_events_url": "/received_events",
}
_ORG_URLS = {
    "repos_url": "/repos",
    "events_url": "/events",
    "hooks_url": "/hooks",
    "issues_url": "/issues",
    "members_url": "/members{/member}",
    "public_members_url": "/public_members{/member}",
}
_REPO_URLS = {
    "forks_url": "/forks",
    "keys_url": "/keys{/key_id}",
    "collaborators_url": "/collaborators{/collaborator}",
    "teams_url": "/teams",
    "hooks_url": "/hooks",
    "issue_events_url": "/issues/events{/number}",
    "events_url": "/events",
    "assignees_url": "/assignees{/user}",
    "branches_url": "/branches{/branch}",
    "tags_url": "/tags",
    "blobs_url": "/git/blobs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "trees_url": "/git/trees{/sha}",
    "statuses_url": "/statuses/{sha}",
    "languages_url": "/languages",
    "stargazers_url": "/stargazers",
    "contributors_url": "/contributors",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "commits_url": "/commits{/sha}",
    "git_commits_url": "/git/commits{/sha}",
    "comments_url": "/comments{/number}",
    "issue_comment_url": "/issues/comments{/number}",
    "contents_url": "/contents/{+path}",
    "compare_url": "/compare/{base}...{head}",
    "merges_url": "/merges",
    "archive_url": "/{archive_format}{/ref}",
    "downloads_url": "/downloads",
    "issues_url": "/issues{/number}",
    "pulls_url": "/pulls{/number}",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "labels_url": "/labels{/name}",
    "releases_url": "/releases{/id}",
    "deployments_url": "/deployments",
}


def _urls(base: str, templates: dict[str, str]) -> dict[str, str]:
    return {key: base + suffix for key, suffix in templates.items()}


def user_json(account: User | Org, req: Request) -> dict[str, Any]:
    """The "simple user" shape embedded in most objects."""
    api, web = req.api_root, req.web_root
    return {
        "login": account.login,
        "id": account.id,
        "node_id": account.node_id,
        "avatar_url": f"{web}/avatars/u/{account.id}",
        "gravatar_id": "",
        "url": f"{api}/users/{account.login}",
        "html_url": f"{web}/{account.login}",
        **_urls(f"{api}/users/{account.login}", _USER_URLS),
        "type": _account_type(account),
        "site_admin": getattr(account, "site_admin", False),
    }


def org_json(org: Org, req: Request) -> dict[str, Any]:
    """The "organization simple" shape."""
    api = req.api_root
    return {
        "login": org.login,
        "id": org.id,
        "node_id": org.node_id,
        "url": f"{api}/orgs/{org.login}",
        **_urls(f"{api}/orgs/{org.login}", _ORG_URLS),
        "avatar_url": f"{req.web_root}/avatars/u/{org.id}",
        "description": org.description,
    }


def repo_json(repo: Repo, req: Request, state: State) -> dict[str, Any]:
    api, web = req.api_root, req.web_root
    owner = state.ensure_account(repo.owner)
    open_issues = sum(1 for issue in repo.issues.values() if issue.state == "open")
    perm = state.permission(repo, req.viewer)
    levels = ["pull", "triage", "push", "maintain", "admin"]
    rank = levels.index(perm) if perm in levels else -1
    full = repo.full_name
    return {
        "id": repo.id,
        "node_id": repo.node_id,
        "name": repo.name,
        "full_name": full,
        "private": repo.private,
        "owner": user_json(owner, req),
        "html_url": f"{web}/{full}",
        "description": repo.description,
        "fork": repo.fork,
        "url": f"{api}/repos/{full}",
        **_urls(f"{api}/repos/{full}", _REPO_URLS),
        "git_url": f"git://{req.web_root.split('://', 1)[1]}/{full}.git",
        "ssh_url": f"git@{req.web_root.split('://', 1)[1].split(':')[0]}:{full}.git",
        "clone_url": f"{web}/{full}.git",
        "svn_url": f"{web}/{full}",
        "mirror_url": None,
        "homepage": repo.homepage,
        "size": repo.size,
        "stargazers_count": repo.stargazers_count,
        "watchers_count": repo.watchers_count or repo.stargazers_count,
        "language": repo.language,
        "has_issues": repo.has_issues,
        "has_projects": repo.has_projects,
        "has_downloads": True,
        "has_wiki": repo.has_wiki,
        "has_pages": False,
        "has_discussions": repo.has_discussions,
        "forks_count": repo.forks_count,
        "archived": repo.archived,
        "disabled": repo.disabled,
        "open_issues_count": open_issues,
        "license": _license_json(repo.license),
        "allow_forking": True,
        "is_template": repo.is_template,
        "topics": list(repo.topics),
        "visibility": repo.effective_visibility,
        "forks": repo.forks_count,
        "open_issues": open_issues,
        "watchers": repo.watchers_count or repo.stargazers_count,
        "default_branch": repo.default_branch,
        "created_at": iso(repo.created_at),
        "updated_at": iso(repo.updated_at or repo.created_at),
        "pushed_at": iso(repo.pushed_at or repo.created_at),
        "permissions": {level: rank >= i for i, level in enumerate(levels)},
        "network_count": repo.forks_count,
        "subscribers_count": repo.watchers_count or repo.stargazers_count,
    }


def _license_json(spdx: str | None) -> dict[str, Any] | None:
    if not spdx:
        return None
    return {"key": spdx.lower(), "name": spdx, "spdx_id": spdx, "url": None, "node_id": ""}


def label_json(name: str, repo: Repo, req: Request) -> dict[str, Any]:
    ident = zlib.crc32(f"{repo.full_name}:{name}".encode())
    return {
        "id": ident,
        "node_id": node_id("Label", ident),
        "name": name,
        "color": "ededed",
        "default": False,
        "description": None,
        "url": f"{req.api_root}/repos/{repo.full_name}/labels/{name}",
    }


def _in_milestone(issue: Issue, milestone: str) -> bool:
    """GitHub's ``milestone`` parameter: a milestone's number, ``*`` (any) or ``none``."""
    if milestone == "none":
        return issue.milestone_number is None
    if milestone == "*":
        return issue.milestone_number is not None
    return str(issue.milestone_number) == milestone


def issue_json(issue: Issue, repo: Repo, req: Request, state: State) -> dict[str, Any]:
    api, web = req.api_root, req.web_root
    full = repo.full_name
    kind = "pull" if issue.is_pull else "issues"
    body: dict[str, Any] = {
        "id": issue.id,
        "node_id": issue.node_id,
        "url": f"{api}/repos/{full}/issues/{issue.number}",
        "repository_url": f"{api}/repos/{full}",
        "labels_url": f"{api}/repos/{full}/issues/{issue.number}/labels{{/name}}",
        "comments_url": f"{api}/repos/{full}/issues/{issue.number}/comments",
        "events_url": f"{api}/repos/{full}/issues/{issue.number}/events",
        "html_url": f"{web}/{full}/{kind}/{issue.number}",
        "number": issue.number,
        "state": issue.state,
        "state_reason": issue.state_reason,
        "title": issue.title,
        "body": issue.body,
        "user": user_json(state.ensure_account(issue.user), req),
        "labels": [label_json(name, repo, req) for name in issue.labels],
        "assignee": user_json(state.ensure_account(issue.assignees[0]), req)
        if issue.assignees
        else None,
        "assignees": [user_json(state.ensure_account(login), req) for login in issue.assignees],
        "milestone": None,
        "locked": issue.locked,
        "comments": issue.comments,
        "created_at": iso(issue.created_at),
        "updated_at": iso(issue.updated_at or issue.created_at),
        "closed_at": iso(issue.closed_at),
        "author_association": "OWNER"
        if issue.user.lower() == repo.owner.lower()
        else "CONTRIBUTOR",
    }
    if isinstance(issue, PullRequest):
        body["pull_request"] = {
            "url": f"{api}/repos/{full}/pulls/{issue.number}",
            "html_url": f"{web}/{full}/pull/{issue.number}",
            "diff_url": f"{web}/{full}/pull/{issue.number}.diff",
            "patch_url": f"{web}/{full}/pull/{issue.number}.patch",
            "merged_at": iso(issue.merged_at),
        }
        body["draft"] = issue.draft
    return body


def pull_json(pull: PullRequest, repo: Repo, req: Request, state: State) -> dict[str, Any]:
    api, web = req.api_root, req.web_root
    full = repo.full_name
    head_owner_login = pull.head_owner or repo.owner
    head_repo = state.repo(head_owner_login, repo.name) or repo
    body = {
        "id": pull.id,
        "node_id": pull.node_id,
        "url": f"{api}/repos/{full}/pulls/{pull.number}",
        "html_url": f"{web}/{full}/pull/{pull.number}",
        "diff_url": f"{web}/{full}/pull/{pull.number}.diff",
        "patch_url": f"{web}/{full}/pull/{pull.number}.patch",
        "issue_url": f"{api}/repos/{full}/issues/{pull.number}",
        "commits_url": f"{api}/repos/{full}/pulls/{pull.number}/commits",
        "review_comments_url": f"{api}/repos/{full}/pulls/{pull.number}/comments",
        "review_comment_url": f"{api}/repos/{full}/pulls/comments{{/number}}",
        "comments_url": f"{api}/repos/{full}/issues/{pull.number}/comments",
        "statuses_url": f"{api}/repos/{full}/statuses/{pull.head_sha}",
        "_links": {
            "self": {"href": f"{api}/repos/{full}/pulls/{pull.number}"},
            "html": {"href": f"{req.web_root}/{full}/pull/{pull.number}"},
            "issue": {"href": f"{api}/repos/{full}/issues/{pull.number}"},
            "comments": {"href": f"{api}/repos/{full}/issues/{pull.number}/comments"},
            "review_comments": {"href": f"{api}/repos/{full}/pulls/{pull.number}/comments"},
            "review_comment": {"href": f"{api}/repos/{full}/pulls/comments{{/number}}"},
            "commits": {"href": f"{api}/repos/{full}/pulls/{pull.number}/commits"},
            "statuses": {"href": f"{api}/repos/{full}/statuses/{pull.head_sha}"},
        },
        "number": pull.number,
        "state": pull.state,
        "locked": pull.locked,
        "title": pull.title,
        "user": user_json(state.ensure_account(pull.user), req),
        "body": pull.body,
        "labels": [label_json(name, repo, req) for name in pull.labels],
        "assignee": user_json(state.ensure_account(pull.assignees[0]), req)
        if pull.assignees
        else None,
        "assignees": [user_json(state.ensure_account(login), req) for login in pull.assignees],
        "milestone": None,
        "auto_merge": None,
        "merge_commit_sha": fake_sha("merge", full, pull.number) if pull.merged else None,
        "requested_reviewers": [
            user_json(state.ensure_account(login), req) for login in pull.requested_reviewers
        ],
        "created_at": iso(pull.created_at),
        "updated_at": iso(pull.updated_at or pull.created_at),
        "closed_at": iso(pull.closed_at),
        "merged_at": iso(pull.merged_at),
        "draft": pull.draft,
        "head": {
            "label": f"{head_owner_login}:{pull.head}",
            "ref": pull.head,
            "sha": pull.head_sha,
            "user": user_json(state.ensure_account(head_owner_login), req),
            "repo": repo_json(head_repo, req, state),
        },
        "base": {
            "label": f"{repo.owner}:{pull.base}",
            "ref": pull.base,
            "sha": repo.branch_head(pull.base),
            "user": user_json(state.ensure_account(repo.owner), req),
            "repo": repo_json(repo, req, state),
        },
        "author_association": "OWNER" if pull.user.lower() == repo.owner.lower() else "CONTRIBUTOR",
        "merged": pull.merged,
        "merged_by": user_json(state.ensure_account(repo.owner), req) if pull.merged else None,
        "mergeable": pull.mergeable,
        "mergeable_state": {True: "clean", False: "dirty", None: "unknown"}[pull.mergeable],
        "maintainer_can_modify": False,
        "review_comments": 0,
        "comments": pull.comments,
        "commits": pull.commits,
        "additions": pull.additions,
        "deletions": pull.deletions,
        "changed_files": pull.changed_files,
    }
    return body


def release_json(release: Release, repo: Repo, req: Request, state: State) -> dict[str, Any]:
    full = repo.full_name
    return {
        "id": release.id,
        "node_id": release.node_id,
        "url": f"{req.api_root}/repos/{full}/releases/{release.id}",
        "html_url": f"{req.web_root}/{full}/releases/tag/{release.tag_name}",
        "tag_name": release.tag_name,
        "target_commitish": release.target_commitish,
        "name": release.name,
        "body": release.body,
        "draft": release.draft,
        "prerelease": release.prerelease,
        "created_at": iso(release.created_at),
        "published_at": iso(release.published_at),
        "author": user_json(state.ensure_account(release.author), req),
        "assets": [],
        "assets_url": f"{req.api_root}/repos/{full}/releases/{release.id}/assets",
        "upload_url": f"{req.web_root}/uploads/repos/{full}/releases/{release.id}/assets{{?name,label}}",
        "tarball_url": f"{req.api_root}/repos/{full}/tarball/{release.tag_name}",
        "zipball_url": f"{req.api_root}/repos/{full}/zipball/{release.tag_name}",
    }


def workflow_json(workflow: Workflow, repo: Repo, req: Request) -> dict[str, Any]:
    full = repo.full_name
    return {
        "id": workflow.id,
        "node_id": workflow.node_id,
        "name": workflow.name,
        "path": workflow.path,
        "state": workflow.state,
        "created_at": iso(workflow.created_at),
        "updated_at": iso(workflow.updated_at),
        "url": f"{req.api_root}/repos/{full}/actions/workflows/{workflow.id}",
        "html_url": f"{req.web_root}/{full}/blob/{repo.default_branch}/{workflow.path}",
        "badge_url": f"{req.web_root}/{full}/workflows/{workflow.name}/badge.svg",
    }


def run_json(run: Run, repo: Repo, req: Request, state: State) -> dict[str, Any]:
    full = repo.full_name
    api = req.api_root
    workflow = repo.workflows.get(run.workflow_id)
    actor = user_json(state.ensure_account(run.actor), req)
    return {
        "id": run.id,
        "name": run.name,
        "node_id": run.node_id,
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": workflow.path if workflow else "",
        "display_title": run.display_title or run.name,
        "run_number": run.run_number,
        "event": run.event,
        "status": run.status,
        "conclusion": run.conclusion,
        "workflow_id": run.workflow_id,
        "check_suite_id": run.id + 1,
        "url": f"{api}/repos/{full}/actions/runs/{run.id}",
        "html_url": f"{req.web_root}/{full}/actions/runs/{run.id}",
        "pull_requests": [],
        "created_at": iso(run.created_at),
        "updated_at": iso(run.updated_at or run.created_at),
        "actor": actor,
        "triggering_actor": actor,
        "run_attempt": run.run_attempt,
        "run_started_at": iso(run.created_at),
        "jobs_url": f"{api}/repos/{full}/actions/runs/{run.id}/jobs",
        "artifacts_url": f"{api}/repos/{full}/actions/runs/{run.id}/artifacts",
        "cancel_url": f"{api}/repos/{full}/actions/runs/{run.id}/cancel",
        "rerun_url": f"{api}/repos/{full}/actions/runs/{run.id}/rerun",
        "check_suite_url": f"{api}/repos/{full}/check-suites/{run.id + 1}",
        "logs_url": f"{api}/repos/{full}/actions/runs/{run.id}/logs",
        "workflow_url": f"{api}/repos/{full}/actions/workflows/{run.workflow_id}",
        "head_commit": {
            "id": run.head_sha,
            "tree_id": fake_sha("tree", run.head_sha),
            "message": run.display_title or run.name,
            "timestamp": iso(run.created_at),
            "author": {"name": run.actor, "email": f"{run.actor}@users.noreply.github.com"},
            "committer": {"name": run.actor, "email": f"{run.actor}@users.noreply.github.com"},
        },
        "repository": _minimal_repo_json(repo, req, state),
        "head_repository": _minimal_repo_json(repo, req, state),
    }


def _minimal_repo_json(repo: Repo, req: Request, state: State) -> dict[str, Any]:
    owner = state.ensure_account(repo.owner)
    return {
        "id": repo.id,
        "node_id": repo.node_id,
        "name": repo.name,
        "full_name": repo.full_name,
        "private": repo.private,
        "owner": user_json(owner, req),
        "html_url": f"{req.web_root}/{repo.full_name}",
        "description": repo.description,
        "fork": repo.fork,
        "url": f"{req.api_root}/repos/{repo.full_name}",
        **_urls(f"{req.api_root}/repos/{repo.full_name}", _REPO_URLS),
    }


def team_json(team: Team, req: Request) -> dict[str, Any]:
    api = req.api_root
    return {
        "id": team.id,
        "node_id": team.node_id,
        "url": f"{api}/orgs/{team.org}/teams/{team.slug}",
        "html_url": f"{req.web_root}/orgs/{team.org}/teams/{team.slug}",
        "name": team.name,
        "slug": team.slug,
        "description": team.description,
        "privacy": team.privacy,
        "notification_setting": "notifications_enabled",
        "permission": team.permission,
        "type": "organization",
        "members_url": f"{api}/orgs/{team.org}/teams/{team.slug}/members{{/member}}",
        "repositories_url": f"{api}/orgs/{team.org}/teams/{team.slug}/repos",
        "parent": None,
    }


def notification_json(note: Notification, repo: Repo, req: Request, state: State) -> dict[str, Any]:
    api = req.api_root
    subject_url: str | None = None
    if note.subject_number is not None:
        segment = "pulls" if note.type == "PullRequest" else "issues"
        subject_url = f"{api}/repos/{repo.full_name}/{segment}/{note.subject_number}"
    return {
        "id": note.id,
        "unread": note.unread,
        "reason": note.reason,
        "updated_at": iso(note.updated_at),
        "last_read_at": iso(note.last_read_at),
        "subject": {
            "title": note.title,
            "url": subject_url,
            "latest_comment_url": subject_url,
            "type": note.type,
        },
        "repository": _minimal_repo_json(repo, req, state),
        "url": f"{api}/notifications/threads/{note.id}",
        "subscription_url": f"{api}/notifications/threads/{note.id}/subscription",
    }


def file_json(
    repo: Repo, path: str, entry: RepoFile, ref: str, req: Request, *, with_content: bool
) -> dict[str, Any]:
    full = repo.full_name
    url = f"{req.api_root}/repos/{full}/contents/{path}?ref={ref}"
    html = f"{req.web_root}/{full}/blob/{ref}/{path}"
    git = f"{req.api_root}/repos/{full}/git/blobs/{entry.sha}"
    body: dict[str, Any] = {
        "type": "file",
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": entry.sha,
        "size": len(entry.content),
        "url": url,
        "html_url": html,
        "git_url": git,
        "download_url": f"{req.web_root}/raw/{full}/{ref}/{path}",
        "_links": {"self": url, "git": git, "html": html},
    }
    if with_content:
        encoded = base64.b64encode(entry.content).decode()
        body["content"] = "\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60)) + "\n"
        body["encoding"] = "base64"
    return body


def _dir_json(repo: Repo, path: str, ref: str, req: Request) -> dict[str, Any]:
    full = repo.full_name
    url = f"{req.api_root}/repos/{full}/contents/{path}?ref={ref}"
    sha = fake_sha("tree", full, ref, path)
    return {
        "type": "dir",
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": sha,
        "size": 0,
        "url": url,
        "html_url": f"{req.web_root}/{full}/tree/{ref}/{path}",
        "git_url": f"{req.api_root}/repos/{full}/git/trees/{sha}",
        "download_url": None,
        "_links": {"self": url},
    }


# ------------------------------------------------------------------ archives
#: What GET /zen answers (GitHub picks one of its sayings; the double always this one).
ZEN = "Design for failure."


def archive(repo: Repo, branch: str, kind: str) -> bytes:
    """The files of ``branch`` as GitHub's tarball (gzip'd tar) or zipball, under a
    ``OWNER-REPO-SHA/`` folder; the same bytes for the same files (no timestamps)."""
    files = repo.branches.get(branch, {})
    top = f"{repo.owner}-{repo.name}-{fake_sha(repo.full_name, branch)[:7]}/"
    out = io.BytesIO()
    if kind == "zipball":
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zipped:
            for path in sorted(files):
                zipped.writestr(zipfile.ZipInfo(top + path), files[path].content)
        return out.getvalue()
    with (
        gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gzipped,
        tarfile.open(fileobj=gzipped, mode="w") as tar,
    ):
        for path in sorted(files):
            info = tarfile.TarInfo(top + path)
            info.size = len(files[path].content)
            tar.addfile(info, io.BytesIO(files[path].content))
    return out.getvalue()


# ------------------------------------------------------------------- router
class RestApi:
    """Routes REST requests to handlers backed by :class:`State`."""

    def __init__(
        self,
        state: State,
        scopes: Callable[[], Sequence[str]],
        rate_limits: Callable[[], dict[str, Any]],
    ) -> None:
        self.state = state
        self._scopes = scopes
        self._rate_limits = rate_limits
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        #: (method, template) of every route, e.g. ("GET", "/repos/{owner}/{repo}").
        self.templates: list[tuple[str, str]] = []
        r = self._route
        r("GET", "/", self.root)
        r("GET", "/rate_limit", self.rate_limit)
        r("GET", "/user", self.get_viewer)
        r("GET", "/users/{login}", self.get_user)
        r("GET", "/user/orgs", self.list_viewer_orgs)
        r("GET", "/user/repos", self.list_viewer_repos)
        r("POST", "/user/repos", self.create_viewer_repo)
        r("GET", "/user/issues", self.list_viewer_issues)
        r("GET", "/users/{login}/repos", self.list_user_repos)
        r("GET", "/orgs/{org}", self.get_org)
        r("GET", "/orgs/{org}/repos", self.list_org_repos)
        r("POST", "/orgs/{org}/repos", self.create_org_repo)
        r("GET", "/orgs/{org}/teams", self.list_teams)
        r("GET", "/orgs/{org}/teams/{slug}", self.get_team)
        r("GET", "/orgs/{org}/issues", self.list_org_issues)
        r("GET", "/issues", self.list_viewer_issues)
        r("GET", "/notifications", self.list_notifications)
        r("PATCH", "/notifications/threads/{thread}", self.mark_thread_read)
        r("GET", "/repos/{owner}/{repo}", self.get_repo)
        r("DELETE", "/repos/{owner}/{repo}", self.delete_repo)
        r("GET", "/repos/{owner}/{repo}/topics", self.get_topics)
        r("GET", "/repos/{owner}/{repo}/community/profile", self.community_profile)
        r("GET", "/repos/{owner}/{repo}/issues", self.list_repo_issues)
        r("POST", "/repos/{owner}/{repo}/issues", self.create_issue)
        r("GET", "/repos/{owner}/{repo}/issues/{number}", self.get_issue)
        r("GET", "/repos/{owner}/{repo}/pulls", self.list_pulls)
        r("GET", "/repos/{owner}/{repo}/pulls/{number}", self.get_pull)
        r("GET", "/repos/{owner}/{repo}/contents", self.get_contents)
        r("GET", "/repos/{owner}/{repo}/contents/{path+}", self.get_contents)
        r("PUT", "/repos/{owner}/{repo}/contents/{path+}", self.put_contents)
        r("DELETE", "/repos/{owner}/{repo}/contents/{path+}", self.delete_contents)
        r("GET", "/repos/{owner}/{repo}/branches/{branch+}", self.get_branch)
        r("GET", "/repos/{owner}/{repo}/releases", self.list_releases)
        r("GET", "/repos/{owner}/{repo}/releases/latest", self.latest_release)
        r("GET", "/repos/{owner}/{repo}/releases/tags/{tag+}", self.release_by_tag)
        r("GET", "/repos/{owner}/{repo}/actions/workflows", self.list_workflows)
        r("GET", "/repos/{owner}/{repo}/actions/workflows/{workflow}", self.get_workflow)
        r("GET", "/repos/{owner}/{repo}/actions/workflows/{workflow}/runs", self.list_workflow_runs)
        r(
            "POST",
            "/repos/{owner}/{repo}/actions/workflows/{workflow}/dispatches",
            self.dispatch_workflow,
        )
        r("GET", "/repos/{owner}/{repo}/actions/runs", self.list_runs)
        r("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}", self.get_run)
        r("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs", self.list_run_jobs)
        r("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts", self.list_run_artifacts)
        r("GET", "/repos/{owner}/{repo}/readme", self.get_readme)
        r("GET", "/repos/{owner}/{repo}/tarball/{ref+}", self.tarball)
        r("GET", "/repos/{owner}/{repo}/zipball/{ref+}", self.zipball)
        # what codeload.github.com serves, not the REST API: not in ``templates``
        r("GET", "/_codeload/{owner}/{repo}/{kind}/{ref+}", self.codeload, api=False)
        r("GET", "/zen", self.zen)

    def _route(self, method: str, template: str, handler: Handler, *, api: bool = True) -> None:
        def group(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.endswith("+"):
                return f"(?P<{name[:-1]}>.+)"
            return f"(?P<{name}>[^/]+)"

        pattern = re.compile("^" + re.sub(r"\{([a-z_]+\+?)\}", group, template) + "/?$")
        self._routes.append((method, pattern, handler))
        if api:
            self.templates.append((method, template.replace("+}", "}")))

    def handle(self, req: Request) -> Response:
        for method, pattern, handler in self._routes:
            match = pattern.match(req.path)
            if match is None:
                continue
            if method != req.method and not (method == "GET" and req.method == "HEAD"):
                continue
            with self.state.lock:
                return handler(req, **match.groupdict())
        raise ApiError(404, "Not Found")

    # ------------------------------------------------------------ shared
    @property
    def scopes(self) -> set[str]:
        return set(self._scopes())

    def _repo(self, req: Request, owner: str, name: str) -> Repo:
        repo = self.state.repo(owner, name)
        if repo is None or not self.state.can_see(repo, req.viewer):
            raise ApiError(404, "Not Found", documentation_url=f"{_DOCS_REPOS}#get-a-repository")
        return repo

    def _writable_repo(self, req: Request, owner: str, name: str) -> Repo:
        repo = self._repo(req, owner, name)
        needed = {"repo"} if repo.private else {"repo", "public_repo"}
        if not (self.scopes & needed) or not self.state.can_push(repo, req.viewer):
            raise ApiError(403, "Resource not accessible by personal access token")
        return repo

    def paginate(self, req: Request, items: Sequence[Any]) -> tuple[list[Any], dict[str, str]]:
        """Slice ``items`` by ``per_page``/``page`` and build GitHub's Link header."""
        per_page = min(max(_int(req.query.get("per_page"), 30), 1), 100)
        page = max(_int(req.query.get("page"), 1), 1)
        last = max(math.ceil(len(items) / per_page), 1)
        chunk = list(items[(page - 1) * per_page : page * per_page])
        links: list[str] = []

        def link(target: int, rel: str) -> str:
            params = dict(req.query)
            params["per_page"] = str(per_page)
            params["page"] = str(target)
            return f'<{req.api_root}{req.path}?{urlencode(params)}>; rel="{rel}"'

        if page > 1:
            links.append(link(min(page - 1, last), "prev"))
        if page < last:
            links.append(link(page + 1, "next"))
            links.append(link(last, "last"))
        if page > 1:
            links.append(link(1, "first"))
        return chunk, ({"Link": ", ".join(links)} if links else {})

    def _list(self, req: Request, items: Sequence[Any], render: Callable[[Any], Any]) -> Response:
        chunk, headers = self.paginate(req, items)
        return Response.json(200, [render(item) for item in chunk], headers)

    # ----------------------------------------------------------- basics
    def root(self, req: Request) -> Response:
        api = req.api_root
        return Response.json(
            200,
            {
                "current_user_url": f"{api}/user",
                "repository_url": f"{api}/repos/{{owner}}/{{repo}}",
                "organization_url": f"{api}/orgs/{{org}}",
                "rate_limit_url": f"{api}/rate_limit",
            },
        )

    def rate_limit(self, req: Request) -> Response:
        resources = self._rate_limits()
        return Response.json(200, {"resources": resources, "rate": resources["core"]})

    def get_viewer(self, req: Request) -> Response:
        user = self.state.user(req.viewer) or self.state.add_user(req.viewer)
        body = user_json(user, req)
        body.update(
            {
                "name": user.name,
                "company": user.company,
                "blog": "",
                "location": None,
                "email": user.email,
                "bio": user.bio,
                "public_repos": sum(
                    1 for r in self.state.repos.values() if r.owner == user.login and not r.private
                ),
                "created_at": iso(user.created_at),
                "updated_at": iso(user.created_at),
                "two_factor_authentication": True,
                "plan": {
                    "name": "pro",
                    "space": 976562499,
                    "private_repos": 9999,
                    "collaborators": 0,
                },
            }
        )
        return Response.json(200, body)

    def get_user(self, req: Request, login: str) -> Response:
        account = self.state.user(login) or self.state.org(login)
        if account is None:
            raise ApiError(
                404, "Not Found", documentation_url="https://docs.github.com/rest/users/users"
            )
        body = user_json(account, req)
        body["name"] = account.name
        body["created_at"] = iso(account.created_at)
        return Response.json(200, body)

    def get_org(self, req: Request, org: str) -> Response:
        found = self.state.org(org)
        if found is None:
            raise ApiError(
                404, "Not Found", documentation_url="https://docs.github.com/rest/orgs/orgs"
            )
        body = org_json(found, req)
        body.update(
            {
                "name": found.name,
                "html_url": f"{req.web_root}/{found.login}",
                "type": "Organization",
                "public_repos": sum(
                    1 for r in self.state.repos.values() if r.owner == found.login and not r.private
                ),
                "public_gists": 0,
                "followers": 0,
                "following": 0,
                "has_organization_projects": True,
                "has_repository_projects": True,
                "archived_at": None,
                "created_at": iso(found.created_at),
                "updated_at": iso(found.created_at),
            }
        )
        return Response.json(200, body)

    def list_viewer_orgs(self, req: Request) -> Response:
        orgs = [o for o in self.state.orgs.values() if self.state.org_role(o.login, req.viewer)]
        orgs.sort(key=lambda o: o.id)
        return self._list(req, orgs, lambda o: org_json(o, req))

    # ------------------------------------------------------------ repos
    def _sorted_repos(self, req: Request, repos: Iterable[Repo], default_sort: str) -> list[Repo]:
        sort = req.query.get("sort", default_sort)
        keys: dict[str, Callable[[Repo], Any]] = {
            "created": lambda r: (r.created_at, r.id),
            "updated": lambda r: (r.updated_at or r.created_at, r.id),
            "pushed": lambda r: (r.pushed_at or r.created_at, r.id),
            "full_name": lambda r: r.full_name.lower(),
        }
        if sort not in keys:
            raise ApiError(
                422,
                "Validation Failed",
                errors=[{"resource": "Repository", "field": "sort", "code": "invalid"}],
            )
        direction = req.query.get("direction", "asc" if sort == "full_name" else "desc")
        return sorted(repos, key=keys[sort], reverse=direction == "desc")

    def list_viewer_repos(self, req: Request) -> Response:
        viewer = req.viewer
        if "type" in req.query and ("visibility" in req.query or "affiliation" in req.query):
            raise ApiError(
                422,
                "If you specify visibility or affiliation, you cannot specify type.",
                documentation_url=f"{_DOCS_REPOS}#list-repositories-for-the-authenticated-user",
            )
        repo_type = req.query.get("type")
        affiliation = set(
            req.query.get("affiliation", "owner,collaborator,organization_member").split(",")
        )
        if repo_type in ("owner",):
            affiliation = {"owner"}
        elif repo_type == "member":
            affiliation = {"collaborator", "organization_member"}
        visibility = req.query.get("visibility", "all")
        if repo_type in ("public", "private"):
            visibility = repo_type
        selected: list[Repo] = []
        for repo in self.state.visible_repos(viewer):
            is_owner = repo.owner.lower() == viewer.lower()
            is_collab = any(c.lower() == viewer.lower() for c in repo.collaborators)
            is_member = self.state.org_role(repo.owner, viewer) is not None
            if not (
                ("owner" in affiliation and is_owner)
                or ("collaborator" in affiliation and is_collab)
                or ("organization_member" in affiliation and is_member)
            ):
                continue
            if (visibility == "public" and repo.private) or (
                visibility == "private" and not repo.private
            ):
                continue
            selected.append(repo)
        ordered = self._sorted_repos(req, selected, "full_name")
        return self._list(req, ordered, lambda r: repo_json(r, req, self.state))

    def list_user_repos(self, req: Request, login: str) -> Response:
        account = self.state.user(login) or self.state.org(login)
        if account is None:
            raise ApiError(404, "Not Found")
        repos = [
            r
            for r in self.state.repos.values()
            if r.owner.lower() == login.lower() and self.state.can_see(r, req.viewer)
        ]
        ordered = self._sorted_repos(req, repos, "full_name")
        return self._list(req, ordered, lambda r: repo_json(r, req, self.state))

    def list_org_repos(self, req: Request, org: str) -> Response:
        found = self.state.org(org)
        if found is None:
            raise ApiError(
                404, "Not Found", documentation_url=f"{_DOCS_REPOS}#list-organization-repositories"
            )
        repo_type = req.query.get("type", "all")
        repos = []
        for repo in self.state.repos.values():
            if repo.owner.lower() != found.login.lower() or not self.state.can_see(
                repo, req.viewer
            ):
                continue
            if (repo_type == "public" and repo.private) or (
                repo_type == "private" and not repo.private
            ):
                continue
            if (repo_type == "forks" and not repo.fork) or (repo_type == "sources" and repo.fork):
                continue
            repos.append(repo)
        ordered = self._sorted_repos(req, repos, "created")
        return self._list(req, ordered, lambda r: repo_json(r, req, self.state))

    def get_repo(self, req: Request, owner: str, repo: str) -> Response:
        return Response.json(200, repo_json(self._repo(req, owner, repo), req, self.state))

    def get_topics(self, req: Request, owner: str, repo: str) -> Response:
        return Response.json(200, {"names": list(self._repo(req, owner, repo).topics)})

    def create_viewer_repo(self, req: Request) -> Response:
        return self._create_repo(req, req.viewer, org=False)

    def create_org_repo(self, req: Request, org: str) -> Response:
        found = self.state.org(org)
        if found is None:
            raise ApiError(
                404,
                "Not Found",
                documentation_url=f"{_DOCS_REPOS}#create-an-organization-repository",
            )
        if self.state.org_role(found.login, req.viewer) is None:
            raise ApiError(
                403, "You need admin access to the organization before adding a repository to it."
            )
        return self._create_repo(req, found.login, org=True)

    def _create_repo(self, req: Request, owner: str, *, org: bool) -> Response:
        docs = f"{_DOCS_REPOS}#create-{'an-organization' if org else 'a'}-repository"
        if not self.scopes & {"repo", "public_repo"}:
            raise ApiError(
                403, "Resource not accessible by personal access token", documentation_url=docs
            )
        payload = req.json()
        if not isinstance(payload, dict):
            raise ApiError(400, "Problems parsing JSON", documentation_url=docs)
        name = payload.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ApiError(
                422,
                "Repository creation failed.",
                documentation_url=docs,
                errors=[{"resource": "Repository", "code": "missing_field", "field": "name"}],
            )
        if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
            raise ApiError(
                422,
                "Repository creation failed.",
                documentation_url=docs,
                errors=[
                    {
                        "resource": "Repository",
                        "code": "custom",
                        "field": "name",
                        "message": "name is invalid",
                    }
                ],
            )
        if self.state.repo(owner, name) is not None:
            raise ApiError(
                422,
                "Repository creation failed.",
                documentation_url=docs,
                errors=[
                    {
                        "resource": "Repository",
                        "code": "custom",
                        "field": "name",
                        "message": "name already exists on this account",
                    }
                ],
            )
        # only the organization route takes `visibility` (internal included, as on GitHub
        # Enterprise Cloud and Server); POST /user/repos documents none, and a field
        # GitHub does not document is ignored
        visibility = payload.get("visibility") if org else None
        private = bool(payload.get("private", False)) or visibility in ("private", "internal")
        repo = self.state.add_repo(
            owner,
            name,
            private=private,
            visibility=visibility if visibility == "internal" else None,
            description=payload.get("description"),
            homepage=payload.get("homepage"),
            has_issues=bool(payload.get("has_issues", True)),
            has_wiki=bool(payload.get("has_wiki", True)),
            is_template=bool(payload.get("is_template", False)),
        )
        if org:
            repo.collaborators[req.viewer] = "admin"
        if payload.get("auto_init"):
            self.state.add_file(
                owner, name, "README.md", f"# {name}\n\n{payload.get('description') or ''}\n"
            )
        return Response.json(
            201,
            repo_json(repo, req, self.state),
            {"Location": f"{req.api_root}/repos/{repo.full_name}"},
        )

    def delete_repo(self, req: Request, owner: str, repo: str) -> Response:
        found = self._repo(req, owner, repo)
        if "delete_repo" not in self.scopes or self.state.permission(found, req.viewer) != "admin":
            raise ApiError(
                403,
                "Must have admin rights to Repository.",
                documentation_url=f"{_DOCS_REPOS}#delete-a-repository",
            )
        self.state.delete_repo(found.owner, found.name)
        return Response(204)

    def community_profile(self, req: Request, owner: str, repo: str) -> Response:
        found = self._repo(req, owner, repo)
        files = found.branches.get(found.default_branch, {})
        lowered = {path.lower(): path for path in files}
        present: dict[str, dict[str, Any] | None] = {}
        for key, names in _COMMUNITY_FILES.items():
            present[key] = None
            for directory in _COMMUNITY_DIRS:
                hit = next(
                    (
                        lowered[(directory + n).lower()]
                        for n in names
                        if (directory + n).lower() in lowered
                    ),
                    None,
                )
                if hit:
                    present[key] = {
                        "url": f"{req.api_root}/repos/{found.full_name}/contents/{hit}",
                        "html_url": f"{req.web_root}/{found.full_name}/blob/{found.default_branch}/{hit}",
                    }
                    break
        issue_template = next(
            (
                p
                for p in files
                if p.lower().startswith((".github/issue_template", "issue_template"))
            ),
            None,
        )
        present["issue_template"] = (
            {
                "url": f"{req.api_root}/repos/{found.full_name}/contents/{issue_template}",
                "html_url": f"{req.web_root}/{found.full_name}/blob/{found.default_branch}/{issue_template}",
            }
            if issue_template
            else None
        )
        if present["license"] is not None:
            present["license"] = {
                **(_license_json(found.license or "NOASSERTION") or {}),
                **present["license"],
            }
        checks = [
            bool(found.description),
            present["readme"] is not None,
            present["license"] is not None,
            present["contributing"] is not None,
            present["code_of_conduct_file"] is not None,
            present["issue_template"] is not None,
            present["pull_request_template"] is not None,
        ]
        files_body = dict(present)
        files_body["code_of_conduct"] = None
        return Response.json(
            200,
            {
                "health_percentage": round(100 * sum(checks) / len(checks)),
                "description": found.description,
                "documentation": found.homepage,
                "files": files_body,
                "updated_at": iso(found.pushed_at or found.created_at),
                "content_reports_enabled": False,
            },
        )

    # ----------------------------------------------------------- issues
    def _filter_issues(
        self, req: Request, issues: Iterable[Issue], *, pulls: bool = True
    ) -> list[Issue]:
        state_filter = req.query.get("state", "open")
        if state_filter not in ("open", "closed", "all"):
            raise ApiError(
                422,
                "Validation Failed",
                errors=[{"resource": "Issue", "field": "state", "code": "invalid"}],
            )
        labels = [label for label in req.query.get("labels", "").split(",") if label]
        assignee = req.query.get("assignee")
        creator = req.query.get("creator")
        mentioned = req.query.get("mentioned")
        milestone = req.query.get("milestone")
        since = parse_time(req.query["since"]) if req.query.get("since") else None
        selected = []
        for issue in issues:
            if not pulls and issue.is_pull:
                continue
            if state_filter != "all" and issue.state != state_filter:
                continue
            if labels and not all(label in issue.labels for label in labels):
                continue
            if (assignee == "none" and issue.assignees) or (
                assignee == "*" and not issue.assignees
            ):
                continue
            if assignee not in (None, "none", "*") and assignee.lower() not in (
                a.lower() for a in issue.assignees
            ):
                continue
            if creator and issue.user.lower() != creator.lower():
                continue
            if mentioned and f"@{mentioned.lower()}" not in (issue.body or "").lower():
                continue
            if milestone is not None and not _in_milestone(issue, milestone):
                continue
            if since and (issue.updated_at or issue.created_at) < since:
                continue
            selected.append(issue)
        sort = req.query.get("sort", "created")
        keys: dict[str, Callable[[Issue], Any]] = {
            "created": lambda i: (i.created_at, i.number),
            "updated": lambda i: (i.updated_at or i.created_at, i.number),
            "comments": lambda i: (i.comments, i.number),
        }
        key = keys.get(sort, keys["created"])
        return sorted(selected, key=key, reverse=req.query.get("direction", "desc") == "desc")

    def list_repo_issues(self, req: Request, owner: str, repo: str) -> Response:
        found = self._repo(req, owner, repo)
        if not found.has_issues:
            raise ApiError(
                410,
                "Issues are disabled for this repo",
                documentation_url=f"{_DOCS_ISSUES}#list-repository-issues",
            )
        issues = self._filter_issues(req, found.issues.values())
        return self._list(req, issues, lambda i: issue_json(i, found, req, self.state))

    def _issues_across(self, req: Request, repos: Iterable[Repo]) -> Response:
        filter_name = req.query.get("filter", "assigned")
        viewer = req.viewer.lower()
        pairs: list[tuple[Issue, Repo]] = []
        for repo in repos:
            for issue in repo.issues.values():
                if filter_name == "assigned" and viewer not in (a.lower() for a in issue.assignees):
                    continue
                if filter_name == "created" and issue.user.lower() != viewer:
                    continue
                if filter_name == "mentioned" and f"@{viewer}" not in (issue.body or "").lower():
                    continue
                pairs.append((issue, repo))
        repo_of = {id(issue): repo for issue, repo in pairs}

        def render(issue: Issue) -> dict[str, Any]:
            repo = repo_of[id(issue)]
            return {
                **issue_json(issue, repo, req, self.state),
                "repository": repo_json(repo, req, self.state),
            }

        return self._list(req, self._filter_issues(req, [issue for issue, _ in pairs]), render)

    def list_viewer_issues(self, req: Request) -> Response:
        # "across all visible repositories including owned repositories, member
        # repositories, and organization repositories": those the viewer has access to,
        # not every public one
        return self._issues_across(req, self.state.affiliated_repos(req.viewer))

    def list_org_issues(self, req: Request, org: str) -> Response:
        found = self.state.org(org)
        if found is None:
            raise ApiError(404, "Not Found")
        # as GitHub's: the organization's repositories the viewer has access to (as a
        # member, a collaborator, through a team); a public one it only sees is not read
        repos = [
            r
            for r in self.state.affiliated_repos(req.viewer)
            if r.owner.lower() == found.login.lower()
        ]
        return self._issues_across(req, repos)

    def get_issue(self, req: Request, owner: str, repo: str, number: str) -> Response:
        found = self._repo(req, owner, repo)
        issue = found.issues.get(_int(number, -1))
        if issue is None:
            raise ApiError(404, "Not Found", documentation_url=f"{_DOCS_ISSUES}#get-an-issue")
        return Response.json(200, issue_json(issue, found, req, self.state))

    def create_issue(self, req: Request, owner: str, repo: str) -> Response:
        found = self._repo(req, owner, repo)
        docs = f"{_DOCS_ISSUES}#create-an-issue"
        if not found.has_issues:
            raise ApiError(410, "Issues are disabled for this repo", documentation_url=docs)
        if not self.scopes & {"repo", "public_repo"}:
            raise ApiError(
                403, "Resource not accessible by personal access token", documentation_url=docs
            )
        payload = req.json()
        title = payload.get("title") if isinstance(payload, dict) else None
        if title is None or str(title).strip() == "":
            raise ApiError(
                422,
                'Invalid request.\n\n"title" wasn\'t supplied.',
                documentation_url=docs,
            )
        labels = [str(label) for label in payload.get("labels", []) or []]
        assignees = [str(a) for a in payload.get("assignees", []) or []]
        if payload.get("assignee"):
            assignees.append(str(payload["assignee"]))
        for login in assignees:
            if self.state.user(login) is None:
                raise ApiError(
                    422,
                    "Validation Failed",
                    documentation_url=docs,
                    errors=[
                        {
                            "value": login,
                            "resource": "Issue",
                            "field": "assignees",
                            "code": "invalid",
                        }
                    ],
                )
        issue = self.state.add_issue(
            found.owner,
            found.name,
            str(title),
            body=payload.get("body"),
            labels=labels,
            assignees=assignees,
            user=req.viewer,
        )
        return Response.json(
            201,
            issue_json(issue, found, req, self.state),
            {"Location": f"{req.api_root}/repos/{found.full_name}/issues/{issue.number}"},
        )

    # ------------------------------------------------------------ pulls
    def list_pulls(self, req: Request, owner: str, repo: str) -> Response:
        found = self._repo(req, owner, repo)
        state_filter = req.query.get("state", "open")
        head = req.query.get("head")
        base = req.query.get("base")
        pulls = []
        for issue in found.issues.values():
            if not isinstance(issue, PullRequest):
                continue
            if state_filter != "all" and issue.state != state_filter:
                continue
            if head:
                head_owner, _, head_ref = head.rpartition(":")
                if head_ref != issue.head or (
                    head_owner and head_owner.lower() != (issue.head_owner or found.owner).lower()
                ):
                    continue
            if base and issue.base != base:
                continue
            pulls.append(issue)
        sort = req.query.get("sort", "created")
        direction = req.query.get("direction", "desc" if sort == "created" else "asc")
        if sort == "updated":
            pulls.sort(key=lambda p: (p.updated_at or p.created_at, p.number))
        elif sort == "popularity":
            pulls.sort(key=lambda p: (p.comments, p.number))
        else:
            pulls.sort(key=lambda p: (p.created_at, p.number))
        if direction == "desc":
            pulls.reverse()
        return self._list(req, pulls, lambda p: pull_json(p, found, req, self.state))

    def get_pull(self, req: Request, owner: str, repo: str, number: str) -> Response:
        found = self._repo(req, owner, repo)
        pull = found.issues.get(_int(number, -1))
        if not isinstance(pull, PullRequest):
            raise ApiError(
                404,
                "Not Found",
                documentation_url="https://docs.github.com/rest/pulls/pulls#get-a-pull-request",
            )
        return Response.json(200, pull_json(pull, found, req, self.state))

    # --------------------------------------------------------- contents
    def _ref(self, repo: Repo, ref: str | None) -> str:
        branch = ref or repo.default_branch
        if branch.startswith("refs/heads/"):
            branch = branch[len("refs/heads/") :]
        if branch not in repo.branches:
            raise ApiError(
                404,
                f"No commit found for the ref {branch}",
                documentation_url=f"{_DOCS_CONTENTS}#get-repository-content",
            )
        return branch

    def get_contents(self, req: Request, owner: str, repo: str, path: str = "") -> Response:
        found = self._repo(req, owner, repo)
        path = path.strip("/")
        if not any(found.branches.values()):
            raise ApiError(
                404,
                "This repository is empty.",
                documentation_url=f"{_DOCS_CONTENTS}#get-repository-content",
            )
        ref = self._ref(found, req.query.get("ref"))
        files = found.branches[ref]
        entry = files.get(path)
        if entry is not None:
            accept = req.headers.get("accept", "")
            if "application/vnd.github.raw" in accept or "application/vnd.github.v3.raw" in accept:
                return Response(200, entry.content, {"Content-Type": "application/vnd.github.raw"})
            return Response.json(
                200,
                file_json(found, path, entry, ref, req, with_content=True),
                {"ETag": f'"{entry.sha}"'},
            )
        prefix = f"{path}/" if path else ""
        children: dict[str, dict[str, Any]] = {}
        for file_path, file_entry in files.items():
            if not file_path.startswith(prefix):
                continue
            rest = file_path[len(prefix) :]
            head, sep, _ = rest.partition("/")
            child_path = prefix + head
            if sep:
                children.setdefault(child_path, _dir_json(found, child_path, ref, req))
            else:
                children[child_path] = file_json(
                    found, child_path, file_entry, ref, req, with_content=False
                )
        if not children:
            raise ApiError(
                404, "Not Found", documentation_url=f"{_DOCS_CONTENTS}#get-repository-content"
            )
        return Response.json(200, [children[key] for key in sorted(children)])

    def get_readme(self, req: Request, owner: str, repo: str) -> Response:
        found = self._repo(req, owner, repo)
        ref = self._ref(found, req.query.get("ref"))
        for path in sorted(found.branches[ref], key=lambda p: (p.count("/"), p)):
            if path.rsplit("/", 1)[-1].lower().startswith("readme") and path.count("/") <= 1:
                return self.get_contents(req, owner, repo, path)
        raise ApiError(
            404, "Not Found", documentation_url=f"{_DOCS_CONTENTS}#get-a-repository-readme"
        )

    def put_contents(self, req: Request, owner: str, repo: str, path: str) -> Response:
        docs = f"{_DOCS_CONTENTS}#create-or-update-file-contents"
        found = self._writable_repo(req, owner, repo)
        path = path.strip("/")
        payload = req.json()
        if not isinstance(payload, dict):
            raise ApiError(400, "Problems parsing JSON", documentation_url=docs)
        for required in ("message", "content"):
            if not isinstance(payload.get(required), str):
                raise ApiError(
                    422,
                    f'Invalid request.\n\n"{required}" wasn\'t supplied.',
                    documentation_url=docs,
                )
        try:
            content = base64.b64decode(payload["content"], validate=False)
            if payload["content"].strip() and not re.fullmatch(
                r"[A-Za-z0-9+/=\s]*", payload["content"]
            ):
                raise binascii.Error("not base64")
        except (binascii.Error, ValueError) as exc:
            raise ApiError(422, "content is not valid Base64", documentation_url=docs) from exc
        if path.startswith(".github/workflows/") and "workflow" not in self.scopes:
            raise ApiError(
                403,
                "refusing to allow a Personal Access Token to create or update workflow "
                f"`{path}` without `workflow` scope",
                documentation_url=docs,
            )
        branch = payload.get("branch") or found.default_branch
        if branch not in found.branches:
            if any(found.branches.values()):
                raise ApiError(404, f"Branch {branch} not found", documentation_url=docs)
            found.branches[branch] = {}
        files = found.branches[branch]
        existing = files.get(path)
        sha = payload.get("sha")
        if existing is not None:
            if not sha:
                raise ApiError(
                    422, 'Invalid request.\n\n"sha" wasn\'t supplied.', documentation_url=docs
                )
            if sha != existing.sha:
                raise ApiError(409, f"{path} does not match {sha}", documentation_url=docs)
        elif any(p.startswith(path + "/") for p in files):
            raise ApiError(422, "Invalid request.\n\npath is a directory", documentation_url=docs)
        entry = RepoFile(content=content, sha=blob_sha(content))
        files[path] = entry
        now = utcnow()
        found.pushed_at = now
        found.updated_at = now
        commit_sha = found.branch_head(branch)
        author = self.state.user(req.viewer)
        person = {
            "name": (author.name if author and author.name else req.viewer),
            "email": (
                author.email
                if author and author.email
                else f"{req.viewer}@users.noreply.github.com"
            ),
            "date": iso(now),
        }
        commit = {
            "sha": commit_sha,
            "node_id": "",
            "url": f"{req.api_root}/repos/{found.full_name}/git/commits/{commit_sha}",
            "html_url": f"{req.web_root}/{found.full_name}/commit/{commit_sha}",
            "author": payload.get("author") or person,
            "committer": payload.get("committer") or person,
            "message": payload["message"],
            "tree": {"sha": fake_sha("tree", commit_sha), "url": ""},
            "parents": [],
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
            },
        }
        status = 200 if existing is not None else 201
        return Response.json(
            status,
            {
                "content": file_json(found, path, entry, branch, req, with_content=False),
                "commit": commit,
            },
        )

    def delete_contents(self, req: Request, owner: str, repo: str, path: str) -> Response:
        docs = f"{_DOCS_CONTENTS}#delete-a-file"
        found = self._writable_repo(req, owner, repo)
        payload = req.json()
        for required in ("message", "sha"):
            if not isinstance(payload, dict) or not isinstance(payload.get(required), str):
                raise ApiError(
                    422,
                    f'Invalid request.\n\n"{required}" wasn\'t supplied.',
                    documentation_url=docs,
                )
        branch = self._ref(found, payload.get("branch"))
        path = path.strip("/")
        existing = found.branches[branch].get(path)
        if existing is None:
            raise ApiError(404, "Not Found", documentation_url=docs)
        if payload["sha"] != existing.sha:
            raise ApiError(409, f"{path} does not match {payload['sha']}", documentation_url=docs)
        del found.branches[branch][path]
        commit_sha = found.branch_head(branch)
        return Response.json(
            200, {"content": None, "commit": {"sha": commit_sha, "message": payload["message"]}}
        )

    def get_branch(self, req: Request, owner: str, repo: str, branch: str) -> Response:
        found = self._repo(req, owner, repo)
        if branch not in found.branches:
            raise ApiError(
                404,
                "Branch not found",
                documentation_url="https://docs.github.com/rest/branches/branches#get-a-branch",
            )
        sha = found.branch_head(branch)
        return Response.json(
            200,
            {
                "name": branch,
                "commit": {
                    "sha": sha,
                    "url": f"{req.api_root}/repos/{found.full_name}/commits/{sha}",
                },
                "protected": False,
            },
        )

    # --------------------------------------------------------- archives
    def tarball(self, req: Request, owner: str, repo: str, ref: str) -> Response:
        return self._archive_redirect(req, owner, repo, ref, "legacy.tar.gz")

    def zipball(self, req: Request, owner: str, repo: str, ref: str) -> Response:
        return self._archive_redirect(req, owner, repo, ref, "legacy.zip")

    def _archive_redirect(
        self, req: Request, owner: str, repo: str, ref: str, kind: str
    ) -> Response:
        """As GitHub answers: 302 to the archive, which codeload.github.com serves. The
        double serves it itself, on its own origin (``/_codeload/...``)."""
        found = self._repo(req, owner, repo)
        self._ref(found, ref)
        location = f"{req.web_root}/_codeload/{found.full_name}/{kind}/{ref}"
        return Response(302, b"", {"Location": location})

    def codeload(self, req: Request, owner: str, repo: str, kind: str, ref: str) -> Response:
        found = self._repo(req, owner, repo)
        branch = self._ref(found, ref)
        if kind == "legacy.tar.gz":
            return Response(
                200, archive(found, branch, "tarball"), {"Content-Type": "application/x-gzip"}
            )
        if kind == "legacy.zip":
            return Response(
                200, archive(found, branch, "zipball"), {"Content-Type": "application/zip"}
            )
        raise ApiError(404, "Not Found")

    def zen(self, req: Request) -> Response:
        return Response(200, ZEN.encode(), {"Content-Type": "text/plain;charset=utf-8"})

    # --------------------------------------------------------- releases
    @staticmethod
    def _release_order(repo: Repo) -> list[Release]:
        return sorted(repo.releases, key=lambda r: (r.created_at, r.id), reverse=True)

    def list_releases(self, req: Request, owner: str, repo: str) -> Response:
        found = self._repo(req, owner, repo)
        releases = [
            r
            for r in self._release_order(found)
            if not r.draft or self.state.can_push(found, req.viewer)
        ]
        return self._list(req, releases, lambda r: release_json(r, found, req, self.state))

    def latest_release(self, req: Request, owner: str, repo: str) -> Response:
        found = self._repo(req, owner, repo)
        candidates = [r for r in found.releases if not r.draft and not r.prerelease]
        if not candidates:
            raise ApiError(
                404,
                "Not Found",
                documentation_url="https://docs.github.com/rest/releases/releases#get-the-latest-release",
            )
        latest = max(candidates, key=lambda r: (r.published_at or r.created_at, r.id))
        return Response.json(200, release_json(latest, found, req, self.state))

    def release_by_tag(self, req: Request, owner: str, repo: str, tag: str) -> Response:
        found = self._repo(req, owner, repo)
        for release in found.releases:
            if release.tag_name == tag and not release.draft:
                return Response.json(200, release_json(release, found, req, self.state))
        raise ApiError(
            404,
            "Not Found",
            documentation_url="https://docs.github.com/rest/releases/releases#get-a-release-by-tag-name",
        )

    # ---------------------------------------------------------- actions
    def _workflow(self, repo: Repo, ref: str) -> Workflow:
        workflow = self.state.find_workflow(repo, ref)
        if workflow is None:
            raise ApiError(404, "Not Found", documentation_url=f"{_DOCS_ACTIONS}#get-a-workflow")
        return workflow

    def list_workflows(self, req: Request, owner: str, repo: str) -> Response:
        found = self._repo(req, owner, repo)
        workflows = sorted(found.workflows.values(), key=lambda w: w.id)
        chunk, headers = self.paginate(req, workflows)
        return Response.json(
            200,
            {
                "total_count": len(workflows),
                "workflows": [workflow_json(w, found, req) for w in chunk],
            },
            headers,
        )

    def get_workflow(self, req: Request, owner: str, repo: str, workflow: str) -> Response:
        found = self._repo(req, owner, repo)
        return Response.json(200, workflow_json(self._workflow(found, workflow), found, req))

    def _runs(self, req: Request, repo: Repo, workflow: Workflow | None) -> Response:
        runs = []
        query = req.query
        for run in repo.runs.values():
            if workflow is not None and run.workflow_id != workflow.id:
                continue
            if query.get("branch") and run.head_branch != query["branch"]:
                continue
            if query.get("event") and run.event != query["event"]:
                continue
            if query.get("actor") and run.actor.lower() != query["actor"].lower():
                continue
            if query.get("head_sha") and run.head_sha != query["head_sha"]:
                continue
            if query.get("status") and query["status"] not in (run.status, run.conclusion):
                continue
            runs.append(run)
        runs.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        chunk, headers = self.paginate(req, runs)
        return Response.json(
            200,
            {
                "total_count": len(runs),
                "workflow_runs": [run_json(r, repo, req, self.state) for r in chunk],
            },
            headers,
        )

    def list_runs(self, req: Request, owner: str, repo: str) -> Response:
        return self._runs(req, self._repo(req, owner, repo), None)

    def list_workflow_runs(self, req: Request, owner: str, repo: str, workflow: str) -> Response:
        found = self._repo(req, owner, repo)
        return self._runs(req, found, self._workflow(found, workflow))

    def get_run(self, req: Request, owner: str, repo: str, run_id: str) -> Response:
        found = self._repo(req, owner, repo)
        run = found.runs.get(_int(run_id, -1))
        if run is None:
            raise ApiError(
                404,
                "Not Found",
                documentation_url="https://docs.github.com/rest/actions/workflow-runs#get-a-workflow-run",
            )
        return Response.json(200, run_json(run, found, req, self.state))

    def list_run_jobs(self, req: Request, owner: str, repo: str, run_id: str) -> Response:
        found = self._repo(req, owner, repo)
        if _int(run_id, -1) not in found.runs:
            raise ApiError(404, "Not Found")
        return Response.json(200, {"total_count": 0, "jobs": []})

    def list_run_artifacts(self, req: Request, owner: str, repo: str, run_id: str) -> Response:
        found = self._repo(req, owner, repo)
        if _int(run_id, -1) not in found.runs:
            raise ApiError(404, "Not Found")
        return Response.json(200, {"total_count": 0, "artifacts": []})

    def dispatch_workflow(self, req: Request, owner: str, repo: str, workflow: str) -> Response:
        docs = f"{_DOCS_ACTIONS}#create-a-workflow-dispatch-event"
        found = self._writable_repo(req, owner, repo)
        target = self._workflow(found, workflow)
        payload = req.json()
        if (
            not isinstance(payload, dict)
            or not isinstance(payload.get("ref"), str)
            or not payload["ref"]
        ):
            raise ApiError(
                422, 'Invalid request.\n\n"ref" wasn\'t supplied.', documentation_url=docs
            )
        ref = payload["ref"].removeprefix("refs/heads/")
        if ref not in found.branches:
            raise ApiError(422, f"No ref found for: {payload['ref']}", documentation_url=docs)
        source = found.branches[ref].get(target.path)
        if source is None or b"workflow_dispatch" not in source.content:
            raise ApiError(
                422, "Workflow does not have 'workflow_dispatch' trigger", documentation_url=docs
            )
        if target.state != "active":
            raise ApiError(
                422,
                "Cannot trigger a 'workflow_dispatch' on a disabled workflow",
                documentation_url=docs,
            )
        inputs = payload.get("inputs") or {}
        if not isinstance(inputs, dict):
            raise ApiError(
                422,
                "Invalid request.\n\nFor 'properties/inputs', is not an object.",
                documentation_url=docs,
            )
        found.dispatches.append(
            {"workflow_id": target.id, "ref": ref, "inputs": dict(inputs), "actor": req.viewer}
        )
        self.state.add_run(
            found.owner,
            found.name,
            target,
            event="workflow_dispatch",
            status="queued",
            head_branch=ref,
            actor=req.viewer,
        )
        return Response(204)

    # ---------------------------------------------------- notifications
    def list_notifications(self, req: Request) -> Response:
        show_all = _bool(req.query.get("all"))
        participating = _bool(req.query.get("participating"))
        notes: list[tuple[Notification, Repo]] = []
        for note in self.state.notifications:
            owner, _, name = note.repo.partition("/")
            repo = self.state.repo(owner, name)
            if repo is None or not self.state.can_see(repo, req.viewer):
                continue
            if not show_all and not note.unread:
                continue
            if participating and note.reason not in (
                "author",
                "comment",
                "mention",
                "review_requested",
                "assign",
                "team_mention",
            ):
                continue
            notes.append((note, repo))
        notes.sort(key=lambda pair: pair[0].updated_at, reverse=True)
        return self._list(
            req, notes, lambda pair: notification_json(pair[0], pair[1], req, self.state)
        )

    def mark_thread_read(self, req: Request, thread: str) -> Response:
        for note in self.state.notifications:
            if note.id == thread:
                note.unread = False
                note.last_read_at = utcnow()
                return Response(205)
        raise ApiError(404, "Not Found")

    # ------------------------------------------------------------ teams
    def _org_for_member(self, req: Request, org: str) -> Org:
        found = self.state.org(org)
        if found is None:
            raise ApiError(
                404,
                "Not Found",
                documentation_url="https://docs.github.com/rest/teams/teams#list-teams",
            )
        if not self.scopes & {"read:org", "write:org", "admin:org"}:
            raise ApiError(
                403,
                "Missing the 'read:org' scope",
                documentation_url="https://docs.github.com/rest/teams/teams#list-teams",
            )
        if self.state.org_role(found.login, req.viewer) is None:
            raise ApiError(
                403,
                "You must be a member of this organization to list its teams.",
                documentation_url="https://docs.github.com/rest/teams/teams#list-teams",
            )
        return found

    def list_teams(self, req: Request, org: str) -> Response:
        found = self._org_for_member(req, org)
        teams = sorted(
            (t for t in self.state.teams.values() if t.org.lower() == found.login.lower()),
            key=lambda t: t.name.lower(),
        )
        return self._list(req, teams, lambda t: team_json(t, req))

    def get_team(self, req: Request, org: str, slug: str) -> Response:
        found = self._org_for_member(req, org)
        team = self.state.teams.get((found.login.lower(), slug.lower()))
        if team is None:
            raise ApiError(
                404,
                "Not Found",
                documentation_url="https://docs.github.com/rest/teams/teams#get-a-team-by-name",
            )
        body = team_json(team, req)
        body.update({"members_count": len(team.members), "repos_count": len(team.repos)})
        return Response.json(200, body)
