"""A binary step's arguments read as the program will read them.

A provider operation has a declared form, and its args are bound as authored
(:func:`runtime.provider.bind`). A binary has no declared form, so this
module reads the little that the program's own grammar makes unambiguous,
always from the args *as authored*:

* which authored args are options, and whether an input fills an option's
  name (never allowed) or its value (allowed, unless the policy lists the
  option in ``literal_options``);
* whether a substituted value would start with ``-`` where the author wrote
  no option: the program would take the input for an option
  (``git fetch ${remote}`` with ``remote=--upload-pack=...``). Refused unless
  the author wrote ``--`` before it;
* the subcommand of a program with subcommands (git, gh): the first
  positional after the global options the program accepts;
* the reading forms of ``git config``, the method and route of ``gh api``
  and the GraphQL documents of ``gh api graphql``, which the policy decides
  like the github provider's own calls;
* the args gh hands to ``git clone`` (``gh repo clone REPO [DIR] -- ARGS``,
  ``gh repo fork REPO -- ARGS``, ``gh gist clone GIST [DIR] -- ARGS``): after
  gh's ``--`` they are git's options again, so the policy decides them as git's
  and an input there must not start with ``-`` unless git's own ``--`` came
  first.

Nothing here runs anything or reads the file system.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from runtime.document.grammar import REFERENCE


class InputMisuse(NamedTuple):
    """An input that would become (part of) an option: refused at plan time (exit 2)."""

    arg_index: int
    inputs: tuple[str, ...]
    message: str
    hint: str


def references(text: str) -> tuple[str, ...]:
    return tuple(m.group(1) for m in REFERENCE.finditer(text))


def input_misuses(
    authored: Sequence[str], resolved: Sequence[str], program: str | None = None
) -> list[InputMisuse]:
    """Every place where an input value would name an option instead of filling a slot.

    * an authored option (``--name=...``) whose name holds a reference;
    * an authored short option (``-x...``) holding a reference anywhere: a short
      option's attached value cannot be told from more clustered flags;
    * an authored argument that is not an option but whose substituted text
      starts with ``-``, unless an authored ``--`` came before it.

    ``program``: the program the args are for. gh hands what follows its ``--`` in
    ``repo clone`` (and the other forms :func:`gh_git_clone` reads) to ``git clone``,
    where they are options again: the scan goes on after that ``--``, as for git's args,
    until git's own ``--``.
    """
    found: list[InputMisuse] = []
    after_separator = False
    forwarded = gh_git_clone(resolved) if program == "gh" else None
    git_starts = forwarded.dash if forwarded is not None else None
    for index, (text, value) in enumerate(zip(authored, resolved, strict=True)):
        if index == git_starts:
            after_separator = False  # gh's `--`: what follows is git clone's args
            continue
        to_git = git_starts is not None and index > git_starts
        if after_separator:
            continue
        if text == "--":
            after_separator = True
            continue
        names = references(text)
        if text.startswith("--"):
            name = text.partition("=")[0]
            named = references(name)
            if named:
                found.append(
                    InputMisuse(
                        index,
                        named,
                        f"input {_names(named)} would choose the option name in '{text}'",
                        "an input fills an option's value only: write the option itself, "
                        "as --name=${value}",
                    )
                )
            continue
        if text.startswith("-") and len(text) > 1:
            if names:
                found.append(
                    InputMisuse(
                        index,
                        names,
                        f"input {_names(names)} is part of the short option '{text}'",
                        f"write the option and its value as two args: [{text[:2]}, "
                        f'"${{{names[0]}}}"], or use the long form --name=${{{names[0]}}}',
                    )
                )
            continue
        if names and value.startswith("-") and to_git:
            found.append(
                InputMisuse(
                    index,
                    names,
                    f"the value of input {_names(names)} starts with '-', so git clone, which "
                    "gh hands the args after its `--`, would read it as an option",
                    "an input never becomes an option. If the value really is an operand, "
                    "write git's own \"--\" before it, after gh's; if an option was meant, "
                    "write the option in the capability (--name=${value})",
                )
            )
        elif names and value.startswith("-"):
            found.append(
                InputMisuse(
                    index,
                    names,
                    f"the value of input {_names(names)} starts with '-', so the program "
                    "would read it as an option",
                    "an input never becomes an option. If the value really is a positional "
                    'argument (a path, a ref), put "--" before it in the step\'s args; if an '
                    "option was meant, write the option in the capability (--name=${value})",
                )
            )
    return found


def _names(names: Sequence[str]) -> str:
    unique = list(dict.fromkeys(names))
    return ", ".join(f"'{n}'" for n in unique)


# -- options whose value an input fills -------------------------------------------------


class OptionUse(NamedTuple):
    option: str  # the policy entry that matched, e.g. "--upload-pack" or "clone -u"
    arg_index: int  # where the option is written
    inputs: tuple[str, ...]  # the inputs that fill its value


def _long_matches(entry: str, written: str) -> bool:
    """``written`` (``--name``) is ``entry`` or an abbreviation git would accept."""
    return written == entry or (len(written) > 3 and entry.startswith(written))


def literal_option_uses(
    authored: Sequence[str], entries: Sequence[str], subcommand: str | None
) -> list[OptionUse]:
    """Where an input fills the value of an option listed in ``entries``.

    An entry is ``--name``, ``-x``, or ``SUBCOMMAND -x`` (the option only counts
    for that subcommand: git's ``-u`` is ``--upload-pack`` for clone but
    ``--set-upstream`` for push). A value is filled by an input when the
    option's own arg holds a reference after ``=`` (``--name=${v}``, ``-x${v}``),
    or when the next arg holds one (``[--name, "${v}"]``, ``[-x, "${v}"]``,
    ``[-qx, "${v}"]``).
    """
    options: list[str] = []
    for entry in entries:
        scope, _, option = entry.rpartition(" ")
        if not scope or scope == subcommand:
            options.append(option)
    if not options:
        return []
    found: list[OptionUse] = []
    for index, text in enumerate(authored):
        if text == "--":
            break
        if not text.startswith("-") or len(text) < 2:
            continue
        following = references(authored[index + 1]) if index + 1 < len(authored) else ()
        if text.startswith("--"):
            name, eq, value = text.partition("=")
            for option in options:
                if option.startswith("--") and _long_matches(option, name):
                    filled = references(value) if eq else following
                    if filled:
                        found.append(OptionUse(_entry_for(entries, option), index, filled))
            continue
        letters = text[1:]
        for position, letter in enumerate(letters):
            option = f"-{letter}"
            if option not in options:
                continue
            rest = letters[position + 1 :]
            filled = references(rest) if rest else following
            if filled:
                found.append(OptionUse(_entry_for(entries, option), index, filled))
    return found


def _entry_for(entries: Sequence[str], option: str) -> str:
    for entry in entries:
        if entry.rpartition(" ")[2] == option:
            return entry
    return option


# -- subcommands ---------------------------------------------------------------------------

# The global options a program accepts before its subcommand: option -> takes a value.
# Anything else before the subcommand is not understood, so no subcommand can be named.
GLOBAL_OPTIONS: dict[str, dict[str, bool]] = {
    "git": {
        "-C": True,
        "-c": True,
        "--config-env": True,
        "--git-dir": True,
        "--work-tree": True,
        "--namespace": True,
        "--super-prefix": True,
        "--exec-path": False,
        "--html-path": False,
        "--man-path": False,
        "--info-path": False,
        "-p": False,
        "--paginate": False,
        "-P": False,
        "--no-pager": False,
        "--no-replace-objects": False,
        "--no-lazy-fetch": False,
        "--bare": False,
        "--literal-pathspecs": False,
        "--glob-pathspecs": False,
        "--noglob-pathspecs": False,
        "--icase-pathspecs": False,
        "--no-optional-locks": False,
        "--version": False,
        "-v": False,
        "--help": False,
        "-h": False,
    },
    "gh": {"--help": False, "-h": False, "--version": False},
}


class Subcommand(NamedTuple):
    name: str | None  # None: the args name no subcommand (``git --version``)
    position: int  # its index in the args (len(args) when none)
    problem: str = ""  # why no subcommand could be told, when the args cannot be read


def find_subcommand(binary: str, args: Sequence[str]) -> Subcommand:
    """The first positional after the global options ``binary`` is known to accept."""
    known = GLOBAL_OPTIONS.get(binary, {})
    index = 0
    while index < len(args):
        arg = args[index]
        if not arg.startswith("-") or arg == "-":
            return Subcommand(arg, index)
        name, eq, _ = arg.partition("=")
        if name not in known:
            return Subcommand(
                None,
                index,
                f"'{arg}' before the subcommand is not a global option runtime knows for {binary}",
            )
        index += 2 if known[name] and not eq else 1
    return Subcommand(None, len(args))


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


class GhGitClone(NamedTuple):
    """Where the args gh hands to ``git clone`` are in a gh call's args."""

    command: str  # "repo clone"
    # indexes into the args of what git gets, in git's order: `git clone ARGS URL [DIR]`
    # without the URL (gh's own): the args after the repository, DIR (their first, when it
    # is no option) moved last
    indexes: tuple[int, ...]
    dash: int | None  # the index of gh's own `--`, None when there is none
    problem: str = ""  # why the args cannot be read as gh reads them


