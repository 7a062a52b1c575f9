"""gh's JSON fields of the operations served over REST: ``--json FIELDS`` (``json=``).

A gh user writes ``gh repo view cli/cli --json name,url`` and ``gh issue list --json
number,title``; the same words work on the operations this provider serves over REST,
with gh's field names and gh's shapes (``state`` is ``OPEN``, ``author`` an object with
a ``login``, ``url`` the page a person opens), read off the REST answer. A field is
offered only where the REST answer holds it: ``comments`` (gh's is the comments
themselves, REST's a count) and ``reactionGroups`` are not, so ``--json comments`` is
refused before anything runs, as gh refuses a field it does not know, listing the
fields there are.

This module is data the declarations read (:data:`FIELDS` names each operation's
fields, the choices of its ``json`` option) and the getters :func:`select` applies;
it imports nothing but the standard library.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Item = Mapping[str, Any]
Getter = Callable[[Item], Any]


def _get(path: str) -> Getter:
    """A dotted field of an item (``repository.full_name``); None where it is missing."""

    def get(item: Item) -> Any:
        value: Any = item
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        return value

    return get


def _upper(path: str) -> Getter:
    """gh's enum values are GraphQL's, upper case: ``open`` is ``OPEN``."""
    get = _get(path)
    return lambda item: v.upper() if isinstance(v := get(item), str) else v


def _named(path: str) -> Getter:
    """A name gh gives as an object (``defaultBranchRef``: ``{"name": "main"}``)."""
    get = _get(path)
    return lambda item: {"name": v} if (v := get(item)) is not None else None


def _account(user: Any) -> dict[str, Any] | None:
    if not isinstance(user, Mapping):
        return None
    return {
        "id": user.get("node_id"),
        "is_bot": user.get("type") == "Bot",
        "login": user.get("login"),
    }


def _accounts(path: str) -> Getter:
    get = _get(path)
    return lambda item: [_account(u) for u in get(item) or () if isinstance(u, Mapping)]


def _labels(item: Item) -> list[dict[str, Any]]:
    return [
        {
            "id": label.get("node_id"),
            "name": label.get("name"),
            "description": label.get("description"),
            "color": label.get("color"),
        }
        for label in item.get("labels") or ()
        if isinstance(label, Mapping)
    ]


def _milestone(item: Item) -> dict[str, Any] | None:
    found = item.get("milestone")
    if not isinstance(found, Mapping):
        return None
    return {
        "number": found.get("number"),
        "title": found.get("title"),
        "description": found.get("description"),
        "dueOn": found.get("due_on"),
    }


def full_name(item: Item) -> str | None:
    """The OWNER/REPO an issue is in: its ``repository`` (lists across repositories), else
    the tail of its ``repository_url`` (a repository's own list has no ``repository``)."""
    name = _get("repository.full_name")(item)
    if isinstance(name, str):
        return name
    url = item.get("repository_url")
    if isinstance(url, str) and "/repos/" in url:
        return url.rsplit("/repos/", 1)[1]
    return None


def _repository(item: Item) -> dict[str, Any] | None:
    """As gh's ``search issues --json repository`` gives it."""
    name = full_name(item)
    return None if name is None else {"name": name.rpartition("/")[2], "nameWithOwner": name}


def _license(item: Item) -> dict[str, Any] | None:
    found = item.get("license")
    if not isinstance(found, Mapping):
        return None
    return {"key": found.get("key"), "name": found.get("name"), "nickname": None}


def _owner(item: Item) -> dict[str, Any] | None:
    owner = item.get("owner")
    if not isinstance(owner, Mapping):
        return None
    return {"id": owner.get("node_id"), "login": owner.get("login")}


def _topics(item: Item) -> list[dict[str, Any]]:
    return [{"name": t} for t in item.get("topics") or () if isinstance(t, str)]


ISSUE: dict[str, Getter] = {
    "assignees": _accounts("assignees"),
    "author": lambda item: _account(item.get("user")),
    "body": _get("body"),
    "closed": lambda item: item.get("state") == "closed",
    "closedAt": _get("closed_at"),
    "createdAt": _get("created_at"),
    "id": _get("node_id"),
    "labels": _labels,
    "milestone": _milestone,
    "number": _get("number"),
    "repository": _repository,
    "state": _upper("state"),
    "title": _get("title"),
    "updatedAt": _get("updated_at"),
    "url": _get("html_url"),
}

REPOSITORY: dict[str, Getter] = {
    "createdAt": _get("created_at"),
    "defaultBranchRef": _named("default_branch"),
    "description": _get("description"),
    "diskUsage": _get("size"),  # kilobytes, in both
    "forkCount": _get("forks_count"),
    "hasDiscussionsEnabled": _get("has_discussions"),
    "hasIssuesEnabled": _get("has_issues"),
    "hasProjectsEnabled": _get("has_projects"),
    "hasWikiEnabled": _get("has_wiki"),
    "homepageUrl": _get("homepage"),
    "id": _get("node_id"),
    "isArchived": _get("archived"),
    "isFork": _get("fork"),
    "isPrivate": _get("private"),
    "isTemplate": _get("is_template"),
    "licenseInfo": _license,
    "name": _get("name"),
    "nameWithOwner": _get("full_name"),
    "owner": _owner,
    "primaryLanguage": _named("language"),
    "pushedAt": _get("pushed_at"),
    "repositoryTopics": _topics,
    "sshUrl": _get("ssh_url"),
    "stargazerCount": _get("stargazers_count"),
    "updatedAt": _get("updated_at"),
    "url": _get("html_url"),
    "visibility": _upper("visibility"),
}

RELEASE: dict[str, Getter] = {
    "createdAt": _get("created_at"),
    "isDraft": _get("draft"),
    "isPrerelease": _get("prerelease"),
    "name": _get("name"),
    "publishedAt": _get("published_at"),
    "tagName": _get("tag_name"),
    "url": _get("html_url"),
}

# The operations whose answer ``--json`` selects from, by name.
FIELDS: dict[str, dict[str, Getter]] = {
    "repo list": REPOSITORY,
    "repo view": REPOSITORY,
    "issue list": ISSUE,
    "release list": RELEASE,
}


def select(operation: str, data: Any, names: str) -> Any:
    """``data`` (one item, or a list of them) as gh's ``--json names`` prints it: each
    item an object of those fields, in the order of their names (gh's are a Go map's)."""
    getters = FIELDS[operation]
    wanted = sorted(set(names.split(",")))

    def one(item: Any) -> dict[str, Any]:
        source = item if isinstance(item, Mapping) else {}
        return {name: getters[name](source) for name in wanted}

    return [one(i) for i in data] if isinstance(data, list) else one(data)
