"""GraphQL endpoint of the GitHub double.

Queries are parsed and validated against GitHub's published schema (see
:mod:`.schema`) and executed with graphql-core.  Objects are plain dicts built
from :class:`~.state.State`; a dict value that is callable is a lazy field and
is called with ``(info, **arguments)`` (used for connections and fields that
take arguments).  Fields an object dict does not mention resolve to an
"empty" value derived from their schema type (``null`` when nullable, ``[]``,
``0``, ``false``, an empty connection...), so clients that ask for many fields
(such as ``gh``) still get a well-typed answer.  Root fields that the double
does not implement produce an error instead of silently returning defaults.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLEnumType,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLUnionType,
    InlineFragmentNode,
    SelectionSetNode,
    execute_sync,
    parse,
    validate,
)

from .state import Issue, Org, PullRequest, Release, Repo, State, User, iso

__all__ = ["GraphQLApi", "GraphQLContext"]

if TYPE_CHECKING:
    # Generic since graphql-core 3.3; only ever used in (lazy) annotations.
    Info = GraphQLResolveInfo[Any]

Node = dict[str, Any]
_ROOT_MARKER = "__double_root__"
_EPOCH = "1970-01-01T00:00:00Z"
_LANGUAGE_COLORS = {
    "Python": "#3572A5",
    "Go": "#00ADD8",
    "TypeScript": "#3178c6",
    "JavaScript": "#f1e05a",
}


class DoubleGraphQLError(Exception):
    """A resolver error rendered the way GitHub does (with a top-level ``type``)."""

    def __init__(self, message: str, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


@dataclass
class GraphQLContext:
    state: State
    viewer: str
    web_root: str
    api_root: str
    rate_limit: Callable[[], Node]


# ------------------------------------------------------------- resolution
def _named(type_: GraphQLOutputType) -> Any:
    while isinstance(type_, (GraphQLNonNull, GraphQLList)):
        type_ = type_.of_type
    return type_


def empty_value(type_: GraphQLOutputType, schema: GraphQLSchema) -> Any:
    """A harmless value of ``type_`` for fields the double knows nothing about."""
    nullable = not isinstance(type_, GraphQLNonNull)
    inner = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
    if isinstance(inner, GraphQLList):
        return None if nullable else []
    named = _named(inner)
    if named.name.endswith("Connection") and isinstance(named, GraphQLObjectType):
        return connection_of([])
    if nullable:
        return None
    if isinstance(named, GraphQLScalarType):
        return {
            "Boolean": False,
            "Int": 0,
            "Float": 0.0,
            "DateTime": _EPOCH,
            "GitTimestamp": _EPOCH,
            "PreciseDateTime": _EPOCH,
            "Date": "1970-01-01",
            "GitObjectID": "0" * 40,
        }.get(named.name, "")
    if isinstance(named, GraphQLEnumType):
        return next(iter(named.values))
    if isinstance(named, (GraphQLInterfaceType, GraphQLUnionType)):
        possible = schema.get_possible_types(named)
        return {"__typename": possible[0].name} if possible else {}
    return {"__typename": named.name}


def resolve_field(source: Any, info: Info, **args: Any) -> Any:
    name = info.field_name
    if isinstance(source, Mapping):
        if name in source:
            value = source[name]
            return value(info, **args) if callable(value) else value
        if source.get(_ROOT_MARKER):
            raise DoubleGraphQLError(
                f"GitHubDouble does not implement {info.parent_type.name}.{name}", "NOT_IMPLEMENTED"
            )
        return empty_value(info.return_type, info.schema)
    return getattr(source, name, None)


def _selects(info: Info, names: set[str]) -> bool:
    """Whether the current field's selection set asks for one of ``names``."""

    def walk(selection_set: SelectionSetNode | None) -> bool:
        if selection_set is None:
            return False
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode) and selection.name.value in names:
                return True
            if isinstance(selection, InlineFragmentNode) and walk(selection.selection_set):
                return True
            if isinstance(selection, FragmentSpreadNode):
                fragment = info.fragments.get(selection.name.value)
                if fragment is not None and walk(fragment.selection_set):
                    return True
        return False

    return any(walk(node.selection_set) for node in info.field_nodes)