def gh_git_clone(args: Sequence[str]) -> GhGitClone | None:
    """For ``gh repo clone``, ``gh repo fork`` and ``gh gist clone``, which args gh hands to
    ``git clone``, read as gh (cobra and pflag) reads them; None for any other gh call.

    gh takes its positionals (before its ``--``) and everything after that ``--`` as one
    list; the first is the repository, the rest go to ``git clone`` (``parseCloneArgs``:
    the first of them, unless it starts with ``-``, is the directory, put after the URL).
    A flag runtime does not know for the command, or an option before the command's
    second word, leaves the args unreadable (``problem``): gh might end its flags
    elsewhere than runtime thinks.
    """
    sub = find_subcommand("gh", args)
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
            return GhGitClone(
                f"{sub.name} {candidate}",
                (),
                None,
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
                return GhGitClone(
                    command,
                    (),
                    None,
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
    return GhGitClone(command, tuple(given), dash)


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


# -- git config: only its reading forms --------------------------------------------------

_CONFIG_READ = {
    "--get",
    "--get-all",
    "--get-regexp",
    "--get-urlmatch",
    "--get-color",
    "--get-colorbool",
    "--list",
    "-l",
}
_CONFIG_WRITE = {
    "--add",
    "--unset",
    "--unset-all",
    "--replace-all",
    "--rename-section",
    "--remove-section",
    "--edit",
    "-e",
    "--comment",
}
# options that only choose where to read from or how to print: option -> takes a value
_CONFIG_NEUTRAL = {
    "--global": False,
    "--system": False,
    "--local": False,
    "--worktree": False,
    "-f": True,
    "--file": True,
    "--blob": True,
    "--type": True,
    "--default": True,
    "--show-origin": False,
    "--show-scope": False,
    "--name-only": False,
    "-z": False,
    "--null": False,
    "--bool": False,
    "--int": False,
    "--bool-or-int": False,
    "--path": False,
    "--expiry-date": False,
    "--includes": False,
    "--no-includes": False,
    "--fixed-value": False,
    "--all": False,
    "--regexp": False,
    "--url": True,
}


def git_config_reads(args: Sequence[str]) -> bool:
    """Whether ``git config ARGS`` (the args after ``config``) only reads.

    A read is an explicit read action (``--get``, ``--list``, ``get``, ``list``...)
    or a single name (``git config user.name``). Anything else -- a write action,
    two positionals (``name value`` sets), an option runtime does not know -- is
    not a read.
    """
    positionals: list[str] = []
    reading = False
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            positionals.extend(args[index:])
            break
        if not arg.startswith("-") or arg == "-":
            positionals.append(arg)
            continue
        name, eq, _ = arg.partition("=")
        if name in _CONFIG_WRITE:
            return False
        if name in _CONFIG_READ:
            reading = True
            continue
        if name not in _CONFIG_NEUTRAL:
            return False
        if _CONFIG_NEUTRAL[name] and not eq:
            index += 1
    if reading:
        return True
    if positionals and positionals[0] in ("get", "list"):
        return True
    return len(positionals) == 1 and positionals[0] not in (
        "set",
        "unset",
        "rename-section",
        "remove-section",
        "edit",
    )


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
