"""A binary step's arguments read as the program will read them.

A provider operation has a declared form, and its args are bound as authored
(:func:`runtime.plan.binding.bind`). A binary has no declared form, so this
module reads the little that the program's own grammar makes unambiguous,
always from the args *as authored*:

* which authored args are options, and whether an input fills an option's
  name (never allowed) or its value (allowed, unless the policy lists the
  option in ``literal_options``);
* whether a substituted value would start with ``-`` where the author wrote
  no option: the program would take the input for an option
  (``git fetch ${remote}`` with ``remote=--upload-pack=...``). Refused unless
  the author wrote ``--`` before it;
* the reading forms of ``git config``, and the one writing form allowed (the
  repository's ``user.name`` and ``user.email``);
* the args a program hands to another (gh's ``repo clone REPO [DIR] -- ARGS`` to
  ``git clone``, as the program's profile reads them,
  :attr:`runtime.provider.programs.ProgramProfile.hands_over`): after the program's ``--``
  they are the other program's options again, so an input there must not start
  with ``-`` unless that program's own ``--`` came first.

A program's subcommand (the first positional after the global options it accepts,
:meth:`runtime.provider.programs.ProgramProfile.subcommand`) and whatever else of its grammar
the policy reads come from its profile: the engine's (git), or that of the provider
that runs it (github's gh, ``providers/github/cli_args.py``).

Nothing here runs anything or reads the file system.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from runtime.document.grammar import REFERENCE
from runtime.provider.programs import ProgramProfile


class InputMisuse(NamedTuple):
    """An input that would become (part of) an option: refused at plan time (exit 2)."""

    arg_index: int
    inputs: tuple[str, ...]
    message: str
    hint: str


def references(text: str) -> tuple[str, ...]:
    return tuple(m.group(1) for m in REFERENCE.finditer(text))


def input_misuses(
    authored: Sequence[str], resolved: Sequence[str], program: ProgramProfile | None = None
) -> list[InputMisuse]:
    """Every place where an input value would name an option instead of filling a slot.

    * an authored option (``--name=...``) whose name holds a reference;
    * an authored short option (``-x...``) holding a reference anywhere: a short
      option's attached value cannot be told from more clustered flags;
    * an authored argument that is not an option but whose substituted text
      starts with ``-``, unless an authored ``--`` came before it.

    ``program``: the profile of the program the args are for. A program that hands
    what follows its ``--`` to another (:attr:`ProgramProfile.hands_over`: gh's ``repo
    clone`` to ``git clone``), where they are options again: the scan goes on after that
    ``--``, as for the other program's args, until its own ``--``.
    """
    found: list[InputMisuse] = []
    after_separator = False
    hands_over = program.hands_over if program is not None else None
    forwarded = hands_over(resolved) if hands_over is not None else None
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
        if names and value.startswith("-") and to_git and forwarded and program:
            other = " ".join((forwarded.program, *forwarded.words))
            found.append(
                InputMisuse(
                    index,
                    names,
                    f"the value of input {_names(names)} starts with '-', so {other}, which "
                    f"{program.name} hands the args after its `--`, would read it as an option",
                    "an input never becomes an option. If the value really is an operand, "
                    f"write {forwarded.program}'s own \"--\" before it, after {program.name}'s; "
                    "if an option was meant, write the option in the capability "
                    "(--name=${value})",
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


# what git config may write: the identity a commit records, in the repository (a CI runner
# has no global identity, and runtime reads none but the user's). Neither names a program;
# any other key may (core.sshCommand, alias.*, credential.helper...), so none other is set.
GIT_IDENTITY_KEYS = ("user.name", "user.email")


def git_config_sets_identity(args: Sequence[str]) -> bool:
    """Whether ``git config ARGS`` (the args after ``config``) sets ``user.name`` or
    ``user.email`` in the repository and does nothing else: ``[--local] KEY VALUE``, a
    VALUE git does not read as an option."""
    rest = list(args[1:]) if args[:1] == ["--local"] else list(args)
    return len(rest) == 2 and rest[0].lower() in GIT_IDENTITY_KEYS and not rest[1].startswith("-")


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
