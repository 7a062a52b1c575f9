"""Lists of the GitHub client: the pages a list is read from, one after another.

Each page's ``Link: <...>; rel="next"`` names the next (read as a redirect's Location
is, :func:`providers.github.urls.join_url`), up to ``RUNTIME_GITHUB_MAX_PAGES`` pages
and never a page already read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from providers.github.urls import join_url, route_of, without_secrets
from runtime.provider import StepError

if TYPE_CHECKING:
    from providers.github.replies import Response


class Pages(Protocol):
    """What a list is read through (the client, :class:`providers.github.client.GitHubHTTP`)."""

    max_pages: int

    def url_for(self, path: str) -> str: ...

    def request(
        self, method: str, url: str, *, params: dict[str, Any] | None = None
    ) -> Response: ...


LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')


def paginate(
    http: Pages,
    path: str,
    params: dict[str, Any],
    limit: int | None,
    keep: Callable[[Any], bool] | None = None,
) -> tuple[list[Any], int]:
    """Every page (Link rel="next"), or up to ``limit`` items. Returns (items, last status).
    ``keep`` says which items count (the pull requests GitHub lists among issues do not):
    the others are left out, and ``limit`` counts the kept ones.

    At most :attr:`GitHubHTTP.max_pages` pages, and never one already read: a server that
    always links a next page fails the step instead of holding it forever.
    """
    params = dict(params)
    params.setdefault("per_page", "100")
    items: list[Any] = []
    url: str | None = http.url_for(path)
    status = 200
    first = True
    pages = 0
    seen: set[str] = set()
    while url is not None:
        if pages == http.max_pages:
            raise StepError(
                f"GET {route_of(path)} has more than {http.max_pages} pages "
                f"({len(items)} items read); stopped",
                hint="take the first items with limit=N, or raise RUNTIME_GITHUB_MAX_PAGES",
            )
        response = http.request("GET", url, params=params if first else None)
        first = False
        pages += 1
        seen.update((url, response.url))
        status = response.status
        page = response.data
        if isinstance(page, dict):  # e.g. {"total_count": n, "repositories": [...]}
            page = next((v for v in page.values() if isinstance(v, list)), [])
        if not isinstance(page, list):
            raise StepError(f"expected a list from GET {route_of(url)}, got {type(page).__name__}")
        items.extend(page if keep is None else [item for item in page if keep(item)])
        if limit is not None and len(items) >= limit:
            return items[:limit], status
        match = LINK_NEXT.search(response.headers.get("link", ""))
        url = (
            join_url(response.url, match.group(1), f"the next page of GET {route_of(path)}")
            if match
            else None
        )
        if url is not None and url in seen:
            raise StepError(
                f"the next page of GET {route_of(path)} is {without_secrets(url)}, "
                f"a page already read (after {pages} pages); stopped",
                hint="the server sent a pagination loop; retry later, "
                "or report it to the server's owner",
            )
    return items, status
