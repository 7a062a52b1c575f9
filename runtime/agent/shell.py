"""Deciding a shell command an assistant is about to run.

A command is allowed only when it is one ``runtime ...`` invocation, optionally piped
into the read-only filters the policy lists (:mod:`runtime.agent.filters`), every word
of it literal after the shell's quote removal. It is read with a real shell grammar,
tree-sitter-bash, never by matching strings, and refused for anything the grammar
shows that is not that: a second command (``;``, ``&&``, ``||``, a newline), ``&``,
a command or process substitution, an expansion (``$VAR``, ``$((...))``), a
here-document or here-string, a redirection to a file outside the working folder (or
into ``.git`` or an assistant's settings), a variable set for the command other than
the few that only change how runtime prints (``RUNTIME_OUTPUT``, ``NO_COLOR``...),
runtime run by a path or through another program (``env runtime``,
``/usr/bin/runtime``), a subshell, and whatever the grammar cannot parse. A refusal
says what was wrong and what to run instead (:func:`instead`).

Loading the grammar is most of a decision's cost, and a decision is made on every
shell command an assistant issues: :func:`parser` loads the two compiled modules of
tree-sitter and tree-sitter-bash by their file, skipping their packages' ``__init__``
(which import ``typing`` and ``importlib.resources``, more than the rest of the hook
together; ARCHITECTURE.md, "Measured choices"), and falls back to the packages'
ordinary import.
"""

from __future__ import annotations

import os

from runtime.agent import filters

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any


class Verdict:
    """What the guard decided: ``allowed``; else ``rule`` (a stable name of what was
    wrong), ``reason`` (said to the assistant) and ``hint`` (what to run instead)."""

    __slots__ = ("allowed", "hint", "reason", "rule")

    def __init__(self, allowed: bool, rule: str = "", reason: str = "", hint: str = "") -> None:
        self.allowed = allowed
        self.rule = rule
        self.reason = reason
        self.hint = hint


