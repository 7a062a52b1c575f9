"""The Action's inputs, turned into `--input` words for `runtime capability execute`.

Run by action/run.sh (standard library only, any Python 3.8+). It reads two
variables that action.yml sets from the Action's inputs:

``RUNTIME_ACTION_INPUTS``
    ``name=value``, one per line; blank lines are skipped. A value is taken
    literally, whatever it holds: a leading ``@`` does not read a file. A
    value cannot span lines here.
``RUNTIME_ACTION_INPUTS_JSON``
    A JSON object ``{"name": "value", ...}``. Values may hold anything,
    newlines included (numbers and booleans are taken as their JSON text;
    ``null`` leaves the input out, as if it were not given).
    Written with ``toJSON`` (``{"title": ${{ toJSON(github.event.issue.title) }}}``),
    any text stays one value of one input.

It writes each ``name=value`` to the file named by its first argument,
separated by NUL, with ``@`` doubled at the start of a value (runtime reads
``@@x`` as the literal ``@x`` and never a file). On a mistake it writes the
error document of ``runtime --output json`` (specs/schemas/error.schema.json)
to the file named by its second argument and exits 2.
"""

from __future__ import annotations

import json
import os
import sys

USAGE = 2


class InputError(Exception):
    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def _check(name: str, value: str, where: str) -> None:
    if not name or "=" in name or "\n" in name or "\x00" in name:
        raise InputError(
            f"{where}: {name!r} is not an input name",
            "an input name is the name the capability declares (no '=' and no newline)",
        )
    if "\x00" in value:
        raise InputError(f"{where}: input '{name}' contains a NUL byte", "inputs are text")


def from_lines(text: str) -> list[tuple[str, str]]:
    pairs = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        name, sep, value = line.partition("=")
        if not sep:
            raise InputError(
                f"inputs, line {number}: {line.strip()[:40]!r} is not name=value",
                "write one name=value per line; for values with newlines use inputs-json",
            )
        _check(name, value, f"inputs, line {number}")
        pairs.append((name, value))
    return pairs


def from_json(text: str) -> list[tuple[str, str]]:
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(
            f"inputs-json is not valid JSON: {exc}",
            'write a JSON object, e.g. {"title": ${{ toJSON(github.event.issue.title) }}}',
        ) from None
    if not isinstance(data, dict):
        raise InputError(
            "inputs-json must be a JSON object of input names and values",
            'for example {"organization": "acme"}',
        )
    pairs = []
    for name, value in data.items():
        if value is None:  # toJSON of an absent field (an issue without a body): not given
            continue
        if isinstance(value, (bool, int, float)):
            value = json.dumps(value)
        if not isinstance(value, str):
            raise InputError(
                f"inputs-json: the value of '{name}' must be a string, a number, a boolean or null",
                "pass text; toJSON() of a string gives one",
            )
        _check(name, value, "inputs-json")
        pairs.append((name, value))
    return pairs


def words(environ: dict[str, str]) -> list[str]:
    pairs = from_lines(environ.get("RUNTIME_ACTION_INPUTS", ""))
    pairs += from_json(environ.get("RUNTIME_ACTION_INPUTS_JSON", ""))
    seen: set[str] = set()
    result = []
    for name, value in pairs:
        if name in seen:
            raise InputError(
                f"input '{name}' is given twice (in inputs and inputs-json, or twice in one)",
                "give each input once",
            )
        seen.add(name)
        # runtime reads name=@file as a file and name=@@x as the literal @x: a value
        # starting with '@' gets one more, so no value ever names a file.
        result.append(f"{name}={'@' + value if value.startswith('@') else value}")
    return result


def _encode(word: str) -> bytes:
    try:  # surrogateescape: bytes of the environment that are not UTF-8 pass unchanged
        return word.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        name = word.partition("=")[0]
        raise InputError(
            f"input '{name}' is not valid text (a lone UTF-16 surrogate)", "pass UTF-8 text"
        ) from None


def _text(value: str) -> str:
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def main(argv: list[str]) -> int:
    words_file, error_file = argv[1], argv[2]
    try:
        encoded_words = [_encode(word) for word in words(dict(os.environ))]
    except InputError as exc:
        # a lone surrogate (a name from inputs-json's "\\ud800") as its escape's text, as
        # runtime's own JSON shows one: the document stays one a strict reader takes
        message, hint = (_text(t) for t in (exc.message, exc.hint))
        doc = {
            "ok": False,
            "exit_code": USAGE,
            "status": "invalid",
            "error": {"code": "usage", "message": message, "hint": hint, "problems": []},
        }
        with open(error_file, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2)
            fh.write("\n")
        print(f"error: {message}\n  hint: {hint}", file=sys.stderr)
        return USAGE
    with open(words_file, "wb") as fh:
        fh.write(b"".join(encoded + b"\0" for encoded in encoded_words))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
