"""Inputs: parsing ``--input`` pairs and literal ``${name}`` substitution."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from runtime.document.grammar import REFERENCE
from runtime.document.model import Capability
from runtime.errors import UsageError
from runtime.reading import position, read_file
from runtime.text import not_utf8

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