def _cursor(index: int) -> str:
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode()


def _decode_cursor(cursor: str | None) -> int | None:
    if cursor is None:
        return None
    try:
        text = base64.b64decode(cursor).decode()
        return int(text.rsplit(":", 1)[1])
    except (ValueError, IndexError) as exc:
        raise DoubleGraphQLError(
            f"`{cursor}` does not appear to be a valid cursor.", "INVALID_CURSOR_ARGUMENTS"
        ) from exc


def connection_of(
    items: Sequence[Any],
    total: int | None = None,
    start: int = 0,
    more_after: bool = False,
    more_before: bool = False,
) -> Node:
    edges = [{"node": item, "cursor": _cursor(start + i)} for i, item in enumerate(items)]
    return {
        "totalCount": len(items) if total is None else total,
        "nodes": list(items),
        "edges": edges,
        "pageInfo": {
            "hasNextPage": more_after,
            "hasPreviousPage": more_before,
            "startCursor": edges[0]["cursor"] if edges else None,
            "endCursor": edges[-1]["cursor"] if edges else None,
        },
    }


def paginate(info: Info, items: Sequence[Any], args: Mapping[str, Any]) -> Node:
    """Relay pagination with GitHub's boundary rules (``first``/``last`` <= 100)."""
    first, last = args.get("first"), args.get("last")
    field = info.field_name
    for key, value in (("first", first), ("last", last)):
        if value is not None and value > 100:
            raise DoubleGraphQLError(
                f"Requesting {value} records on the `{field}` connection exceeds the `{key}` limit of 100 records.",
                "EXCESSIVE_PAGINATION",
            )
        if value is not None and value < 0:
            raise DoubleGraphQLError(
                f"`{key}` on the `{field}` connection cannot be less than zero.",
                "INVALID_ARGUMENTS",
            )
    if first is None and last is None and _selects(info, {"nodes", "edges"}):
        raise DoubleGraphQLError(
            f"You must provide a `first` or `last` value to properly paginate the `{field}` connection.",
            "MISSING_PAGINATION_BOUNDARIES",
        )
    after = _decode_cursor(args.get("after"))
    before = _decode_cursor(args.get("before"))
    lo = after + 1 if after is not None else 0
    hi = before if before is not None else len(items)
    lo, hi = max(lo, 0), min(hi, len(items))
    if first is not None:
        hi = min(hi, lo + first)
    if last is not None:
        lo = max(lo, hi - last)
    return connection_of(
        items[lo:hi], total=len(items), start=lo, more_after=hi < len(items), more_before=lo > 0
    )


def _order(
    items: list[Any], order_by: Mapping[str, Any] | None, keys: Mapping[str, Callable[[Any], Any]]
) -> list[Any]:
    if not order_by:
        return items
    key = keys.get(order_by.get("field", ""))
    if key is None:
        return items
    return sorted(items, key=key, reverse=order_by.get("direction") == "DESC")