class Refused(Exception):
    def __init__(self, rule: str, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.rule = rule
        self.reason = reason
        self.hint = hint


# Variables a command may set for runtime: they change only how it prints. Anything
# else (RUNTIME_POLICY_FILE, RUNTIME_HOME, HOME, a token, PATH, PYTHONPATH, LD_PRELOAD...)
# changes which policy, Home, credentials or code it runs with.
PRINTING_VARIABLES = frozenset(
    {"RUNTIME_OUTPUT", "RUNTIME_LOG_LEVEL", "RUNTIME_LOG_FORMAT", "NO_COLOR", "COLUMNS", "TZ"}
)
# Where a redirection never writes, whatever the working folder: the repository's own
# files (a .git/config can make git run a program) and the files that configure the
# assistants, their hooks among them.
PROTECTED_PARTS = frozenset({".git", ".claude", ".cursor", ".codex", ".gemini", ".vscode"})
PROTECTED_FILES = frozenset({".mcp.json", "AGENTS.md"})
_GLOB = frozenset("*?[{~")
_SEPARATORS = {
    ";": "runs a second command after `;`",
    "&": "runs in the background (`&`)",
    "&&": "chains commands with `&&`",
    "||": "chains commands with `||`",
}
_CONSTRUCTS = {
    "list": "chains commands with `&&` or `||`",
    "subshell": "runs a subshell `( ... )`",
    "compound_statement": "runs a group `{ ...; }`",
    "negated_command": "negates a command with `!`",
    "function_definition": "defines a shell function",
    "variable_assignment": "sets a shell variable",
    "declaration_command": "declares shell variables (export, declare, local...)",
    "unset_command": "unsets shell variables",
    "test_command": "runs a shell test `[[ ... ]]`",
}
_EXPANSIONS = {
    "command_substitution": ("substitution", "runs a command substitution `$(...)`"),
    "process_substitution": ("substitution", "runs a process substitution `<(...)`"),
    "simple_expansion": ("expansion", "expands a shell variable"),
    "expansion": ("expansion", "expands a shell variable"),
    "arithmetic_expansion": ("expansion", "expands an arithmetic expression `$((...))`"),
    "ansi_c_string": ("quoting", "uses ANSI-C quoting `$'...'`"),
    "translated_string": ("quoting", 'uses locale quoting `$"..."`'),
}
_LITERAL_HINT = (
    "write each argument as it is, in single quotes when it has spaces or shell characters; "
    "a value runtime needs from elsewhere comes from an input (--input), a file "
    "(runtime files read) or its own credential store (runtime auth login)"
)


def parser() -> Any:
    """A tree-sitter parser of bash (its compiled modules loaded by their file)."""
    try:
        core = _binding("tree_sitter")
        bash = _binding("tree_sitter_bash")
    except ImportError:
        core = bash = None
    if core is None or bash is None:
        import tree_sitter as core
        import tree_sitter_bash as bash
    return core.Parser(core.Language(bash.language()))


def _binding(package: str) -> Any:
    """``package._binding`` loaded from its file without running ``package/__init__``
    (registered in ``sys.modules``, so a later ``import package`` reuses it); None if it
    is not there."""
    import importlib.machinery
    import importlib.util
    import sys

    name = package + "._binding"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(package)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_binding" + suffix)
            if os.path.isfile(path):
                found = importlib.util.spec_from_file_location(name, path)
                if found is None or found.loader is None:
                    return None
                module = importlib.util.module_from_spec(found)
                found.loader.exec_module(module)
                sys.modules[name] = module
                return module
    return None


def judge(command: str, cwd: str, shell_filters: Sequence[str], parse: Any) -> Verdict:
    """Whether ``command``, run in ``cwd``, is one runtime command (piped into
    ``shell_filters``); ``parse`` is a :func:`parser`."""
    try:
        _judge(command, cwd, shell_filters, parse)
    except Refused as refused:
        return Verdict(False, refused.rule, refused.reason, refused.hint)
    return Verdict(True)


def _judge(command: str, cwd: str, shell_filters: Sequence[str], parse: Any) -> None:
    if not command.strip():
        raise Refused("empty", "the command is empty", "run a `runtime ...` command")
    if "\x00" in command:
        raise Refused("parse", "the command holds a NUL character", "run a `runtime ...` command")
    root = parse.parse(command.encode("utf-8", "surrogatepass")).root_node
    statements = [n for n in root.named_children if n.type != "comment"]
    first = _first_words(statements)
    if root.has_error:
        raise Refused(
            "parse",
            "the command does not parse as one shell command",
            "write it as one runtime command, in single quotes the arguments that hold shell "
            "characters"
            if first[:1] == ["runtime"]
            else instead(first, command),
        )
    for child in root.children:
        if not child.is_named and _text(child) in _SEPARATORS:
            raise Refused("chain", f"the command {_SEPARATORS[_text(child)]}", _one(first))
    if len(statements) != 1:
        raise Refused(
            "chain",
            "the command holds more than one command (a newline separates commands too)",
            _one(first),
        )
    stages = _stages(statements[0], first)
    body, redirects = stages[0]
    _command(body, redirects, cwd, runtime=True, first=first)
    listed = list(shell_filters)
    for body, redirects in stages[1:]:
        name = _name(body)
        if name not in listed or name not in filters.GRAMMARS:
            pipe = ", ".join(listed) if listed else "none (the policy lists no filters)"
            raise Refused(
                "filter",
                f"the runtime command is piped into `{name or _text(body)}`, which is not "
                "a filter the policy lists (agents.shell_filters)",
                f"pipe only into {pipe}; or drop the pipe and use the command's own output "
                "(runtime -o json ..., runtime -o raw ...)",
            )
        args = _command(body, redirects, cwd, runtime=False, first=first)
        refusal = filters.check(name, args[1:])
        if refusal is not None:
            raise Refused("filter", *refusal)


def _stages(node: Any, first: list[str]) -> list[tuple[Any, list[Any]]]:
    """The commands of a pipeline (or the one command), each with its redirections."""
    if node.type == "redirected_statement":
        body = node.child_by_field_name("body")
        redirects = [c for c in node.named_children if c is not body]
        if body is None:
            raise Refused("parse", "the command has redirections and no command", _one(first))
        inner = _stages(body, first)
        last, more = inner[-1]
        inner[-1] = (last, [*more, *redirects])
        return inner
    if node.type == "pipeline":
        stages: list[tuple[Any, list[Any]]] = []
        for child in node.named_children:
            if child.type == "comment":
                continue
            one = _stages(child, first)
            if len(one) != 1:
                raise Refused("parse", "the pipeline nests another pipeline", _one(first))
            stages.extend(one)
        return stages
    if node.type == "command":
        return [(node, [])]
    why = _CONSTRUCTS.get(node.type, f"is a shell construct ({node.type.replace('_', ' ')})")
    raise Refused(
        "chain" if node.type == "list" else "construct", f"the command {why}", _one(first)
    )


def _command(
    node: Any, redirects: list[Any], cwd: str, *, runtime: bool, first: list[str]
) -> list[str]:
    """The words of a command whose every part is literal; its variables and
    redirections checked. The first word is ``runtime`` (``runtime``) or a filter."""
    words: list[str] = []
    for child in node.named_children:
        kind = child.type
        if kind == "variable_assignment":
            _variable(child, runtime)
        elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            redirects.append(child)
        elif kind == "command_name":
            name, expands = _literal(child)
            if runtime:
                _runtime_name(name, expands, _text(child), first)
            words.append(name)
        elif kind == "comment":
            continue
        else:
            value, expands = _literal(child)
            if expands and not runtime:
                raise Refused(
                    "expansion",
                    f"the argument {_text(child)!r} of `{words[0] if words else ''}` is expanded "
                    "by the shell (a glob, a brace or ~ expansion)",
                    "quote it, so that the filter gets it as written",
                )
            words.append(value)
    for redirect in redirects:
        _redirect(redirect, cwd)
    return words


def _runtime_name(name: str, expands: bool, raw: str, first: list[str]) -> None:
    if name == "runtime" and raw == "runtime":
        return
    if name == "runtime":
        raise Refused(
            "not-runtime",
            f"the command name {raw!r} is quoted or escaped",
            "write `runtime` as it is",
        )
    if name.rsplit("/", 1)[-1] == "runtime" and not expands:
        raise Refused(
            "not-runtime",
            f"the command runs runtime by the path {name!r}",
            "write `runtime ...`: the shell finds the installed runtime on PATH",
        )
    if "runtime" in first[1:]:
        raise Refused(
            "not-runtime",
            f"the command runs runtime through `{name}`",
            "run `runtime ...` itself, without a program in front of it",
        )
    raise Refused(
        "not-runtime", f"`{name}` is not runtime", instead(first, " ".join(first) or name)
    )


def _variable(node: Any, runtime: bool) -> None:
    name_node = node.child_by_field_name("name")
    name = _text(name_node) if name_node is not None else _text(node).split("=", 1)[0]
    value = node.child_by_field_name("value")
    if value is not None:
        _literal(value)
    if runtime and (name in PRINTING_VARIABLES or name.startswith("LC_") or name == "LANG"):
        return
    if not runtime:
        why = "sets a variable for a filter"
    elif name == "RUNTIME_POLICY_FILE":
        why = "changes runtime's policy"
    elif name in ("RUNTIME_HOME", "HOME") or name.startswith("XDG_"):
        why = "changes Runtime Home"
    elif any(part in name.upper() for part in ("TOKEN", "SECRET", "PASSWORD", "KEY", "CRED")):
        why = "sets a credential"
    elif name.startswith(("GH_", "GITHUB_", "RUNTIME_")):
        why = "changes the credentials or settings runtime reads"
    else:
        why = "changes what runtime runs with"
    raise Refused(
        "variable",
        f"the command sets {name}, which {why}",
        "run the command without it: runtime reads its policy and Home as they are set up, "
        "and its credentials from its own store (runtime auth login); "
        f"only {', '.join(sorted(PRINTING_VARIABLES))}, LANG and LC_* may be set",
    )


def _redirect(node: Any, cwd: str) -> None:
    if node.type == "heredoc_redirect":
        raise Refused(
            "heredoc",
            "the command has a here-document (<<)",
            "pass the text as an argument, or write it first with runtime files write",
        )
    if node.type == "herestring_redirect":
        raise Refused(
            "heredoc",
            "the command has a here-string (<<<)",
            "pass the text as an argument, or write it first with runtime files write",
        )
    operator = ""
    target = None
    for child in node.children:
        if child.type == "file_descriptor":
            continue
        if not child.is_named:
            operator = _text(child)
        elif target is None:
            target = child
    if operator in ("<&-", ">&-"):
        return
    if target is None:
        raise Refused("redirect", f"the redirection {_text(node)!r} names no file")
    path, expands = _literal(target)
    if operator in (">&", "<&") and (path.isdigit() or path == "-"):
        return  # one descriptor made a copy of another (2>&1), or closed
    if expands:
        raise Refused(
            "redirect",
            f"the redirection's file {_text(target)!r} is expanded by the shell",
            "name the file as it is, in quotes",
        )
    if path in ("/dev/null", "/dev/stdout", "/dev/stderr"):
        return
    tree = os.path.realpath(cwd)
    full = os.path.realpath(os.path.join(tree, path))
    inside = full == tree or full.startswith(tree.rstrip("/") + "/")
    if not inside:
        raise Refused(
            "redirect",
            f"the command redirects {'from' if operator.startswith('<') else 'to'} {path!r}, "
            "outside the working folder",
            "redirect to a file inside the working folder, or use runtime files read/write",
        )
    parts = os.path.relpath(full, tree).split(os.sep)
    if PROTECTED_PARTS.intersection(parts) or parts[-1] in PROTECTED_FILES:
        raise Refused(
            "redirect",
            f"the command redirects to {path!r}, a repository or assistant settings file",
            "write elsewhere in the working folder; `runtime agent init` writes the "
            "assistants' settings",
        )


def _literal(node: Any) -> tuple[str, bool]:
    """The word ``node`` stands for after quote removal, and whether the shell would
    expand it further (a glob, braces, ``~``); :class:`Refused` for an expansion or a
    quoting whose value is not read here."""
    kind = node.type
    if kind in _EXPANSIONS:
        rule, why = _EXPANSIONS[kind]
        raise Refused(rule, f"the command {why}: {_text(node)}", _LITERAL_HINT)
    if kind == "word":
        return _unquoted(_text(node))
    if kind == "number":
        return _text(node), False
    if kind == "raw_string":
        return _text(node)[1:-1], False
    if kind == "string":
        value = []
        for child in node.children:
            if child.type == "string_content":
                value.append(_in_double_quotes(_text(child)))
            elif child.is_named:
                _literal(child)  # an expansion inside the quotes: refused
                raise Refused("quoting", f"the string {_text(node)} is not literal", _LITERAL_HINT)
            elif _text(child) != '"':
                value.append(_text(child))  # a lone $ is itself
        return "".join(value), False
    if kind in ("concatenation", "command_name"):
        text, expands = "", False
        for child in node.named_children:
            part, more = _literal(child)
            text += part
            expands = expands or more
        return text, expands
    raise Refused(
        "construct", f"the command has a {kind.replace('_', ' ')}: {_text(node)}", _LITERAL_HINT
    )


def _unquoted(raw: str) -> tuple[str, bool]:
    out: list[str] = []
    expands = False
    i = 0
    while i < len(raw):
        char = raw[i]
        if char == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        expands = expands or char in _GLOB
        out.append(char)
        i += 1
    return "".join(out), expands


def _in_double_quotes(raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        if char == "\\" and i + 1 < len(raw) and raw[i + 1] in '$`"\\\n':
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _name(node: Any) -> str:
    name = node.child_by_field_name("name")
    if name is None:
        return ""
    try:
        value, expands = _literal(name)
    except Refused:
        return _text(name)
    return "" if expands else value


def _text(node: Any) -> str:
    return bytes(node.text).decode("utf-8", "surrogateescape")


def _first_words(statements: Iterable[Any]) -> list[str]:
    """The words of the first simple command in ``statements``, as far as they are
    literal: what :func:`instead` reads to say what to run instead."""
    for statement in statements:
        stack = [statement]
        while stack:
            node = stack.pop(0)
            if node.type == "command":
                words: list[str] = []
                for child in node.named_children:
                    if child.type in ("variable_assignment", "comment") or child.type.endswith(
                        "redirect"
                    ):
                        continue
                    try:
                        words.append(_literal(child)[0])
                    except Refused:
                        words.append(_text(child))
                return words
            stack.extend(node.named_children)
    return []


def _one(first: list[str]) -> str:
    if first[:1] == ["runtime"]:
        return "run one runtime command per call; each decision is its own"
    return instead(first, " ".join(first))


# What does the job of a program an assistant reaches for, through runtime.
_DESTROY = " (a destroy: it runs where the policy's allowed_destructive lists it)"
_FILES = {
    "cat": ("runtime files read PATH", ""),
    "less": ("runtime files read PATH", ""),
    "more": ("runtime files read PATH", ""),
    "bat": ("runtime files read PATH", ""),
    "head": ("runtime files read PATH | head", ""),
    "tail": ("runtime files read PATH | tail", ""),
    "ls": ("runtime files list DIR", ""),
    "tree": ("runtime files list DIR", ""),
    "find": ("runtime files list DIR", ""),
    "mkdir": ("runtime files mkdir DIR", ""),
    "rm": ("runtime files delete PATH", _DESTROY),
    "unlink": ("runtime files delete PATH", _DESTROY),
    "touch": ("runtime files write PATH ''", ""),
    "echo": ("runtime files write PATH CONTENT", " (or runtime files append PATH CONTENT)"),
    "printf": ("runtime files write PATH CONTENT", " (or runtime files append PATH CONTENT)"),
    "tee": ("runtime files write PATH CONTENT", ""),
    "cp": ("runtime files read SOURCE", ", then runtime files write TARGET CONTENT"),
    "curl": ("runtime github api METHOD PATH", " for GitHub; runtime reaches no other host"),
    "wget": ("runtime github api METHOD PATH", " for GitHub; runtime reaches no other host"),
}


def instead(words: Sequence[str], command: str) -> str:
    """What to run through runtime instead of ``words`` (the first command's words)."""
    name = words[0].rsplit("/", 1)[-1] if words else ""
    tail = " ".join(words[1:])
    if name == "gh" and words[1:]:
        return f"run `runtime github {tail}` (the github provider's operation, policy-checked)"
    if name == "git":
        run = f"runtime command run git {tail}".rstrip()
        return (
            f"run `{run}` (an allow-listed binary, confined), or a capability that does the "
            "job (runtime capability list)"
        )
    if name in _FILES:
        run, note = _FILES[name]
        return f"use `{run}`{note}; `runtime capability list` shows capabilities for the job"
    if name == "runtime":
        return "run the runtime command alone"
    return (
        "use a runtime command or capability for the job: `runtime capability list` lists the "
        "capabilities, `runtime --help` the commands, and a binary the policy allows runs as "
        "`runtime command run BINARY ARGS...`"
    )
