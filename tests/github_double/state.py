"""In-memory GitHub state shared by the REST and GraphQL front ends.

Everything lives in plain dataclasses guarded by one re-entrant lock
(:attr:`State.lock`).  The HTTP handlers hold the lock while they read or
mutate state, so tests may seed or inspect state from another thread at any
time through the :class:`State` helpers.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

__all__ = [
    "Issue",
    "Notification",
    "Org",
    "PullRequest",
    "Release",
    "Repo",
    "RepoFile",
    "Run",
    "State",
    "Team",
    "User",
    "Workflow",
    "blob_sha",
    "iso",
    "parse_time",
]

TimeLike = datetime | str | None


def utcnow() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def parse_time(value: TimeLike, default: datetime | None = None) -> datetime | None:
    """Accept a ``datetime``, an ISO-8601 string (``Z`` allowed) or ``None``."""
    if value is None:
        return default
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def iso(value: datetime | None) -> str | None:
    """Format a timestamp the way GitHub does (``2024-01-02T03:04:05Z``)."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def blob_sha(content: bytes) -> str:
    """Git blob object id of ``content`` (what the contents API calls ``sha``)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def node_id(kind: str, ident: int) -> str:
    """A legacy-format global node id, e.g. ``MDEwOlJlcG9zaXRvcnkxMDA1``."""
    return base64.b64encode(f"{len(kind):02d}:{kind}{ident}".encode()).decode()


def fake_sha(*parts: object) -> str:
    return hashlib.sha1(":".join(str(p) for p in parts).encode()).hexdigest()


@dataclass
class User:
    login: str
    id: int
    name: str | None = None
    email: str | None = None
    type: str = "User"
    site_admin: bool = False
    bio: str | None = None
    company: str | None = None
    created_at: datetime = field(default_factory=utcnow)

    @property
    def node_id(self) -> str:
        return node_id("Bot" if self.type == "Bot" else "User", self.id)


@dataclass
class Org:
    login: str
    id: int
    name: str | None = None
    description: str | None = None
    #: login -> role ("admin" or "member")
    members: dict[str, str] = field(default_factory=dict)
    created_at: datetime = field(default_factory=utcnow)

    @property
    def node_id(self) -> str:
        return node_id("Organization", self.id)


@dataclass
class Team:
    org: str
    slug: str
    id: int
    name: str
    description: str | None = None
    privacy: str = "closed"
    permission: str = "pull"
    members: list[str] = field(default_factory=list)
    #: full names ("owner/repo") of repositories the team can access
    repos: list[str] = field(default_factory=list)

    @property
    def node_id(self) -> str:
        return node_id("Team", self.id)


@dataclass
class RepoFile:
    content: bytes
    sha: str


@dataclass
class Issue:
    id: int
    number: int
    title: str
    user: str
    body: str | None = None
    state: str = "open"
    state_reason: str | None = None
    labels: list[str] = field(default_factory=list)
    assignees: list[str] = field(default_factory=list)
    comments: int = 0
    locked: bool = False
    milestone: str | None = None
    milestone_number: int | None = None  # the number GET .../issues?milestone=N matches
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime | None = None
    closed_at: datetime | None = None

    @property
    def is_pull(self) -> bool:
        return False

    @property
    def node_id(self) -> str:
        return node_id("Issue", self.id)


@dataclass
class PullRequest(Issue):
    head: str = "feature"
    base: str = "main"
    head_sha: str = ""
    head_owner: str | None = None
    draft: bool = False
    merged: bool = False
    merged_at: datetime | None = None
    mergeable: bool | None = True
    additions: int = 0
    deletions: int = 0
    changed_files: int = 0
    commits: int = 1
    review_decision: str | None = None
    requested_reviewers: list[str] = field(default_factory=list)

    @property
    def is_pull(self) -> bool:
        return True

    @property
    def node_id(self) -> str:
        return node_id("PullRequest", self.id)


IssueT = TypeVar("IssueT", bound=Issue)


@dataclass
class Release:
    id: int
    tag_name: str
    name: str | None = None
    body: str | None = None
    draft: bool = False
    prerelease: bool = False
    author: str = ""
    target_commitish: str = "main"
    created_at: datetime = field(default_factory=utcnow)
    published_at: datetime | None = None

    @property
    def node_id(self) -> str:
        return node_id("Release", self.id)


@dataclass
class Workflow:
    id: int
    name: str
    path: str
    state: str = "active"
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)

    @property
    def node_id(self) -> str:
        return node_id("Workflow", self.id)


@dataclass
class Run:
    id: int
    workflow_id: int
    name: str
    run_number: int
    head_branch: str = "main"
    head_sha: str = ""
    event: str = "push"
    status: str = "completed"
    conclusion: str | None = "success"
    actor: str = ""
    display_title: str | None = None
    run_attempt: int = 1
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime | None = None

    @property
    def node_id(self) -> str:
        return node_id("WorkflowRun", self.id)


@dataclass
class Notification:
    id: str
    repo: str
    title: str
    type: str = "Issue"
    reason: str = "subscribed"
    unread: bool = True
    subject_number: int | None = None
    updated_at: datetime = field(default_factory=utcnow)
    last_read_at: datetime | None = None


@dataclass
class Repo:
    id: int
    owner: str
    name: str
    private: bool = False
    visibility: str | None = None
    description: str | None = None
    homepage: str | None = None
    default_branch: str = "main"
    stargazers_count: int = 0
    watchers_count: int = 0
    forks_count: int = 0
    language: str | None = None
    topics: list[str] = field(default_factory=list)
    license: str | None = None
    archived: bool = False
    disabled: bool = False
    fork: bool = False
    is_template: bool = False
    has_issues: bool = True
    has_projects: bool = True
    has_wiki: bool = True
    has_discussions: bool = False
    size: int = 0
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime | None = None
    pushed_at: datetime | None = None
    #: login -> permission ("admin", "maintain", "push", "triage", "pull")
    collaborators: dict[str, str] = field(default_factory=dict)
    #: branch -> path -> file
    branches: dict[str, dict[str, RepoFile]] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    releases: list[Release] = field(default_factory=list)
    workflows: dict[int, Workflow] = field(default_factory=dict)
    runs: dict[int, Run] = field(default_factory=dict)
    #: recorded ``workflow_dispatch`` requests: {"workflow_id", "ref", "inputs"}
    dispatches: list[dict[str, Any]] = field(default_factory=list)
    next_number: int = 1
    next_run_number: int = 1

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def node_id(self) -> str:
        return node_id("Repository", self.id)

    @property
    def effective_visibility(self) -> str:
        if self.visibility:
            return self.visibility
        return "private" if self.private else "public"

    def branch_head(self, branch: str) -> str:
        files = self.branches.get(branch, {})
        return fake_sha(self.full_name, branch, *sorted((p, f.sha) for p, f in files.items()))


class State:
    """All objects known to the double, plus the seeding helpers."""

    def __init__(self, viewer: str = "octocat") -> None:
        self.lock = threading.RLock()
        self._ids = itertools.count(1001)
        self.viewer = viewer
        self.users: dict[str, User] = {}
        self.orgs: dict[str, Org] = {}
        self.teams: dict[tuple[str, str], Team] = {}
        self.repos: dict[tuple[str, str], Repo] = {}
        self.notifications: list[Notification] = []
        self.add_user(viewer)

    # ----------------------------------------------------------------- ids
    def next_id(self) -> int:
        return next(self._ids)

    # --------------------------------------------------------------- users
    def add_user(self, login: str, **fields: Any) -> User:
        with self.lock:
            existing = self.users.get(login.lower())
            if existing is not None:
                for key, value in fields.items():
                    setattr(existing, key, value)
                return existing
            _time_fields(fields, "created_at")
            user = User(login=login, id=fields.pop("id", None) or self.next_id(), **fields)
            self.users[login.lower()] = user
            return user

    def user(self, login: str) -> User | None:
        return self.users.get(login.lower())

    def ensure_account(self, login: str) -> User | Org:
        with self.lock:
            return self.org(login) or self.user(login) or self.add_user(login)

    # ---------------------------------------------------------------- orgs
    def add_org(
        self,
        login: str,
        *,
        members: Iterable[str] = (),
        admins: Iterable[str] = (),
        viewer_role: str | None = "admin",
        **fields: Any,
    ) -> Org:
        with self.lock:
            if login.lower() in self.users:
                raise ValueError(f"{login!r} is already a user")
            org = self.orgs.get(login.lower())
            if org is None:
                _time_fields(fields, "created_at")
                org = Org(login=login, id=fields.pop("id", None) or self.next_id(), **fields)
                self.orgs[login.lower()] = org
            else:
                for key, value in fields.items():
                    setattr(org, key, value)
            if viewer_role:
                org.members[self.viewer] = viewer_role
            for member in members:
                self.add_user(member)
                org.members.setdefault(member, "member")
            for admin in admins:
                self.add_user(admin)
                org.members[admin] = "admin"
            return org

    def org(self, login: str) -> Org | None:
        return self.orgs.get(login.lower())

    def org_role(self, org: str, login: str) -> str | None:
        found = self.org(org)
        if found is None:
            return None
        for member, role in found.members.items():
            if member.lower() == login.lower():
                return role
        return None

    def add_team(
        self,
        org: str,
        slug: str,
        *,
        name: str | None = None,
        members: Iterable[str] = (),
        repos: Iterable[str] = (),
        **fields: Any,
    ) -> Team:
        with self.lock:
            if self.org(org) is None:
                self.add_org(org)
            owner = self.org(org)
            assert owner is not None
            team = Team(
                org=owner.login,
                slug=slug,
                id=fields.pop("id", None) or self.next_id(),
                name=name or slug,
                members=list(members),
                repos=list(repos),
                **fields,
            )
            self.teams[(owner.login.lower(), slug.lower())] = team
            return team

    # --------------------------------------------------------------- repos
    def add_repo(self, owner: str, name: str, **fields: Any) -> Repo:
        with self.lock:
            account = self.ensure_account(owner)
            key = (account.login.lower(), name.lower())
            if key in self.repos:
                raise ValueError(f"repository {owner}/{name} already exists")
            _time_fields(fields, "created_at", "updated_at", "pushed_at")
            topics = list(fields.pop("topics", []) or [])
            repo = Repo(
                id=fields.pop("id", None) or self.next_id(),
                owner=account.login,
                name=name,
                topics=topics,
                **fields,
            )
            repo.branches.setdefault(repo.default_branch, {})
            self.repos[key] = repo
            return repo

    def repo(self, owner: str, name: str) -> Repo | None:
        return self.repos.get((owner.lower(), name.lower()))

    def require_repo(self, owner: str, name: str) -> Repo:
        found = self.repo(owner, name)
        if found is None:
            raise KeyError(f"unknown repository {owner}/{name}")
        return found

    def delete_repo(self, owner: str, name: str) -> None:
        with self.lock:
            self.repos.pop((owner.lower(), name.lower()), None)

    def add_branch(
        self, owner: str, repo: str, branch: str, *, from_branch: str | None = None
    ) -> None:
        with self.lock:
            found = self.require_repo(owner, repo)
            source = found.branches.get(from_branch or found.default_branch, {})
            found.branches.setdefault(branch, dict(source))

    # --------------------------------------------------------------- files
    def add_file(
        self, owner: str, repo: str, path: str, content: bytes | str, *, branch: str | None = None
    ) -> str:
        """Store ``content`` at ``path`` and return its git blob sha."""
        with self.lock:
            found = self.require_repo(owner, repo)
            data = content.encode() if isinstance(content, str) else bytes(content)
            sha = blob_sha(data)
            files = found.branches.setdefault(branch or found.default_branch, {})
            files[path.strip("/")] = RepoFile(content=data, sha=sha)
            found.pushed_at = utcnow()
            return sha

    # -------------------------------------------------------- issues / PRs
    def add_issue(self, owner: str, repo: str, title: str, **fields: Any) -> Issue:
        with self.lock:
            found = self.require_repo(owner, repo)
            _time_fields(fields, "created_at", "updated_at", "closed_at")
            fields.setdefault("user", self.viewer)
            self.ensure_account(fields["user"])
            issue = Issue(
                id=fields.pop("id", None) or self.next_id(),
                number=fields.pop("number", None) or found.next_number,
                title=title,
                **fields,
            )
            return self._store_issue(found, issue)

    def add_pull(self, owner: str, repo: str, title: str, **fields: Any) -> PullRequest:
        with self.lock:
            found = self.require_repo(owner, repo)
            _time_fields(fields, "created_at", "updated_at", "closed_at", "merged_at")
            fields.setdefault("user", self.viewer)
            fields.setdefault("base", found.default_branch)
            self.ensure_account(fields["user"])
            if fields.get("merged") and fields.get("merged_at") is None:
                fields["merged_at"] = utcnow()
            if fields.get("merged") or fields.get("merged_at"):
                fields["merged"] = True
                fields.setdefault("state", "closed")
            pull = PullRequest(
                id=fields.pop("id", None) or self.next_id(),
                number=fields.pop("number", None) or found.next_number,
                title=title,
                **fields,
            )
            if not pull.head_sha:
                pull.head_sha = fake_sha(found.full_name, "pull", pull.number, pull.head)
            if pull.state == "closed" and pull.closed_at is None:
                pull.closed_at = pull.merged_at or utcnow()
            self._store_issue(found, pull)
            return pull

    def _store_issue(self, repo: Repo, issue: IssueT) -> IssueT:
        if issue.number in repo.issues:
            raise ValueError(f"{repo.full_name}#{issue.number} already exists")
        if issue.state == "closed" and issue.closed_at is None:
            issue.closed_at = utcnow()
        repo.issues[issue.number] = issue
        repo.next_number = max(repo.next_number, issue.number + 1)
        return issue

    # ------------------------------------------------------------ releases
    def add_release(self, owner: str, repo: str, tag_name: str, **fields: Any) -> Release:
        with self.lock:
            found = self.require_repo(owner, repo)
            _time_fields(fields, "created_at", "published_at")
            fields.setdefault("author", self.viewer)
            fields.setdefault("target_commitish", found.default_branch)
            release = Release(
                id=fields.pop("id", None) or self.next_id(), tag_name=tag_name, **fields
            )
            if release.published_at is None and not release.draft:
                release.published_at = release.created_at
            found.releases.append(release)
            return release

    # ------------------------------------------------------------- actions
    def add_workflow(
        self,
        owner: str,
        repo: str,
        name: str,
        *,
        path: str | None = None,
        content: bytes | str | None = None,
        **fields: Any,
    ) -> Workflow:
        with self.lock:
            found = self.require_repo(owner, repo)
            if path is None:
                slug = (
                    "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
                    or "workflow"
                )
                path = f".github/workflows/{slug}.yml"
            _time_fields(fields, "created_at", "updated_at")
            workflow = Workflow(
                id=fields.pop("id", None) or self.next_id(), name=name, path=path, **fields
            )
            found.workflows[workflow.id] = workflow
            if content is None:
                content = (
                    f"name: {name}\non:\n  push:\n  workflow_dispatch:\n"
                    "jobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ok\n"
                )
            self.add_file(owner, repo, path, content)
            return workflow

    def find_workflow(self, repo: Repo, ref: int | str) -> Workflow | None:
        """Find a workflow by id, file name (``ci.yml``), path or display name."""
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
            return repo.workflows.get(int(ref))
        for workflow in repo.workflows.values():
            if ref in (workflow.path, workflow.path.rsplit("/", 1)[-1]):
                return workflow
        for workflow in repo.workflows.values():
            if workflow.name == ref:
                return workflow
        return None

    def add_run(self, owner: str, repo: str, workflow: int | str | Workflow, **fields: Any) -> Run:
        with self.lock:
            found = self.require_repo(owner, repo)
            target = (
                workflow if isinstance(workflow, Workflow) else self.find_workflow(found, workflow)
            )
            if target is None:
                raise KeyError(f"unknown workflow {workflow!r} in {found.full_name}")
            _time_fields(fields, "created_at", "updated_at")
            fields.setdefault("actor", self.viewer)
            fields.setdefault("head_branch", found.default_branch)
            if fields.get("status", "completed") != "completed":
                fields.setdefault("conclusion", None)
            run = Run(
                id=fields.pop("id", None) or self.next_id(),
                workflow_id=target.id,
                name=fields.pop("name", None) or target.name,
                run_number=fields.pop("run_number", None) or found.next_run_number,
                **fields,
            )
            if not run.head_sha:
                run.head_sha = found.branch_head(run.head_branch)
            found.runs[run.id] = run
            found.next_run_number = max(found.next_run_number, run.run_number + 1)
            return run

    # ------------------------------------------------------- notifications
    def add_notification(self, owner: str, repo: str, title: str, **fields: Any) -> Notification:
        with self.lock:
            found = self.require_repo(owner, repo)
            _time_fields(fields, "updated_at", "last_read_at")
            notification = Notification(
                id=str(fields.pop("id", None) or self.next_id()),
                repo=found.full_name,
                title=title,
                **fields,
            )
            self.notifications.append(notification)
            return notification

    # ---------------------------------------------------------- visibility
    def permission(self, repo: Repo, login: str) -> str | None:
        """The permission ``login`` has on ``repo`` (None: cannot see it)."""
        granted = self.granted(repo, login)
        if granted is not None:
            return granted
        return None if repo.private else "pull"

    def granted(self, repo: Repo, login: str) -> str | None:
        """The permission ``login`` was given on ``repo``: as its owner, a collaborator, a
        member of its organization or of a team with it; None for anyone else, who sees
        a public repository all the same."""
        lowered = login.lower()
        if repo.owner.lower() == lowered:
            return "admin"
        for collaborator, perm in repo.collaborators.items():
            if collaborator.lower() == lowered:
                return perm
        role = self.org_role(repo.owner, login)
        if role == "admin":
            return "admin"
        team_perm = None
        for team in self.teams.values():
            if (
                team.org.lower() == repo.owner.lower()
                and repo.full_name in team.repos
                and any(member.lower() == lowered for member in team.members)
            ):
                team_perm = team.permission
        if team_perm:
            return team_perm
        if role == "member":
            return "pull"  # GitHub's default base permission for organization members
        return None

    def can_see(self, repo: Repo, login: str) -> bool:
        return self.permission(repo, login) is not None

    def can_push(self, repo: Repo, login: str) -> bool:
        return self.permission(repo, login) in ("admin", "maintain", "push")

    def visible_repos(self, login: str) -> list[Repo]:
        return [repo for repo in self.repos.values() if self.can_see(repo, login)]

    def affiliated_repos(self, login: str) -> list[Repo]:
        """The repositories ``login`` was given access to (:meth:`granted`): those GitHub's
        issue lists across repositories read (GET /issues, GET /orgs/{org}/issues), not
        every public repository."""
        return [repo for repo in self.repos.values() if self.granted(repo, login) is not None]


def _time_fields(fields: dict[str, Any], *names: str) -> None:
    """Normalise time-like keyword arguments in place."""
    for name in names:
        if name in fields:
            fields[name] = parse_time(fields[name])