# ---------------------------------------------------------------- objects
class Nodes:
    """Builds GraphQL object dicts from state for one request."""

    def __init__(self, ctx: GraphQLContext) -> None:
        self.ctx = ctx
        self.state = ctx.state

    def url(self, *parts: object) -> str:
        return "/".join([self.ctx.web_root, *(str(p) for p in parts)])

    # accounts
    def account(self, login: str) -> Node:
        found = self.state.ensure_account(login)
        return self.org(found) if isinstance(found, Org) else self.user(found)

    def user(self, user: User) -> Node:
        typename = "Bot" if user.type == "Bot" else "User"
        return {
            "__typename": typename,
            "id": user.node_id,
            "databaseId": user.id,
            "login": user.login,
            "name": user.name,
            "email": user.email or "",
            "bio": user.bio,
            "company": user.company,
            "url": self.url(user.login),
            "avatarUrl": self.url("avatars", "u", user.id),
            "createdAt": iso(user.created_at),
            "isSiteAdmin": user.site_admin,
            "isViewer": user.login.lower() == self.ctx.viewer.lower(),
            "repository": lambda info, name, **_: self.repository_or_none(user.login, name),
            "repositories": lambda info, **a: self.repositories(info, user.login, a),
            "organizations": lambda info, **a: paginate(
                info,
                [
                    self.org(o)
                    for o in self.state.orgs.values()
                    if self.state.org_role(o.login, user.login)
                ],
                a,
            ),
            "organization": lambda info, login, **_: self.organization_or_none(login),
        }

    def org(self, org: Org) -> Node:
        return {
            "__typename": "Organization",
            "id": org.node_id,
            "databaseId": org.id,
            "login": org.login,
            "name": org.name,
            "description": org.description,
            "url": self.url(org.login),
            "avatarUrl": self.url("avatars", "u", org.id),
            "createdAt": iso(org.created_at),
            "viewerIsAMember": self.state.org_role(org.login, self.ctx.viewer) is not None,
            "repository": lambda info, name, **_: self.repository_or_none(org.login, name),
            "repositories": lambda info, **a: self.repositories(info, org.login, a),
            "membersWithRole": lambda info, **a: paginate(
                info, [self.account(login) for login in org.members], a
            ),
            "teams": lambda info, **a: paginate(
                info,
                [
                    {
                        "__typename": "Team",
                        "id": t.node_id,
                        "databaseId": t.id,
                        "name": t.name,
                        "slug": t.slug,
                        "description": t.description,
                        "privacy": t.privacy.upper(),
                    }
                    for t in self.state.teams.values()
                    if t.org.lower() == org.login.lower()
                ],
                a,
            ),
        }

    def organization_or_none(self, login: str) -> Node | None:
        found = self.state.org(login)
        return self.org(found) if found else None

    def repositories(self, info: Info, owner: str, args: Mapping[str, Any]) -> Node:
        repos = [
            r
            for r in self.state.repos.values()
            if r.owner.lower() == owner.lower() and self.state.can_see(r, self.ctx.viewer)
        ]
        privacy = args.get("privacy")
        if privacy:
            repos = [
                r
                for r in repos
                if (r.private and privacy == "PRIVATE") or (not r.private and privacy == "PUBLIC")
            ]
        if args.get("isFork") is not None:
            repos = [r for r in repos if r.fork == args["isFork"]]
        repos.sort(key=lambda r: r.id)
        repos = _order(
            repos,
            args.get("orderBy"),
            {
                "CREATED_AT": lambda r: (r.created_at, r.id),
                "UPDATED_AT": lambda r: (r.updated_at or r.created_at, r.id),
                "PUSHED_AT": lambda r: (r.pushed_at or r.created_at, r.id),
                "NAME": lambda r: r.name.lower(),
                "STARGAZERS": lambda r: (r.stargazers_count, r.id),
            },
        )
        return paginate(info, [self.repository(r) for r in repos], args)

    # repositories
    def repository_or_none(self, owner: str, name: str) -> Node | None:
        repo = self.state.repo(owner, name)
        if repo is None or not self.state.can_see(repo, self.ctx.viewer):
            return None
        return self.repository(repo)

    def repository(self, repo: Repo) -> Node:
        state = self.state
        perm = state.permission(repo, self.ctx.viewer) or "pull"
        permission = {
            "admin": "ADMIN",
            "maintain": "MAINTAIN",
            "push": "WRITE",
            "triage": "TRIAGE",
        }.get(perm, "READ")
        has_branch = bool(repo.branches.get(repo.default_branch))
        open_issue_count = sum(
            1 for i in repo.issues.values() if not i.is_pull and i.state == "open"
        )
        return {
            "__typename": "Repository",
            "id": repo.node_id,
            "databaseId": repo.id,
            "name": repo.name,
            "nameWithOwner": repo.full_name,
            "owner": self.account(repo.owner),
            "description": repo.description,
            "homepageUrl": repo.homepage,
            "url": self.url(repo.owner, repo.name),
            "sshUrl": f"git@{self.ctx.web_root.split('://', 1)[1].split(':')[0]}:{repo.full_name}.git",
            "visibility": repo.effective_visibility.upper(),
            "isPrivate": repo.private,
            "isArchived": repo.archived,
            "isDisabled": repo.disabled,
            "isFork": repo.fork,
            "isTemplate": repo.is_template,
            "isEmpty": not any(repo.branches.values()),
            "isInOrganization": state.org(repo.owner) is not None,
            "hasIssuesEnabled": repo.has_issues,
            "hasWikiEnabled": repo.has_wiki,
            "hasProjectsEnabled": repo.has_projects,
            "hasDiscussionsEnabled": repo.has_discussions,
            "createdAt": iso(repo.created_at),
            "updatedAt": iso(repo.updated_at or repo.created_at),
            "pushedAt": iso(repo.pushed_at or repo.created_at),
            "diskUsage": repo.size,
            "stargazerCount": repo.stargazers_count,
            "forkCount": repo.forks_count,
            "viewerPermission": permission,
            "viewerCanAdminister": permission == "ADMIN",
            "viewerHasStarred": False,
            "mergeCommitAllowed": True,
            "squashMergeAllowed": True,
            "rebaseMergeAllowed": True,
            "defaultBranchRef": (
                {
                    "__typename": "Ref",
                    "name": repo.default_branch,
                    "prefix": "refs/heads/",
                    "target": {
                        "__typename": "Commit",
                        "oid": repo.branch_head(repo.default_branch),
                    },
                }
                if has_branch or repo.default_branch in repo.branches
                else None
            ),
            "primaryLanguage": (
                {
                    "__typename": "Language",
                    "name": repo.language,
                    "color": _LANGUAGE_COLORS.get(repo.language),
                }
                if repo.language
                else None
            ),
            "licenseInfo": (
                {
                    "__typename": "License",
                    "spdxId": repo.license,
                    "key": repo.license.lower(),
                    "name": repo.license,
                }
                if repo.license
                else None
            ),
            "repositoryTopics": lambda info, **a: paginate(
                info,
                [
                    {
                        "__typename": "RepositoryTopic",
                        "topic": {"__typename": "Topic", "name": t},
                        "url": self.url("topics", t),
                    }
                    for t in repo.topics
                ],
                a,
            ),
            "stargazers": lambda info, **a: connection_of([], total=repo.stargazers_count),
            "forks": lambda info, **a: connection_of([], total=repo.forks_count),
            "watchers": lambda info, **a: connection_of(
                [], total=repo.watchers_count or repo.stargazers_count
            ),
            "issues": lambda info, **a: self.issues(info, repo, a),
            "pullRequests": lambda info, **a: self.pull_requests(info, repo, a),
            "issue": lambda info, number, **_: self.issue_by_number(repo, number, pulls=False),
            "pullRequest": lambda info, number, **_: self.issue_by_number(repo, number, pulls=True),
            "issueOrPullRequest": lambda info, number, **_: self.issue_by_number(
                repo, number, pulls=None
            ),
            "latestRelease": self._latest_release(repo),
            "releases": lambda info, **a: paginate(
                info,
                [
                    self.release(r, repo)
                    for r in sorted(repo.releases, key=lambda r: (r.created_at, r.id), reverse=True)
                ],
                a,
            ),
            "labels": lambda info, **a: paginate(
                info,
                [
                    self.label(n, repo)
                    for n in sorted({name for i in repo.issues.values() for name in i.labels})
                ],
                a,
            ),
            "openIssueCount": open_issue_count,
        }

    @staticmethod
    def _latest(repo: Repo) -> Release | None:
        candidates = [r for r in repo.releases if not r.draft and not r.prerelease]
        if not candidates:
            return None
        return max(candidates, key=lambda r: (r.published_at or r.created_at, r.id))

    def _latest_release(self, repo: Repo) -> Node | None:
        latest = self._latest(repo)
        return self.release(latest, repo) if latest else None

    def release(self, release: Release, repo: Repo) -> Node:
        return {
            "__typename": "Release",
            "id": release.node_id,
            "databaseId": release.id,
            "tagName": release.tag_name,
            "name": release.name,
            "description": release.body,
            "isDraft": release.draft,
            "isPrerelease": release.prerelease,
            "isLatest": self._latest(repo) is release,
            "createdAt": iso(release.created_at),
            "publishedAt": iso(release.published_at),
            "url": self.url(repo.owner, repo.name, "releases", "tag", release.tag_name),
            "author": self.account(release.author) if release.author else None,
            "tagCommit": {
                "__typename": "Commit",
                "oid": repo.branch_head(release.target_commitish),
            },
        }

    def label(self, name: str, repo: Repo) -> Node:
        return {
            "__typename": "Label",
            "id": base64.b64encode(f"Label:{repo.full_name}:{name}".encode()).decode(),
            "name": name,
            "color": "ededed",
            "description": None,
            "url": self.url(repo.owner, repo.name, "labels", name),
        }

    # issues and pull requests
    def _issue_common(self, issue: Issue, repo: Repo) -> Node:
        return {
            "id": issue.node_id,
            "databaseId": issue.id,
            "number": issue.number,
            "title": issue.title,
            "body": issue.body or "",
            "bodyText": issue.body or "",
            "url": self.url(
                repo.owner, repo.name, "pull" if issue.is_pull else "issues", issue.number
            ),
            "author": self.account(issue.user),
            "createdAt": iso(issue.created_at),
            "updatedAt": iso(issue.updated_at or issue.created_at),
            "closedAt": iso(issue.closed_at),
            "closed": issue.state == "closed",
            "locked": issue.locked,
            "repository": lambda info, **_: self.repository(repo),
            "labels": lambda info, **a: paginate(
                info, [self.label(n, repo) for n in issue.labels], a
            ),
            "assignees": lambda info, **a: paginate(
                info, [self.account(login) for login in issue.assignees], a
            ),
            "comments": lambda info, **a: connection_of([], total=issue.comments),
            "milestone": None,
        }

    def issue(self, issue: Issue, repo: Repo) -> Node:
        if isinstance(issue, PullRequest):
            return self.pull(issue, repo)
        node = self._issue_common(issue, repo)
        node.update(
            {
                "__typename": "Issue",
                "state": issue.state.upper(),
                "stateReason": issue.state_reason.upper() if issue.state_reason else None,
            }
        )
        return node

    def pull(self, pull: PullRequest, repo: Repo) -> Node:
        node = self._issue_common(pull, repo)
        head_owner = pull.head_owner or repo.owner
        head_repo = self.state.repo(head_owner, repo.name)
        state = "MERGED" if pull.merged else pull.state.upper()
        mergeable = {True: "MERGEABLE", False: "CONFLICTING", None: "UNKNOWN"}[pull.mergeable]
        commit = {"__typename": "Commit", "oid": pull.head_sha, "statusCheckRollup": None}
        node.update(
            {
                "__typename": "PullRequest",
                "state": state,
                "isDraft": pull.draft,
                "merged": pull.merged,
                "mergedAt": iso(pull.merged_at),
                "mergeable": mergeable,
                "headRefName": pull.head,
                "headRefOid": pull.head_sha,
                "baseRefName": pull.base,
                "baseRefOid": repo.branch_head(pull.base),
                "headRepositoryOwner": self.account(head_owner),
                "headRepository": self.repository(head_repo) if head_repo else None,
                "isCrossRepository": head_owner.lower() != repo.owner.lower(),
                "maintainerCanModify": False,
                "additions": pull.additions,
                "deletions": pull.deletions,
                "changedFiles": pull.changed_files,
                "reviewDecision": pull.review_decision,
                "commits": lambda info, **a: paginate(
                    info, [{"__typename": "PullRequestCommit", "commit": commit}] * pull.commits, a
                ),
                "reviewRequests": lambda info, **a: paginate(
                    info,
                    [
                        {"__typename": "ReviewRequest", "requestedReviewer": self.account(login)}
                        for login in pull.requested_reviewers
                    ],
                    a,
                ),
            }
        )
        return node

    def issue_by_number(self, repo: Repo, number: int, *, pulls: bool | None) -> Node | None:
        issue = repo.issues.get(number)
        matches = issue is not None and (pulls is None or issue.is_pull == pulls)
        if not matches:
            kind = {True: "PullRequest", False: "Issue", None: "issue"}[pulls]
            message = (
                f"Could not resolve to an issue or pull request with the number of {number}."
                if pulls is None
                else f"Could not resolve to a{'n' if kind == 'Issue' else ''} {kind} with the number of {number}."
            )
            raise DoubleGraphQLError(message, "NOT_FOUND")
        assert issue is not None
        return self.issue(issue, repo)

    def _filter_issues(self, items: Iterable[Issue], args: Mapping[str, Any]) -> list[Issue]:
        states = args.get("states")
        labels = args.get("labels")
        filter_by = args.get("filterBy") or {}
        selected = []
        for item in items:
            state = (
                "MERGED" if isinstance(item, PullRequest) and item.merged else item.state.upper()
            )
            if states and state not in states:
                continue
            if labels and not any(label in item.labels for label in labels):
                continue
            if args.get("headRefName") and getattr(item, "head", None) != args["headRefName"]:
                continue
            if args.get("baseRefName") and getattr(item, "base", None) != args["baseRefName"]:
                continue
            if filter_by.get("assignee") and filter_by["assignee"] not in item.assignees:
                continue
            if filter_by.get("createdBy") and filter_by["createdBy"].lower() != item.user.lower():
                continue
            if filter_by.get("states") and state not in filter_by["states"]:
                continue
            selected.append(item)
        selected.sort(key=lambda i: i.number)
        return _order(
            selected,
            args.get("orderBy"),
            {
                "CREATED_AT": lambda i: (i.created_at, i.number),
                "UPDATED_AT": lambda i: (i.updated_at or i.created_at, i.number),
                "COMMENTS": lambda i: (i.comments, i.number),
            },
        )

    def issues(self, info: Info, repo: Repo, args: Mapping[str, Any]) -> Node:
        items = self._filter_issues((i for i in repo.issues.values() if not i.is_pull), args)
        return paginate(info, [self.issue(i, repo) for i in items], args)

    def pull_requests(self, info: Info, repo: Repo, args: Mapping[str, Any]) -> Node:
        items = self._filter_issues(
            (i for i in repo.issues.values() if isinstance(i, PullRequest)), args
        )
        return paginate(info, [self.pull(i, repo) for i in items], args)  # type: ignore[arg-type]

    # search
    def search(self, info: Info, args: Mapping[str, Any]) -> Node:
        query = str(args.get("query", ""))
        qualifiers: dict[str, list[str]] = {}
        words: list[str] = []
        for token in re.findall(r'(?:[^\s"]+:"[^"]*"|[^\s"]+:[^\s]+|"[^"]*"|\S+)', query):
            key, sep, value = token.partition(":")
            if sep and key.isalpha():
                qualifiers.setdefault(key.lower(), []).append(value.strip('"'))
            else:
                words.append(token.strip('"').lower())
        kind = args.get("type")
        visible = self.state.visible_repos(self.ctx.viewer)
        if "repo" in qualifiers:
            visible = [
                r for r in visible if r.full_name.lower() in {q.lower() for q in qualifiers["repo"]}
            ]
        for owner_key in ("user", "org", "owner"):
            if owner_key in qualifiers:
                owners = {q.lower() for q in qualifiers[owner_key]}
                visible = [r for r in visible if r.owner.lower() in owners]
        results: list[Node] = []
        if kind == "REPOSITORY":
            for repo in sorted(visible, key=lambda r: r.id):
                text = f"{repo.name} {repo.description or ''}".lower()
                if all(word in text for word in words):
                    results.append(self.repository(repo))
            return {
                **paginate(info, results, args),
                "repositoryCount": len(results),
                "issueCount": 0,
            }
        if kind == "ISSUE":
            is_values = set(qualifiers.get("is", [])) | set(qualifiers.get("type", []))
            for repo in sorted(visible, key=lambda r: r.id):
                for issue in sorted(repo.issues.values(), key=lambda i: i.number, reverse=True):
                    if ("pr" in is_values and not issue.is_pull) or (
                        "issue" in is_values and issue.is_pull
                    ):
                        continue
                    if ("open" in is_values and issue.state != "open") or (
                        "closed" in is_values and issue.state != "closed"
                    ):
                        continue
                    if "merged" in is_values and not getattr(issue, "merged", False):
                        continue
                    if any(a.lower() != issue.user.lower() for a in qualifiers.get("author", [])):
                        continue
                    if any(
                        a.lower() not in (x.lower() for x in issue.assignees)
                        for a in qualifiers.get("assignee", [])
                    ):
                        continue
                    if any(label not in issue.labels for label in qualifiers.get("label", [])):
                        continue
                    text = f"{issue.title} {issue.body or ''}".lower()
                    if all(word in text for word in words):
                        results.append(self.issue(issue, repo))
            return {
                **paginate(info, results, args),
                "issueCount": len(results),
                "repositoryCount": 0,
            }
        raise DoubleGraphQLError(
            f"GitHubDouble does not implement search type {kind}", "NOT_IMPLEMENTED"
        )

    # node lookup
    def node(self, node_id: str) -> Node | None:
        for repo in self.state.repos.values():
            if repo.node_id == node_id:
                return self.repository(repo)
            for issue in repo.issues.values():
                if issue.node_id == node_id:
                    return self.issue(issue, repo)
            for release in repo.releases:
                if release.node_id == node_id:
                    return self.release(release, repo)
        for user in self.state.users.values():
            if user.node_id == node_id:
                return self.user(user)
        for org in self.state.orgs.values():
            if org.node_id == node_id:
                return self.org(org)
        return None


