"""Inputs: parsing ``--input`` pairs and literal ``${name}`` substitution."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from runtime.document.grammar import REFERENCE, references
from runtime.document.model import Capability
from runtime.errors import UsageError
from runtime.problems import Problem, Severity
from runtime.reading import position, read_file
from runtime.text import not_utf8, printable, shorten

MAX_INPUT_FILE = 1024 * 1024
# What substitution may make of a capability's args, in characters: per step, and for the
# whole run. A file write of tens of MiB built from a 1 MiB input fits; two thousand
# references to it do not (gigabytes of arguments, built before anything ran).
MAX_STEP_ARGS = 32 * 1024 * 1024
MAX_RUN_ARGS = 128 * 1024 * 1024


def parse_input_pairs(pairs: list[str], cwd: Path) -> dict[str, str]:
    """``key=value`` (the value may contain '='); ``key=@file`` reads the file; ``key=@@x`` is ``@x``."""
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--input '{pair}' is not key=value", hint="write --input name=value")
        if key != key.strip():
            _refuse_spaced_name(key, value)
        if key in values:
            raise UsageError(f"--input '{key}' is given twice", hint="give each input once")
        if value.startswith("@@"):
            value = value[1:]
        elif value.startswith("@"):
            path = Path(value[1:]).expanduser()
            path = path if path.is_absolute() else cwd / path
            try:  # a pipe too: `--input key=@<(cmd)`
                data = read_file(path, MAX_INPUT_FILE + 1, pipes=True)
            except OSError as exc:
                raise UsageError(
                    f"--input {key}=@{value[1:]}: cannot read the file: {exc.strerror or exc}",
                    hint="check the path; write @@ to pass a value that starts with '@'",
                ) from None
            if len(data) > MAX_INPUT_FILE:
                raise UsageError(
                    f"--input {key}=@{value[1:]}: the file is larger than 1 MiB, the limit "
                    "for an input",
                    hint="pass the file's path as the input instead, for a step to read it "
                    "(`files read`), or a smaller part of it",
                )
            try:
                value = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                line, column = position(data, exc.start)
                raise UsageError(
                    f"--input {key}=@{value[1:]}: the file is not UTF-8 text: "
                    f"{value[1:]}:{line}:{column} holds the byte 0x{data[exc.start]:02x}",
                    hint="an input is text: save the file as UTF-8 (`iconv -f LATIN1 -t "
                    "UTF-8`), or pass its path for a step to read",
                ) from None
        if "\x00" in value:
            raise UsageError(
                f"input '{key}' contains a NUL byte", hint="inputs are text; remove the NUL"
            )
        _check_utf8(key, value)
        values[key] = value
    return values


def _refuse_spaced_name(key: str, value: str) -> None:
    """A name with white space around it (``--input "service = billing"``): the shell kept
    the spaces, so the name is ``'service '``; said with the spaces shown (quoted), not as
    an unknown input whose name ends in a space nobody sees. The value is shown only in
    the suggested fix, and not at all for a secret-named input."""
    import shlex

    from runtime.redact import SECRET_NAME

    stripped = key.strip()
    where = (
        "before and after it"
        if key[0].isspace() and key[-1].isspace()
        else ("before it" if key[0].isspace() else "after it")
    )
    shown = "VALUE" if SECRET_NAME.search(stripped) else shorten(value.strip(), 40)
    raise UsageError(
        f"--input {printable(repr(key))}=...: the input name has white space {where}",
        hint=f"write no spaces around '=': --input {printable(shlex.quote(f'{stripped}={shown}'))}"
        " (a value keeps its spaces: --input 'name=two words')",
        code="input-name-spaces",
    )


def _check_utf8(key: str, value: str) -> None:
    """Refuse a value with bytes that are not UTF-8 (the command line's bytes, kept by
    Python as lone surrogates): no step could write, send or record it as text, so it is
    refused before the first step, not by the step that meets it."""
    where = not_utf8(value)
    if where is not None:
        raise UsageError(
            f"input '{key}' is not UTF-8 text ({where})",
            hint="inputs are UTF-8 text: convert the value (iconv -t UTF-8), or let a step "
            "read the bytes from a file",
        )


def check_inputs(cap: Capability, values: Mapping[str, str], *, require: bool = True) -> None:
    """Refuse undeclared names (likely typos) and missing required inputs, naming all of them."""
    unknown = sorted(k for k in values if k not in cap.inputs)
    if unknown:
        declared = ", ".join(cap.inputs) or "(none)"
        raise UsageError(
            f"unknown input{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}",
            hint=f"this capability declares: {declared}",
            code="unknown-input",
        )
    missing = [name for name, decl in cap.inputs.items() if decl.required and name not in values]
    if missing and require:
        raise UsageError(
            f"missing required input{'s' if len(missing) > 1 else ''}: {', '.join(missing)}",
            hint=" ".join(f"--input {m}=..." for m in missing),
            code="missing-input",
        )
    empty = [name for name, decl in cap.inputs.items() if decl.required and values.get(name) == ""]
    if empty:
        _refuse_empty(cap, values, empty)


def _refuse_empty(cap: Capability, values: Mapping[str, str], empty: list[str]) -> None:
    """A required input given as ``name=`` (an unset shell variable, ``--input
    service=$SERVICE``): refused, not taken as supplied, with what an arg built from it
    would become (``${service}/docs`` as ``/docs``)."""
    several = len(empty) > 1
    # an arg that shows the harm best: one the value is only part of (a path it starts)
    uses = [
        (step.index, a)
        for step in cap.steps
        for a in step.args
        if any(m.group(1) in empty for m in references(a.text))
    ]
    built = [(len(substitute(a.text, values)) == 0, index, a.text) for index, a in uses]
    hint = (
        "give "
        + ("each" if several else "it")
        + " a value: "
        + " ".join(f"--input {n}=VALUE" for n in empty)
        + " (a shell variable that is not set gives an empty one)"
    )
    # each arg the empty value would go into, at its position
    problems = [
        Problem(
            cap.path,
            a.line,
            a.column,
            "error",
            "empty-input",
            f"step {index}: '{printable(shorten(a.text, 60))}' would be "
            f"'{printable(shorten(substitute(a.text, values), 60))}'",
            hint,
        )
        for index, a in uses
    ]
    example = ""
    if built:
        _, index, arg = min(built)
        example = (
            f": step {index}'s '{printable(shorten(arg, 60))}' would be "
            f"'{printable(shorten(substitute(arg, values), 60))}'"
        )
    raise UsageError(
        f"required input{'s' if several else ''} {', '.join(repr(n) for n in empty)} "
        f"{'are' if several else 'is'} empty{example}; nothing ran",
        hint=hint,
        code="empty-input",
        problems=problems,
    )


def unsupplied(cap: Capability, values: Mapping[str, str]) -> dict[str, list[int]]:
    """Each optional input not supplied, and the steps whose args name it: there it stays
    literally ``${name}`` (the grammar has no default). An input no step names is left
    out: nothing stays literal for it."""
    found: dict[str, list[int]] = {}
    for name, decl in cap.inputs.items():
        if decl.required or name in values:
            continue
        steps = [
            s.index
            for s in cap.steps
            if any(m.group(1) == name for a in s.args for m in references(a.text))
        ]
        if steps:
            found[name] = steps
    return found


def unsupplied_problems(
    cap: Capability, values: Mapping[str, str], severity: Severity
) -> list[Problem]:
    """:func:`unsupplied`, as problems at each input's declaration: ``info`` while
    validating (no input is given there), a ``warning`` in plan and execute, an ``error``
    with ``--strict``."""
    out: list[Problem] = []
    for name, steps in unsupplied(cap, values).items():
        decl = cap.inputs[name]
        where = f"step{'s' if len(steps) > 1 else ''} {', '.join(map(str, steps))}"
        ref = "${" + name + "}"
        if severity == "info":
            message = f"optional input '{name}': unless supplied, '{ref}' stays literal in {where}"
            hint = f"supply it (--input {name}=...), or declare it required: true"
        else:
            message = f"optional input '{name}' is not supplied: '{ref}' stays literal in {where}"
            hint = f"supply it: --input {name}=... (--input {name}= for an empty value)"
            hint += "" if severity == "error" else "; --strict refuses a run that leaves it out"
        out.append(
            Problem(cap.path, decl.line, decl.column, severity, "unsupplied-input", message, hint)
        )
    return out


def refuse_unsupplied(cap: Capability, values: Mapping[str, str]) -> None:
    """``--strict``: an optional input left out refuses the run (exit 2), naming each."""
    problems = unsupplied_problems(cap, values, "error")
    if not problems:
        return
    names = list(unsupplied(cap, values))
    raise UsageError(
        f"optional input{'s' if len(names) > 1 else ''} not supplied: "
        f"{', '.join(repr(n) for n in names)}; --strict refuses to leave "
        f"{'them' if len(names) > 1 else 'it'} literal in the args; nothing ran",
        hint=" ".join(f"--input {n}=..." for n in names)
        + " (an empty value: --input NAME=), or run without --strict",
        problems=problems,
        code="unsupplied-input",
    )


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Replace each ``${name}`` with its supplied value, in one pass.

    A replacement is never scanned again, an unsupplied name stays literally
    ``${name}``, and ``${{ expression }}`` is not a reference at all.
    """
    if "${" not in text:
        return text
    return REFERENCE.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def check_sizes(cap: Capability, values: Mapping[str, str]) -> None:
    """Refuse (exit 2) a plan whose substituted args would be too large, before building them.

    The size of each arg after substitution is computed from the authored text and the
    values' lengths, without making the string.
    """
    total = 0
    for step in cap.steps:
        size = 0
        for arg in step.args:
            size += len(arg.text)
            if "${" in arg.text:
                for match in REFERENCE.finditer(arg.text):
                    value = values.get(match.group(1))
                    if value is not None:
                        size += len(value) - len(match.group(0))
        total += size
        if size > MAX_STEP_ARGS:
            raise UsageError(
                f"step {step.index}'s arguments would be {size:,} characters after substitution, "
                f"over the limit of {MAX_STEP_ARGS:,} per step; nothing ran",
                hint="pass large data in fewer places (a file the step reads), not in every arg",
                code="args-too-large",
            )
    if total > MAX_RUN_ARGS:
        raise UsageError(
            f"the steps' arguments would be {total:,} characters after substitution, over the "
            f"limit of {MAX_RUN_ARGS:,} per run; nothing ran",
            hint="pass large data in fewer places (a file the steps read), not in every arg",
            code="args-too-large",
        )
