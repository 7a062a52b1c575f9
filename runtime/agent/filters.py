"""The read-only filters a ``runtime`` command may be piped into, and their command lines.

The policy's ``agents.shell_filters`` lists which of these an assistant may use
(:data:`runtime.plan.policy.SHELL_FILTERS` names the ones a policy can list: this
module's, a test holds the two equal). A filter is admitted only with arguments that
keep it reading the pipe and writing stdout: options this module knows, no file
operands (``grep foo secrets.txt`` would read a file runtime never saw), none of the
options that read a file or a folder (``grep -f``, ``grep -r``, ``jq --rawfile``,
``wc --files0-from``), and for jq a program that does not read the environment, where
a token may be (``env``, ``$ENV``) or load modules from files (``import``,
``include``). Anything else is refused, with what would do instead.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


class Grammar:
    """A filter's options: ``flags`` take no value, ``valued`` one (attached, ``-n5``,
    ``--lines=5``, or the next argument), ``pairs`` two (jq's ``--arg NAME VALUE``);
    ``refused`` maps an option to why it is refused; ``operands`` is how many
    arguments that are not options it takes (``pattern`` is the option that stands in
    for its one operand: grep's ``-e``); ``numbers``: ``-5`` is an option."""

    def __init__(
        self,
        flags: str,
        valued: str,
        refused: dict[str, str],
        operands: int,
        *,
        long_flags: Sequence[str] = (),
        long_valued: Sequence[str] = (),
        pairs: Sequence[str] = (),
        pattern: Sequence[str] = (),
        numbers: bool = False,
        optional: Sequence[str] = (),
    ) -> None:
        self.flags = set(flags)
        self.valued = set(valued)
        self.long_flags = set(long_flags)
        self.long_valued = set(long_valued)
        self.pairs = set(pairs)
        self.refused = refused
        self.operands = operands
        self.pattern = set(pattern)
        self.numbers = numbers
        # long options whose value is optional and attached only (grep's --color[=WHEN])
        self.optional = set(optional)


_READS_FILES = "reads files named on its command line, not the pipe"
_FOLLOWS = "keeps waiting for more input"

GRAMMARS: dict[str, Grammar] = {
    "grep": Grammar(
        "iyvcnowxEFGPqshHazZlLbTU",
        "emABC",
        {
            "-f": "reads its patterns from a file",
            "--file": "reads its patterns from a file",
            "-r": _READS_FILES,
            "-R": _READS_FILES,
            "--recursive": _READS_FILES,
            "--dereference-recursive": _READS_FILES,
            "-d": _READS_FILES,
            "--directories": _READS_FILES,
            "-D": _READS_FILES,
            "--devices": _READS_FILES,
            "--include": _READS_FILES,
            "--exclude": _READS_FILES,
            "--exclude-from": "reads a file",
            "--exclude-dir": _READS_FILES,
        },
        1,
        long_flags=(
            "ignore-case",
            "no-ignore-case",
            "invert-match",
            "count",
            "line-number",
            "only-matching",
            "word-regexp",
            "line-regexp",
            "extended-regexp",
            "fixed-strings",
            "basic-regexp",
            "perl-regexp",
            "quiet",
            "silent",
            "no-messages",
            "no-filename",
            "with-filename",
            "text",
            "null-data",
            "null",
            "byte-offset",
            "initial-tab",
            "files-with-matches",
            "files-without-match",
            "line-buffered",
            "binary",
        ),
        long_valued=(
            "regexp",
            "max-count",
            "after-context",
            "before-context",
            "context",
            "label",
            "binary-files",
        ),
        pattern=("-e", "--regexp"),
        numbers=True,
        optional=("color", "colour"),
    ),
    "head": Grammar(
        "qvz",
        "nc",
        {},
        0,
        long_flags=("quiet", "silent", "verbose", "zero-terminated"),
        long_valued=("lines", "bytes"),
        numbers=True,
    ),
    "tail": Grammar(
        "qvz",
        "nc",
        {
            "-f": _FOLLOWS,
            "-F": _FOLLOWS,
            "--follow": _FOLLOWS,
            "--retry": _FOLLOWS,
            "--pid": _FOLLOWS,
        },
        0,
        long_flags=("quiet", "silent", "verbose", "zero-terminated"),
        long_valued=("lines", "bytes"),
        numbers=True,
    ),
    "wc": Grammar(
        "cmlLw",
        "",
        {"--files0-from": "reads the files a file names"},
        0,
        long_flags=("bytes", "chars", "lines", "max-line-length", "words"),
        long_valued=("total",),
    ),
    "jq": Grammar(
        "rjacnesSCMR",
        "",
        {
            "-f": "reads its program from a file",
            "--from-file": "reads its program from a file",
            "--rawfile": "reads a file",
            "--slurpfile": "reads a file",
            "-L": "loads modules from a folder",
            "--library-path": "loads modules from a folder",
            "--args": "takes the arguments after the program as values (pass them with --arg)",
            "--jsonargs": "takes the arguments after the program as values (pass them with --argjson)",
            "--run-tests": "reads test files",
        },
        1,
        long_flags=(
            "raw-output",
            "raw-output0",
            "join-output",
            "ascii-output",
            "compact-output",
            "null-input",
            "exit-status",
            "slurp",
            "sort-keys",
            "color-output",
            "monochrome-output",
            "raw-input",
            "tab",
            "seq",
            "stream",
            "stream-errors",
            "unbuffered",
        ),
        long_valued=("indent",),
        pairs=("--arg", "--argjson"),
    ),
}

# Names in a jq program that reach past its input: the environment (where tokens are)
# and module files.
_JQ_REFUSED = {
    "env": "reads the environment, where tokens may be",
    "$ENV": "reads the environment, where tokens may be",
    "import": "loads a module from a file",
    "include": "loads a module from a file",
    "modulemeta": "reads module files",
    "get_search_list": "reads jq's module search path",
    "input_filename": "names the input's files",
}
_JQ_NAME = re.compile(r"\$?(?:__loc__|[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)")


def check(name: str, args: Sequence[str]) -> tuple[str, str] | None:
    """Why ``name args`` is not a read-only filter of the pipe, and what would do
    instead; None when it is one. ``name`` must be a key of :data:`GRAMMARS`."""
    grammar = GRAMMARS[name]
    operands: list[str] = []
    patterns = 0
    i = 0
    options_done = False
    while i < len(args):
        arg = args[i]
        i += 1
        if options_done or arg == "-" or not arg.startswith("-"):
            operands.append(arg)
            continue
        if arg == "--":
            options_done = True
            continue
        if arg.startswith("--"):
            option, eq, _ = arg.partition("=")
            long = option[2:]
            if option in grammar.refused:
                return _refused(name, option, grammar.refused[option])
            if long in grammar.long_flags and not eq:
                continue
            if long in grammar.optional:
                continue
            if long in grammar.long_valued:
                if not eq:
                    if i >= len(args):
                        return _refused(name, option, "needs a value")
                    i += 1
                patterns += option in grammar.pattern
                continue
            if option in grammar.pairs:
                if eq or i + 2 > len(args):
                    return _refused(name, option, "takes a name and a value")
                i += 2
                continue
            return _unknown(name, option)
        # a cluster of short options: -inv, -n5, -A 3, -5
        cluster = arg[1:]
        if grammar.numbers and cluster.isdigit():
            continue
        for at, letter in enumerate(cluster):
            option = "-" + letter
            if option in grammar.refused:
                return _refused(name, option, grammar.refused[option])
            if letter in grammar.flags:
                continue
            if letter in grammar.valued:
                if at == len(cluster) - 1:
                    if i >= len(args):
                        return _refused(name, option, "needs a value")
                    i += 1
                patterns += option in grammar.pattern
                break
            return _unknown(name, option)
    allowed = grammar.operands - (1 if patterns and grammar.pattern else 0)
    if len(operands) > allowed:
        extra = operands[allowed]
        return (
            f"`{name}` is given {extra!r} as a file to read: a filter here reads only the pipe",
            f"drop {extra!r}: `{name}` filters what the runtime command prints",
        )
    if name == "jq" and operands:
        return _jq_program(operands[0])
    return None


def _refused(name: str, option: str, why: str) -> tuple[str, str]:
    return (
        f"`{name} {option}` {why}",
        f"use `{name}` without {option}: it filters only what the runtime command prints",
    )


def _unknown(name: str, option: str) -> tuple[str, str]:
    return (
        f"`{name}` option {option} is not one the guard knows to read only the pipe",
        f"use `{name}` with its common options (runtime agent hook --help lists what is read)",
    )


def _jq_program(program: str) -> tuple[str, str] | None:
    """Why the jq ``program`` reaches past its input (the environment, module files)."""
    for name in _jq_names(program):
        why = _JQ_REFUSED.get(name)
        if why is not None:
            return (
                f"the jq program uses `{name}`, which {why}",
                "filter only the runtime command's output (the credentials runtime uses are "
                "never in it)",
            )
    return None


def _jq_names(program: str) -> list[str]:
    """The names a jq program uses as code: not field names (``.env``), not the text of a
    string (but the code inside its interpolations, ``"\\(env.X)"``), not comments."""
    names: list[str] = []
    code = _jq_code(program)
    for match in _JQ_NAME.finditer(code):
        before = code[: match.start()].rstrip()
        if before.endswith(".") and not before.endswith(".."):
            continue  # a field: .env, .a.env
        names.append(match.group())
    return names


def _jq_code(program: str) -> str:
    """``program`` with the literal text of its strings and its comments blanked (a
    string's interpolations stay, they are code)."""
    out: list[str] = []
    depth: list[int] = []  # for each open interpolation, the parentheses open inside it
    i = 0
    in_string = False
    while i < len(program):
        char = program[i]
        if in_string:
            if char == "\\" and program[i + 1 : i + 2] == "(":
                in_string = False
                depth.append(0)
                out.append(" (")
                i += 2
                continue
            if char == "\\":
                out.append("  ")
                i += 2
                continue
            if char == '"':
                in_string = False
                out.append('"')
            else:
                out.append(" ")
            i += 1
            continue
        if char == '"':
            in_string = True
            out.append('"')
        elif char == "#":
            end = program.find("\n", i)
            i = len(program) if end < 0 else end
            continue
        elif depth and char == "(":
            depth[-1] += 1
            out.append(char)
        elif depth and char == ")":
            if depth[-1] == 0:
                depth.pop()
                in_string = True  # back in the string the interpolation is part of
            else:
                depth[-1] -= 1
            out.append(char)
        else:
            out.append(char)
        i += 1
    return "".join(out)