def _repository_root(nodes: Nodes, owner: str, name: str) -> Node:
    found = nodes.repository_or_none(owner, name)
    if found is None:
        raise DoubleGraphQLError(
            f"Could not resolve to a Repository with the name '{owner}/{name}'.", "NOT_FOUND"
        )
    return found


def _account_root(nodes: Nodes, login: str, kind: str) -> Node | None:
    if kind == "Organization":
        found_org = nodes.state.org(login)
        if found_org is None:
            raise DoubleGraphQLError(
                f"Could not resolve to an Organization with the login of '{login}'.", "NOT_FOUND"
            )
        return nodes.org(found_org)
    found_user = nodes.state.user(login)
    if found_user is None or (kind == "User" and nodes.state.org(login) is not None):
        raise DoubleGraphQLError(
            f"Could not resolve to a User with the login of '{login}'.", "NOT_FOUND"
        )
    return nodes.user(found_user)


def query_root(ctx: GraphQLContext) -> Node:
    nodes = Nodes(ctx)
    return {
        _ROOT_MARKER: True,
        "viewer": lambda info, **_: nodes.account(ctx.viewer),
        "repository": lambda info, owner, name, **_: _repository_root(nodes, owner, name),
        "user": lambda info, login, **_: _account_root(nodes, login, "User"),
        "organization": lambda info, login, **_: _account_root(nodes, login, "Organization"),
        "repositoryOwner": lambda info, login, **_: (
            nodes.account(login) if ctx.state.user(login) or ctx.state.org(login) else None
        ),
        "node": lambda info, id, **_: nodes.node(id),
        "nodes": lambda info, ids, **_: [nodes.node(i) for i in ids],
        "search": lambda info, **a: nodes.search(info, a),
        "rateLimit": lambda info, **_: ctx.rate_limit(),
    }


