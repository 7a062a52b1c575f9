"""The REST routes GitHub documents, and what an input value may put into a route.

``routes.json`` (made by :mod:`providers.github.routes_build` from GitHub's
OpenAPI descriptions) holds, for each method and path template, GitHub's
operationId. It is read once per process, the first time a call needs it (an
``api`` step); the other REST operations build fixed routes and never read it.

Route values: text an input supplies to a route (the ``api`` PATH, OWNER/REPO,
ORG, ``file put``'s PATH, ``repo create``'s ``org=``) may not contain ``?``,
``#``, ``%``, whitespace or control characters, nor make a ``.`` or ``..``
segment; an OWNER/REPO value holds at most one ``/``, an ORG value none. In an
``api`` route an input fills the route's parameters only, never one of its
fixed segments.

``repo create``'s ``visibility=internal`` needs the organization route (``org=``):
POST /user/repos takes no visibility.

This module imports neither the HTTP client nor the engine's plan: validation
uses it too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote

from runtime.provider import BoundCall
from runtime.provider.operations import BindingProblem, Piece

TABLE = Path(__file__).with_name("routes.json")
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
URL_PREFIXES = ("http://", "https://")


class Route(NamedTuple):
    """A documented API operation: method, path template and its OpenAPI operationId."""

    method: str
    path: str  # the template, as GitHub writes it: /repos/{owner}/{repo}/topics
    operation_id: str  # repos/replace-all-topics

    def to_json(self) -> dict[str, str]:
        """The plan's and execute's ``route`` of a step (``Inspection.record``)."""
        return {"method": self.method, "path": self.path, "operation_id": self.operation_id}


# A template segment: a literal, a {parameter} (one segment, or one or more when GitHub
# marks it x-multi-segment: a file path, a ref), or a pattern ({base}...{head}).
_LITERAL, _PARAM, _MULTI, _PATTERN = range(4)
_Segment = tuple[int, "str | re.Pattern[str]"]


class _Template(NamedTuple):
    route: Route
    segments: tuple[_Segment, ...]
    multi: bool


def _segment(text: str, multi: set[str]) -> _Segment:
    if "{" not in text:
        return (_LITERAL, text)
    if text[0] == "{" and text.index("}") == len(text) - 1:  # the whole segment
        name = text[1:-1]
        return (_MULTI if name in multi else _PARAM, name)
    pattern = "".join(
        re.escape(literal) + ("[^/]+" if name else "")
        for literal, name in re.findall(r"([^{]*)(?:\{([^}]+)\})?", text)
    )
    return (_PATTERN, re.compile(pattern))


@cache
def _table() -> dict[tuple[str, str], list[list[Any]]]:
    """(method, first segment of the path) -> its routes.json entries; read once."""
    data = json.loads(TABLE.read_text(encoding="utf-8"))
    table: dict[tuple[str, str], list[list[Any]]] = {}
    for entry in data["routes"]:
        first = entry[1].split("/", 2)[1]
        table.setdefault((entry[0], "*" if "{" in first else first), []).append(entry)
    return table


@cache
def _bucket(method: str, first: str) -> tuple[_Template, ...]:
    """The templates of one (method, first segment), compiled when first asked for."""
    out = []
    for entry in _table().get((method, first), ()):
        path, multi = entry[1], set(entry[3]) if len(entry) > 3 else set()
        segments = tuple(_segment(s, multi) for s in path[1:].split("/"))
        out.append(_Template(Route(method, path, entry[2]), segments, bool(multi)))
    return tuple(out)


def _templates(method: str, first: str | None = None) -> list[_Template]:
    method = "GET" if method == "HEAD" else method  # HEAD is answered by every GET route
    if first is not None:
        return [*_bucket(method, first), *_bucket(method, "*")]
    return [t for m, f in _table() if m == method for t in _bucket(m, f)]


def documented(method: str, template: str) -> Route | None:
    """The documented route of ``method`` with exactly this path template, if any."""
    first = template[1:].split("/")[0]
    return next((t.route for t in _templates(method, first) if t.route.path == template), None)


def _fillable(part: str) -> bool:
    return part != "" and unquote(part) not in (".", "..")


def _match(
    segments: tuple[_Segment, ...], parts: Sequence[str], i: int = 0, j: int = 0
) -> list[bool] | None:
    """Per part, True where a literal segment of the template matched it; None: no match."""
    if i == len(segments):
        return [] if j == len(parts) else None
    if len(parts) - j < len(segments) - i:
        return None
    kind, value = segments[i]
    part = parts[j]
    if kind == _LITERAL:
        if part != value:
            return None
        rest = _match(segments, parts, i + 1, j + 1)
        return None if rest is None else [True, *rest]
    if not _fillable(part):
        return None
    if kind == _MULTI:
        for k in range(1, len(parts) - j + 1):
            if not _fillable(parts[j + k - 1]):
                return None
            rest = _match(segments, parts, i + 1, j + k)
            if rest is not None:
                return [False] * k + rest
        return None
    if kind == _PATTERN and not value.fullmatch(part):  # type: ignore[union-attr]
        return None
    rest = _match(segments, parts, i + 1, j + 1)
    return None if rest is None else [False, *rest]


def find(method: str, parts: Sequence[str]) -> tuple[Route, list[bool]] | None:
    """The documented route ``parts`` (the path's segments) is, and which parts are its
    literal segments. When several templates match (a multi-segment ``{branch}`` could
    swallow ``/protection``), the one with the most literal segments is GitHub's."""
    best: tuple[int, Route, list[bool]] | None = None
    for template in _templates(method, parts[0] if parts else ""):
        if not template.multi and len(template.segments) != len(parts):
            continue
        literal = _match(template.segments, parts)
        if literal is not None and (best is None or sum(literal) > best[0]):
            best = (sum(literal), template.route, literal)
    return None if best is None else (best[1], best[2])


def nearest(method: str, path: str) -> Route | None:
    """The documented ``method`` route most like ``path`` (its parameters filled from it)."""
    import difflib  # only when a route is refused

    parts = path.strip("/").split("/")
    wanted = "/" + "/".join(parts)

    def score(route: Route) -> float:
        shape = [
            parts[k] if "{" in t and k < len(parts) else t
            for k, t in enumerate(route.path[1:].split("/"))
        ]
        return difflib.SequenceMatcher(None, "/" + "/".join(shape), wanted).ratio()

    routes = [t.route for t in _templates(method)]
    return max(routes, key=score) if routes else None


# -- what an input may put into a route -------------------------------------------------------

# How a declared argument's value fills a route (its ``in_route``), as value_problems
# checks it: a file path (segments), a repository (owner/name), one name.
# ``org-or-repo``: OWNER/REPO when the value holds a '/', else ORG (issue list's target).
VALUE_KINDS = {
    "{path}": "path",
    "{owner}/{repo}": "owner/repo",
    "{org}": "org",
    "{owner}/{repo}|{org}": "org-or-repo",
}
_FORBIDDEN = re.compile(r"[?#%\s\x00-\x1f\x7f-\x9f]")
VALUE_HINT = (
    "a value in a route may not hold ?, #, %, whitespace, control characters or '.'/'..' "
    "segments; give query parameters as key=value pairs"
)


def _names(names: Sequence[str]) -> str:
    unique = list(dict.fromkeys(names))
    return ("inputs " if len(unique) > 1 else "input ") + ", ".join(f"'{n}'" for n in unique)


def _forbidden(value: str) -> str | None:
    found = _FORBIDDEN.search(value)
    if found is None:
        return None
    char = found.group()
    if char in "?#%":
        return f"'{char}'"
    if ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F:
        return f"a control character (U+{ord(char):04X})"
    return "whitespace"


def _segments(pieces: Sequence[Piece]) -> list[tuple[str, list[str]]]:
    """The '/'-separated segments of the joined pieces, each with the inputs that wrote in it."""
    out: list[tuple[str, list[str]]] = [("", [])]
    for piece in pieces:
        for k, part in enumerate(piece.text.split("/")):
            if k:
                out.append(("", []))
            text, names = out[-1]
            if part and piece.input is not None and not piece.missing:
                names = [*names, piece.input]
            out[-1] = (text + part, names)
    return out


def value_problems(index: int, pieces: Sequence[Piece], kind: str) -> list[BindingProblem]:
    """Why the input values in one arg (``pieces``) may not be put into a route.

    ``kind``: ``route`` (an ``api`` PATH) or ``path`` (``file put``'s PATH): any number
    of segments; ``owner/repo``: the resolved arg is OWNER/REPO and a value holds at most
    one '/'; ``org``: a value holds no '/'. Authored text is the author's business.
    """
    supplied = [p for p in pieces if p.input is not None and not p.missing]
    if not supplied:
        return []
    problems: list[BindingProblem] = []
    bad: set[str] = set()

    def refuse(names: Sequence[str], message: str, hint: str = VALUE_HINT) -> None:
        bad.update(names)
        problems.append(BindingProblem(index, message, hint, code="input-in-route"))

    for piece in supplied:
        assert piece.input is not None
        if piece.input in bad:
            continue
        what = _forbidden(piece.text)
        if what is not None:
            refuse(
                [piece.input],
                f"the value of {_names([piece.input])} contains {what}, "
                "which cannot be part of a REST route",
            )
        elif kind == "org" and "/" in piece.text:
            refuse(
                [piece.input],
                f"the value of {_names([piece.input])} contains '/': ORG is one name",
                "give the organization's login, such as acme",
            )
        elif kind in ("owner/repo", "org-or-repo") and piece.text.count("/") > 1:
            refuse(
                [piece.input],
                f"the value of {_names([piece.input])} contains more than one '/': "
                "it is not OWNER/REPO",
                "give the repository as owner/name",
            )
    if problems:
        return problems
    segments = _segments(pieces)
    for text, names in segments:
        if names and unquote(text) in (".", "..") and not bad.intersection(names):
            refuse(
                names,
                f"the value of {_names(names)} makes a '{text}' segment, "
                "which would move the call to another route",
            )
    if problems or any(p.missing for p in pieces):
        return problems
    resolved = "".join(p.text for p in pieces)
    everyone = [p.input for p in supplied if p.input is not None]
    if kind == "org-or-repo":
        kind = "owner/repo" if "/" in resolved else "org"
    if kind == "org" and not _fillable(resolved):
        refuse(
            everyone,
            f"'{resolved}' (from {_names(everyone)}) is not an organization",
            "give the organization's login, such as acme",
        )
    if kind == "owner/repo" and (len(segments) != 2 or not all(_fillable(t) for t, _ in segments)):
        refuse(
            everyone,
            f"'{resolved}' (from {_names(everyone)}) is not OWNER/REPO",
            "give the repository as owner/name",
        )
    return problems


def authored_problems(index: int, value: str, kind: str) -> list[BindingProblem]:
    """Why an authored value (one without a ``${reference}``) cannot fill its route:
    an OWNER/REPO that is not two names, an ORG that is not one. Found at validation,
    before anything runs, as an input's value is at plan time."""
    parts = value.split("/")
    if kind == "org-or-repo":
        kind = "owner/repo" if "/" in value else "org"
    if kind == "owner/repo" and (
        len(parts) != 2 or not all(_fillable(p) for p in parts) or _forbidden(value)
    ):
        return [
            BindingProblem(
                index,
                f"'{value}' is not OWNER/REPO",
                "write the repository as owner/name, such as cli/cli",
                code="bad-value",
            )
        ]
    if kind == "org" and value and (len(parts) != 1 or not _fillable(value) or _forbidden(value)):
        return [
            BindingProblem(
                index,
                f"'{value}' is not an organization",
                "give the organization's login, such as acme",
                code="bad-value",
            )
        ]
    return []


# -- the api operation ------------------------------------------------------------------------


def _arg_index(call: BoundCall, positional: str) -> int:
    return call.binding.positionals.get(positional, -1) if call.binding else -1


def check_api(call: BoundCall) -> tuple[list[BindingProblem], Route | None, str | None]:
    """Problems of an ``api`` call's METHOD and PATH, the documented route it is, and a note
    when it cannot be known yet (an input not supplied)."""
    method_pieces = call.pieces_of("METHOD")
    path_pieces = call.pieces_of("PATH")
    at_method, at_path = _arg_index(call, "METHOD"), _arg_index(call, "PATH")
    method = "".join(p.text for p in method_pieces).upper()
    missing = [p.input or "?" for p in (*method_pieces, *path_pieces) if p.missing]
    if missing:
        return [], None, f"route not checked: {_names(missing)} not given"
    method_inputs = [p.input for p in method_pieces if p.input is not None]
    if method not in METHODS:
        source = f" (from {_names(method_inputs)})" if method_inputs else ""
        return (
            [
                BindingProblem(
                    at_method,
                    f"'{method}'{source} is not an HTTP method",
                    "use GET, HEAD, POST, PUT, PATCH or DELETE",
                    code="bad-method",
                )
            ],
            None,
            None,
        )
    problems = value_problems(at_path, path_pieces, "route")
    if problems:
        return problems, None, None
    path = "".join(p.text for p in path_pieces)
    if path.startswith(URL_PREFIXES):
        return (
            [
                BindingProblem(
                    at_path,
                    "PATH must be a route such as /repos/OWNER/REPO, not a URL",
                    "the host comes from the context or GITHUB_API_URL",
                    code="undocumented-route",
                )
            ],
            None,
            None,
        )
    # the route: up to the query (an input holds no '?' or '#'), without the leading '/'s
    segments = _segments(path_pieces)
    route: list[tuple[str, list[str]]] = []
    for text, names in segments:
        cut = min((text.index(c) for c in "?#" if c in text), default=-1)
        if cut >= 0:
            route.append((text[:cut], names))
            break
        route.append((text, names))
    while len(route) > 1 and route[0][0] == "":
        route.pop(0)
    parts = [text for text, _ in route]
    shown = "/" + "/".join(parts)
    inputs = [n for _, names in route for n in names]
    found = find(method, parts)
    if found is None:
        close = nearest(method, shown)
        source = f" (with the value of {_names(inputs)})" if inputs else ""
        hint = (
            f"the nearest documented {method} route is {close.path} ({close.operation_id})"
            if close
            else "see https://docs.github.com/rest for the routes"
        )
        return (
            [
                BindingProblem(
                    at_path,
                    f"{method} {shown}{source} is not a route GitHub documents for {method}",
                    hint,
                    code="undocumented-route",
                )
            ],
            None,
            None,
        )
    documented_route, literal = found
    for k, (text, names) in enumerate(route):
        if literal[k] and names:
            return (
                [
                    BindingProblem(
                        at_path,
                        f"the value of {_names(names)} supplies '{text}', a fixed segment of "
                        f"{method} {documented_route.path}",
                        "an input fills only a route's {parameters}: write the fixed segments "
                        "in the capability",
                        code="input-in-route",
                    )
                ],
                None,
                None,
            )
    return [], documented_route, None


# -- repo create ------------------------------------------------------------------------------


def check_repo_create(call: BoundCall) -> list[BindingProblem]:
    """``visibility=internal`` in a call that goes to POST /user/repos (no ``org=``, or an
    empty one): GitHub makes internal repositories only in organizations. Its POST
    /orgs/{org}/repos takes ``internal``; POST /user/repos has no ``visibility`` at all, so
    the repository could only be created public or private, which is not what was asked.
    Refused before anything runs; a value not known yet (an input, at validation) is
    checked once it is."""
    visibility = call.option_pieces("visibility")
    org = call.option_pieces("org")
    if any(p.missing for p in (*visibility, *org)):
        return []
    if "".join(p.text for p in visibility) != "internal" or "".join(p.text for p in org):
        return []
    from_inputs = [p.input for p in visibility if p.input is not None]
    org_inputs = [p.input for p in org if p.input is not None]
    asked = "visibility=internal" + (f" (from {_names(from_inputs)})" if from_inputs else "")
    if org_inputs:
        without = f"with an empty org= (from {_names(org_inputs)})"
    else:
        without = "without org=" if call.option("org") is None else "with an empty org="
    binding = call.binding
    index = next((i for k, i in binding.options if k == "visibility"), -1) if binding else -1
    return [
        BindingProblem(
            index,
            f"{asked} {without}: GitHub makes internal repositories only in organizations",
            "add org=ORG (an organization on GitHub Enterprise Cloud or Server), or use "
            "visibility=private or visibility=public",
            code="missing-option",
        )
    ]


# -- issue list -------------------------------------------------------------------------------


# the options of issue list only GET /repos/{owner}/{repo}/issues takes, with gh's flag
_REPOSITORY_ONLY = {
    "assignee": "--assignee",
    "creator": "--author",
    "mentioned": "--mention",
    "milestone": "--milestone",
}
_MILESTONE = re.compile(r"[1-9][0-9]*|\*|none")


def check_issue_list(call: BoundCall) -> list[BindingProblem]:
    """The options GitHub's issues routes do not share: ``filter=`` is a parameter of an
    organization's and of your own issues (GET /orgs/{org}/issues, GET /issues), which GET
    /repos/{owner}/{repo}/issues does not take, and ``assignee=``, ``creator=``,
    ``mentioned=`` and ``milestone=`` (gh's ``--assignee``, ``--author``, ``--mention``,
    ``--milestone``) are the other way round: GitHub would ignore them and list what it
    was asked not to. ``milestone=`` is a milestone's number, ``*`` or ``none``, as the
    route takes it. Refused before anything runs; a value not known yet is checked once
    it is."""
    target = call.pieces_of("OWNER/REPO|ORG")
    if any(p.missing for p in target):
        return []
    repository = "".join(p.text for p in target)
    binding = call.binding

    def at(key: str) -> int:
        return next((i for k, i in binding.options if k == key), -1) if binding else -1

    problems: list[BindingProblem] = []
    given = call.option_pieces("filter")
    if (
        call.option("filter") is not None
        and not any(p.missing for p in given)
        and "/" in repository
    ):
        problems.append(
            BindingProblem(
                at("filter"),
                f"filter= selects among an organization's or your own issues, not those "
                f"of a repository ({repository})",
                "drop filter=; a repository's issues are all listed (state= and labels= "
                "narrow them), or give the organization instead",
                code="bad-arguments",
            )
        )
    for key, flag in _REPOSITORY_ONLY.items():
        if call.option(key) is None:
            continue
        if "/" not in repository:
            whose = (
                f"the organization {repository}'s"
                if repository
                else "an organization's or your own"
            )
            problems.append(
                BindingProblem(
                    at(key),
                    f"{key}= ({flag}) selects among a repository's issues; GitHub does not "
                    f"take it for {whose} issues",
                    "name the repository: OWNER/REPO, or --repo OWNER/REPO",
                    code="bad-arguments",
                )
            )
            continue
        value = call.option_pieces(key)
        if key == "milestone" and not any(p.missing for p in value):
            text = "".join(p.text for p in value)
            if not _MILESTONE.fullmatch(text):
                problems.append(
                    BindingProblem(
                        at(key),
                        f"milestone={text} is not a milestone's number, * or none",
                        "give its number (runtime github api GET "
                        "/repos/OWNER/REPO/milestones lists them), * for any milestone or "
                        "none for none",
                        code="bad-arguments",
                    )
                )
    return problems
