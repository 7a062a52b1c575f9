"""Redaction of secrets from anything that leaves the process."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, quote_plus

from runtime.text import json_dumps

REDACTED = "[REDACTED]"
SECRET_NAME = re.compile(
    r"(?i)(token|secret|password|passwd|api[_-]?key|private[_-]?key|credential)"
)
# Shapes of well-known tokens, redacted even when the value was never registered,
# wherever they appear (no word boundaries: a token glued to other text goes too).
TOKEN_SHAPES = re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}")
URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@]+(?::[^/\s@]*)?@")

# An encoded form of a secret shorter than this (not counting base64 '=' padding) is not
# redacted: a short secret's base64 core can be 2 to 7 characters, which ordinary text
# (words, identifiers, other base64) contains by chance. 8 base64 characters are 48 bits
# of the secret, 8 hex digits 4 of its bytes.
MIN_VARIANT_CHARS = 8
_BASE64URL = str.maketrans("+/", "-_")


def _utf8(secret: str) -> bytes:
    """The bytes a program prints for ``secret`` (undecodable bytes of the environment
    come back as they were; a lone surrogate as WTF-8)."""
    try:
        return secret.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return secret.encode("utf-8", "surrogatepass")


def _base64_chains(raw: bytes) -> list[tuple[str, list[str]]]:
    """The base64 and base64url forms of ``raw`` inside a longer stream, one chain per
    alphabet and byte alignment (0, 1 or 2 bytes before it in its 3-byte group).

    Each chain starts with the core, the characters whose 6 bits all come from ``raw``
    (whatever stands before and after it), then the core with the stream ending right
    after ``raw`` (its last character padded with zero bits), then that with '='.
    Each element of a chain contains the previous one. The two alphabets' chains of an
    alignment share a gate: the longest piece of the core without '+' or '/'.
    """
    chains: list[tuple[str, list[str]]] = []
    for before in range(3):
        encoded = base64.b64encode(bytes(before) + raw).decode("ascii")
        start = -(-8 * before // 6)  # the first character with no bit of the bytes before
        end = 8 * (before + len(raw)) // 6  # the first with a bit of the bytes after
        core, padded = encoded[start:end], encoded[start:]
        chain = [core, padded.rstrip("="), padded]
        piece = max(re.split("[+/]", core), key=len)
        chains.append((piece, chain))
        chains.append((piece, [form.translate(_BASE64URL) for form in chain]))
    return chains


def _variants(secret: str) -> list[tuple[str, list[str]]]:
    """``secret`` as a program may print it, in chains of forms, each form containing
    the previous one (most chains have one form), with a preferred gate: a piece of
    the first form, or "" for the first form itself. The secret itself comes first."""
    raw = _utf8(secret)
    points = [str(ord(c)) for c in secret]
    single = [
        secret,
        raw.hex(),
        raw.hex().upper(),
        quote(raw, safe=""),
        quote_plus(raw, safe=""),
        quote(raw, safe="!~*'()"),  # jq's @uri, JavaScript's encodeURIComponent
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        # as jq prints a string: DEL escaped, other non-ASCII characters as they are
        json.dumps(secret, ensure_ascii=False)[1:-1].replace("\x7f", "\\u007f"),
        repr(secret)[1:-1],
        # repr of a longer text that has both quotes escapes the secret's single quotes
        repr(secret + '"')[1:-2],
        repr(raw)[2:-1],  # printed bytes: b'...'
        repr(raw + b'"')[2:-2],  # bytes among others with both quotes: its ' escaped
        # code points (jq's explode): jq -c, jq's pretty array, Python's list
        ",".join(points),
        ",\n  ".join(points),
        ", ".join(points),
    ]
    return [("", [form]) for form in single] + _base64_chains(raw)


class Redactor:
    """Knows the secret values of this run and removes them from text and data.

    A secret goes in every form of :func:`_variants`. Each chain of forms is tested
    with one substring test of its shortest kept form (its gate, contained in the
    others), so text without a secret costs one ``in`` test per distinct gate.
    """

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        # gate -> the forms it opens, longest first
        self._groups: dict[str, tuple[str, ...]] = {}
        self._gates: tuple[str, ...] = ()
        # each gate as it appears inside a JSON string (as runtime.text.json_dumps writes it)
        self._escaped: tuple[str, ...] = ()

    def add(self, secret: str | None) -> None:
        if not secret or len(secret) < 4 or secret in self._secrets:
            return
        self._secrets.add(secret)
        groups = {gate: set(forms) for gate, forms in self._groups.items()}
        for number, (piece, chain) in enumerate(_variants(secret)):
            # the secret itself is redacted from 4 characters, as always; its other forms
            # only from MIN_VARIANT_CHARS (base64 padding does not count)
            kept = [
                form for form in chain if number == 0 or len(form.rstrip("=")) >= MIN_VARIANT_CHARS
            ]
            if kept:
                # the gate must be in every kept form: a piece of the first form
                gate = piece if len(piece) >= MIN_VARIANT_CHARS and piece in kept[0] else kept[0]
                groups.setdefault(gate, set()).update(kept)
        self._groups = {
            gate: tuple(sorted(forms, key=lambda f: (-len(f), f))) for gate, forms in groups.items()
        }
        self._gates = tuple(sorted(self._groups, key=lambda g: (-len(g), g)))
        self._escaped = tuple(dict.fromkeys(json_dumps(g)[1:-1] for g in self._gates))

    def add_environment(self, environ: Mapping[str, str]) -> None:
        """The values of the variables of ``environ`` named like secrets (the token
        variables among them)."""
        for name, value in environ.items():
            if SECRET_NAME.search(name):
                self.add(value)

    def text(self, value: str) -> str:
        for gate in self._gates:
            if gate in value:
                value = self._replace(value)
                break
        # cheap substring tests first: most text has neither shape, and the regexes
        # were most of the cost of large outputs
        if ("gh" in value and "_" in value) or "github_pat_" in value:
            value = TOKEN_SHAPES.sub(REDACTED, value)
        if "@" in value and "://" in value:
            value = URL_USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", value)
        return value

    def _replace(self, value: str) -> str:
        """Replace every registered form in ``value`` (which holds at least one gate),
        longest first, so that a form inside a longer one leaves no piece of it."""
        opened = [self._groups[gate] for gate in self._gates if gate in value]
        if len(opened) == 1:
            forms: tuple[str, ...] | list[str] = opened[0]
        else:
            forms = sorted({f for group in opened for f in group}, key=lambda f: (-len(f), f))
        for form in forms:
            if form in value:
                value = value.replace(form, REDACTED)
        return value

    def binary(self, value: bytes) -> bytes:
        """:meth:`text` over bytes that need not be UTF-8 (an archive): what reads as
        UTF-8 is redacted as text is, and every other byte is kept as it is (read and
        written back with surrogateescape). ``value`` itself when nothing is redacted."""
        text = value.decode("utf-8", "surrogateescape")
        redacted = self.text(text)
        return value if redacted == text else redacted.encode("utf-8", "surrogateescape")

    def may_change_json(self, encoded: str) -> bool:
        """Whether :meth:`data` could change the data whose JSON text is ``encoded``.

        ``encoded`` must come from :func:`runtime.text.json_dumps`, as the audit log's
        records do. It escapes each character on its own, so a form of a secret inside any
        string of the data appears in the text as that form escaped, and so does
        the gate it contains; the token and URL tests are looser than
        :meth:`text`'s. ``False`` is therefore a proof that redaction would change
        nothing.
        """
        for escaped in self._escaped:
            if escaped in encoded:
                return True
        if "@" in encoded and "://" in encoded:
            return True
        return TOKEN_SHAPES.search(encoded) is not None

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {
                (self.text(k) if isinstance(k, str) else k): self.data(v) for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [self.data(v) for v in value]
        return value

    def inputs(self, values: dict[str, str]) -> dict[str, str]:
        return {k: (REDACTED if SECRET_NAME.search(k) else self.text(v)) for k, v in values.items()}