# --------------------------------------------------------------- endpoint
_UNDEFINED_FIELD = re.compile(r"Cannot query field '(?P<field>[^']+)' on type '(?P<type>[^']+)'\.")


def _format_validation_error(error: GraphQLError) -> Node:
    body: Node = {}
    match = _UNDEFINED_FIELD.match(error.message)
    if match:
        body["extensions"] = {
            "code": "undefinedField",
            "typeName": match["type"],
            "fieldName": match["field"],
        }
        message = f"Field '{match['field']}' doesn't exist on type '{match['type']}'"
    else:
        message = error.message
    if error.locations:
        body["locations"] = [{"line": loc.line, "column": loc.column} for loc in error.locations]
    body["message"] = message
    return body


def _format_execution_error(error: GraphQLError) -> Node:
    body: Node = {}
    original = error.original_error
    if isinstance(original, DoubleGraphQLError):
        body["type"] = original.error_type
    if error.path:
        body["path"] = list(error.path)
    if error.locations:
        body["locations"] = [{"line": loc.line, "column": loc.column} for loc in error.locations]
    body["message"] = error.message
    return body


class GraphQLApi:
    """Executes GraphQL documents against the in-memory state."""

    def __init__(self, state: State, schema_loader: Callable[[], GraphQLSchema]) -> None:
        self.state = state
        self._schema_loader = schema_loader
        #: Every query received: {"query", "variables", "operationName"}.
        self.log: list[Node] = []

    @property
    def schema(self) -> GraphQLSchema:
        return self._schema_loader()

    def execute(self, body: bytes, ctx: GraphQLContext) -> tuple[int, Node]:
        try:
            payload = json.loads(body or b"null")
        except ValueError:
            return 400, {
                "message": "Problems parsing JSON",
                "documentation_url": "https://docs.github.com/graphql",
            }
        if not isinstance(payload, dict) or not isinstance(payload.get("query"), str):
            return 200, {
                "errors": [{"message": "A query attribute must be specified and must be a string."}]
            }
        query: str = payload["query"]
        variables = payload.get("variables") or {}
        operation = payload.get("operationName") or None
        self.log.append({"query": query, "variables": variables, "operationName": operation})
        if not isinstance(variables, dict):
            return 200, {"errors": [{"message": "Variables are invalid JSON."}]}
        try:
            document = parse(query)
        except GraphQLError as error:
            return 200, {"errors": [_format_validation_error(error)]}
        schema = self.schema
        problems = validate(schema, document)
        if problems:
            return 200, {"errors": [_format_validation_error(problem) for problem in problems]}
        with self.state.lock:
            result = execute_sync(
                schema,
                document,
                root_value=query_root(ctx),
                context_value=ctx,
                variable_values=variables,
                operation_name=operation,
                field_resolver=resolve_field,
            )
        answer: Node = {}
        if result.errors:
            answer["errors"] = [_format_execution_error(error) for error in result.errors]
        answer["data"] = result.data
        if result.errors and result.data is None:
            del answer["data"]
            answer = {"data": None, **answer}
        return 200, answer


def rate_limit_node(limit: int, remaining: int, reset: int) -> Node:
    reset_at = datetime.fromtimestamp(reset, tz=UTC)
    return {
        "__typename": "RateLimit",
        "cost": 1,
        "limit": limit,
        "remaining": remaining,
        "used": limit - remaining,
        "nodeCount": 0,
        "resetAt": iso(reset_at or datetime.now(UTC) + timedelta(hours=1)),
    }
