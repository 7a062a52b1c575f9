"""gh's command line, as far as runtime's policy reads it: the grammar in gh's profile.

The engine knows no gh: it reads what this module says through the
:class:`runtime.provider.ProgramProfile` the github provider declares (:data:`GH`),
always from the args *as authored* or resolved, never by running gh:

* gh's global options, before its subcommand (``gh --help pr list``);
* the method and route of ``gh api`` and the GraphQL documents of ``gh api graphql``
  (:func:`read_api`), which the policy decides like the github provider's own ``api``
  and ``graphql`` calls;
* the args gh hands to ``git clone`` (``gh repo clone REPO [DIR] -- ARGS``, ``gh repo
  fork REPO -- ARGS``, ``gh gist clone GIST [DIR] -- ARGS``, :func:`gh_git_clone`):
  after gh's ``--`` they are git's options again, so the policy decides them as git's;
* the hosts a call names (:func:`gh_targets`): gh is pinned to its credential's host;
* gh's jq never reads the environment (:func:`refusal`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from runtime.provider import Decision
from runtime.provider.programs import UNKNOWN, ApiRequest, Handover, ProgramProfile, find_subcommand

# gh's global options, before its subcommand: option -> takes a value
GLOBAL_OPTIONS: dict[str, bool] = {"--help": False, "-h": False, "--version": False}


# -- gh: the args it hands to git clone --------------------------------------------------

# The gh commands (gh 2.23) that run `git clone` with the args they were given after their
# own `--` (and after the repository), and the flags each accepts before it: flag -> takes
# a value (pflag gives a value flag the next arg whatever it is, a "--" too).
GH_GIT_CLONE: dict[tuple[str, str], dict[str, bool]] = {
    ("repo", "clone"): {"-u": True, "--upstream-remote-name": True, "--help": False},
    ("repo", "fork"): {
        "--clone": False,
        "--default-branch-only": False,
        "--fork-name": True,
        "--org": True,
        "--remote": False,
        "--remote-name": True,
        "--help": False,
    },
    ("gist", "clone"): {"--help": False},
}


def gh_git_clone(args: Sequence[str]) -> Handover | None:
    """For ``gh repo clone``, ``gh repo fork`` and ``gh gist clone``, which args gh hands to
    ``git clone``, read as gh (cobra and pflag) reads them; None for any other gh call.

    gh takes its positionals (before its ``--``) and everything after that ``--`` as one
    list; the first is the repository, the rest go to ``git clone`` (``parseCloneArgs``:
    the first of them, unless it starts with ``-``, is the directory, put after the URL).
    A flag runtime does not know for the command, or an option before the command's
    second word, leaves the args unreadable (``problem``): gh might end its flags
    elsewhere than runtime thinks.

    The :class:`Handover`'s indexes are of what git gets, in git's order: ``git clone
    ARGS URL [DIR]`` without the URL (gh's own): the args after the repository, DIR
    (their first, when it is no option) moved last; its ``dash`` is gh's own ``--``.
    """
    sub = find_subcommand("gh", GLOBAL_OPTIONS, args)
    if sub.problem or sub.name not in {group for group, _ in GH_GIT_CLONE}:
        return None
    start = sub.position + 1
    word = args[start] if start < len(args) else None
    if word is None or word.startswith("-"):
        # cobra looks for the command's word past options: say so if it may find one
        words = {w for group, w in GH_GIT_CLONE if group == sub.name}
        rest = list(args[start:])
        rest = rest[: rest.index("--")] if "--" in rest else rest
        for candidate in sorted(words & set(rest)):
            return _cannot_read(
                f"{sub.name} {candidate}",
                f"an option comes between 'gh {sub.name}' and '{candidate}', so runtime "
                "cannot tell which args gh hands to git clone",
            )
        return None
    flags = GH_GIT_CLONE.get((sub.name, word))
    if flags is None:
        return None
    command = f"{sub.name} {word}"
    positionals: list[int] = []
    dash: int | None = None
    index = start + 1
    while index < len(args):
        arg = args[index]
        if arg == "--":
            dash = index
            break
        if arg.startswith("-") and arg != "-":
            takes = _gh_flag(arg, flags)
            if takes is None:
                return _cannot_read(
                    command,
                    f"'{arg}' is not a flag runtime knows for gh {command}, so it cannot tell "
                    "which args gh hands to git clone",
                )
            index += 2 if takes else 1
            continue
        positionals.append(index)
        index += 1
    cloned = positionals + (list(range(dash + 1, len(args))) if dash is not None else [])
    given = cloned[1:]  # after the repository
    if given and not args[given[0]].startswith("-"):
        given = [*given[1:], given[0]]  # the directory, after the URL
    return Handover(command, "git", ("clone",), tuple(given), dash)


def _cannot_read(command: str, problem: str) -> Handover:
    return Handover(
        command,
        "git",
        ("clone",),
        (),
        None,
        problem,
        f"write gh {command} REPO [DIR] with gh's own flags before its `--` "
        "(those gh documents), then the args for git clone",
    )


def _gh_flag(arg: str, flags: dict[str, bool]) -> bool | None:
    """Whether the flag ``arg`` takes the next arg as its value (pflag), or None when it is
    no flag of ``flags``."""
    if arg.startswith("--"):
        name, eq, _ = arg.partition("=")
        if name not in flags:
            return None
        return flags[name] and not eq
    letters = arg[1:]
    for position, letter in enumerate(letters):
        option = f"-{letter}"
        if option not in flags:
            return None
        if flags[option]:  # a value flag: the rest of the cluster, or the next arg
            return position == len(letters) - 1
    return False


# -- gh api: its method and route ------------------------------------------------------

_GH_API_VALUE = {
    "-X": "method",
    "--method": "method",
    "-F": "field",
    "--field": "field",
    "-f": "field",
    "--raw-field": "field",
    "--input": "field",
    "-H": "",
    "--header": "",
    "-p": "",
    "--preview": "",
    "-q": "",
    "--jq": "",
    "-t": "",
    "--template": "",
    "--cache": "",
    "--hostname": "",
}
_GH_API_FLAGS = {
    "--paginate",
    "--slurp",
    "-i",
    "--include",
    "--silent",
    "--verbose",
    "-h",
    "--help",
}


class GhApiCall(NamedTuple):
    method: str  # upper case
    route: str  # as gh would request it, with a leading "/" (a full URL stays as it is)
    problem: str = ""
    # each field given, in order: (option, "key=value") for -f/--raw-field, -F/--field
    fields: tuple[tuple[str, str], ...] = ()
    body_file: str | None = None  # --input: the body is read from this file ("-": stdin)


def gh_api_call(args: Sequence[str]) -> GhApiCall:
    """The method and route of ``gh api ARGS`` (the args after ``api``), read as gh reads them.

    gh sends GET, or POST when fields or an input body are given, unless
    ``--method``/``-X`` says otherwise; flags may come before or after the route.
    """
    method: str | None = None
    fields: list[tuple[str, str]] = []
    body_file: str | None = None
    route: str | None = None

    def take(option: str, value: str | None) -> None:
        nonlocal method, body_file
        kind = _GH_API_VALUE[option]
        if kind == "method" and value is not None:
            method = value
        elif kind == "field" and option == "--input":
            body_file = value or ""
        elif kind == "field":
            fields.append((option, value or ""))

    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            if route is None and index < len(args):
                route = args[index]
            break
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in _GH_API_FLAGS:
                continue
            if name not in _GH_API_VALUE:
                return GhApiCall("", "", f"gh api option '{name}' is not one runtime can read")
            if not eq:
                value = args[index] if index < len(args) else ""
                index += 1
            take(name, value)
            continue
        if arg.startswith("-") and len(arg) > 1:
            letters = arg[1:]
            for position, letter in enumerate(letters):
                option = f"-{letter}"
                if option in _GH_API_FLAGS:
                    continue
                if option not in _GH_API_VALUE:
                    return GhApiCall(
                        "", "", f"gh api option '{option}' is not one runtime can read"
                    )
                value = letters[position + 1 :]
                if not value:
                    value = args[index] if index < len(args) else ""
                    index += 1
                take(option, value)
                break
            continue
        if route is None:
            route = arg
    if route is None:
        return GhApiCall("", "", "gh api names no route")
    chosen = (method or ("POST" if fields or body_file is not None else "GET")).upper()
    if not route.startswith("/") and "://" not in route:
        route = "/" + route
    return GhApiCall(chosen, route, "", tuple(fields), body_file)


class GhGraphql(NamedTuple):
    documents: tuple[str, ...]  # every query= value gh would send, in order
    problem: str = ""  # why runtime cannot know the document before the step runs


# what gh's typed fields (-F) fill from the repository of the working folder
_GH_PLACEHOLDER = re.compile(r"\{(owner|repo|branch)\}")


def gh_graphql(call: GhApiCall) -> GhGraphql | None:
    """The GraphQL documents of a ``gh api`` call to GitHub's GraphQL endpoint, or None
    when the call is to another route.

    The endpoint is any route whose last segment begins with ``graphql`` (gh's
    ``graphql``, ``/graphql``, ``/api/graphql``, a full URL; a REST route never ends so,
    and one that did would only be decided twice). Its documents are the values of every
    field named ``query`` (any case, ``query[]`` too): gh sends the last, and each is
    decided. A document runtime cannot read before the step runs is a problem: a body
    from ``--input``, a typed field's ``@file`` or ``@-``, or its ``{owner}``,
    ``{repo}`` or ``{branch}``, which gh fills from the working folder's repository.
    """
    path = unquote(urlsplit(call.route).path if "://" in call.route else call.route)
    segments = [s for s in path.replace("\\", "/").split("/") if s not in ("", ".")]
    if not segments or not segments[-1].casefold().startswith("graphql"):
        return None
    if call.body_file is not None:
        return GhGraphql(
            (),
            f"gh api {call.route} --input {call.body_file or '-'}: the request body is read "
            "from a file when the step runs, so its GraphQL document cannot be decided now",
        )
    documents: list[str] = []
    for option, field in call.fields:
        key, _, value = field.partition("=")
        if key.partition("[")[0].casefold() != "query":
            continue
        typed = option in ("-F", "--field")
        if typed and value.startswith("@"):
            return GhGraphql(
                (),
                f"gh api {call.route} {option} {key}={value}: the GraphQL document is read "
                f"from {'standard input' if value == '@-' else 'a file'} when the step runs, "
                "so it cannot be decided now",
            )
        if typed and _GH_PLACEHOLDER.search(value):
            found = _GH_PLACEHOLDER.search(value)
            assert found is not None
            return GhGraphql(
                (),
                f"gh api {call.route} {option} {key}=...: gh fills {found.group(0)} in a "
                "typed field from the working folder's repository, so the GraphQL document "
                "it sends is not the one written",
            )
        documents.append(value)
    return GhGraphql(tuple(documents))


# -- gh: what an option says, and which hosts the call would reach ------------------------


def option_values(args: Sequence[str], long: str, short: str | None = None) -> list[str]:
    """Every value given to ``long`` (``--jq X``, ``--jq=X``) or ``short`` (``-q X``, ``-qX``,
    at the end of a cluster ``-iq X``) before ``--``."""
    found: list[str] = []
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else None
        if arg == "--":
            break
        if arg == long or arg.startswith(long + "="):
            value = arg[len(long) + 1 :] if "=" in arg else following
        elif short and arg.startswith("-") and not arg.startswith("--") and short[1] in arg:
            rest = arg[arg.index(short[1]) + 1 :]
            value = rest or following
        else:
            continue
        if value is not None:
            found.append(value)
    return found


# jq's ways to read the environment: `env`, `$ENV` (gh's jq is gojq, which has both)
_JQ_ENVIRONMENT = re.compile(r"\$ENV\b|(?<![\w$.])env\b")


def jq_reads_environment(expression: str) -> bool:
    return _JQ_ENVIRONMENT.search(expression) is not None


def refusal(args: Sequence[str]) -> Decision | None:
    """gh's jq (``--jq``/``-q``) never reads the environment, where gh keeps its token;
    an expression holding an input not known yet is left to plan time."""
    for expression in option_values(args, "--jq", "-q"):
        if UNKNOWN not in expression and jq_reads_environment(expression):
            return Decision(
                False,
                "built-in: gh's jq never reads the environment",
                f"the jq expression {expression!r} reads the environment, where gh keeps its token",
                "select fields of the response only (env and $ENV are refused)",
            )
    return None


_URL_HOST = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/@]*@)?([^/?#]+)")
_SCP_HOST = re.compile(r"^[\w.-]+@([\w.-]+):")
# HOST/OWNER/REPO as gh reads a repository argument (not ./path, /path, ~/path or -option)
_HOST_REPO = re.compile(r"[^-./~\s][^/\s]*/[^/\s]+/[^/\s]+")


def gh_targets(args: Sequence[str]) -> list[tuple[str, str]]:
    """(what, host) for each host the gh args name: a ``--repo``/``-R`` value with a host
    part (``HOST/OWNER/REPO`` or a URL), ``--hostname``, any argument that is a URL
    (``gh api https://...``, ``gh pr view https://HOST/...``), and a ``gh repo ...``
    positional written ``HOST/OWNER/REPO``."""
    found: list[tuple[str, str]] = []
    for value in option_values(args, "--repo", "-R"):
        host = _host_of(value)
        if host is None and value.count("/") >= 2:
            host = value.split("/", 1)[0]
        if host:
            found.append((f"--repo {value}", host))
    for value in option_values(args, "--hostname"):
        found.append((f"--hostname {value}", value))
    if args[:1] == ["repo"]:
        # gh repo view/clone/fork/... take the repository as a positional that may be
        # HOST/OWNER/REPO; gh then uses its enterprise token for HOST. A local path
        # (clone's directory) is written ./a/b/c or /a/b/c to be told apart.
        for arg in args[2:]:
            if _HOST_REPO.fullmatch(arg) and not any(arg in what for what, _ in found):
                found.append((arg, arg.split("/", 1)[0]))
    for arg in args:
        host = _host_of(arg)
        if host is not None and not any(arg in what for what, _ in found):
            found.append((arg, host))
    return [(what, host.lower()) for what, host in found]


def _host_of(text: str) -> str | None:
    match = _URL_HOST.match(text) or _SCP_HOST.match(text)
    return match.group(1) if match else None


# -- the profile -----------------------------------------------------------------------


def read_api(args: Sequence[str]) -> ApiRequest:
    """``gh api ARGS`` (the args after ``api``) as the request the policy decides."""
    call = gh_api_call(args)
    if call.problem:
        return ApiRequest(
            "",
            "",
            call.problem,
            "runtime decides gh api like the github provider's api operation; use the "
            "options gh documents (-X, -f, -F, -H, --jq, --paginate...)",
        )
    graphql = gh_graphql(call)
    if graphql is None:
        return ApiRequest(call.method, call.route)
    return ApiRequest(
        call.method,
        call.route,
        graphql=True,
        documents=graphql.documents,
        graphql_problem=graphql.problem,
    )


# gh reaches the GitHub host and runs git (repo clone, pr checkout)
GH = ProgramProfile(
    "gh",
    runs=("git",),
    hosts_of=("github",),
    global_options=GLOBAL_OPTIONS,
    api="api",
    read_api=read_api,
    hands_over=gh_git_clone,
    named_hosts=gh_targets,
    refusal=refusal,
)
