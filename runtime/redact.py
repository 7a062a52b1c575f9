"""Redaction of secrets from anything that leaves the process."""

from __future__ import annotations

import json
import re
from typing import Any

REDACTED = "[REDACTED]"
SECRET_NAME = re.compile(
    r"(?i)(token|secret|password|passwd|api[_-]?key|private[_-]?key|credential)"
)
# Shapes of well-known tokens, redacted even when the value was never registered,
# wherever they appear (no word boundaries: a token glued to other text goes too).
TOKEN_SHAPES = re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}")
URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@]+(?::[^/\s@]*)?@")


class Redactor:
    """Knows the secret values of this run and removes them from text and data."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._ordered: list[str] = []  # longest first, so a secret inside another goes too
        self._escaped: list[str] = []  # each secret as it appears inside a JSON string

    def add(self, secret: str | None) -> None:
        if secret and len(secret) >= 4 and secret not in self._secrets:
            self._secrets.add(secret)
            self._ordered = sorted(self._secrets, key=len, reverse=True)
            self._escaped.append(json.dumps(secret)[1:-1])

    def text(self, value: str) -> str:
        for secret in self._ordered:
            if secret in value:
                value = value.replace(secret, REDACTED)
        # cheap substring tests first: most text has neither shape (measured: the regexes
        # were most of the cost of large outputs, bench/ figures 7d and 8)
        if ("gh" in value and "_" in value) or "github_pat_" in value:
            value = TOKEN_SHAPES.sub(REDACTED, value)
        if "@" in value and "://" in value:
            value = URL_USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", value)
        return value

    def may_change_json(self, encoded: str) -> bool:
        """Whether :meth:`data` could change the data whose JSON text is ``encoded``.

        ``encoded`` must come from :mod:`json` with its default ``ensure_ascii``.
        JSON escapes each character on its own, so a secret inside any string
        of the data appears in the text as the secret or as its escaped form;
        the token and URL tests are looser than :meth:`text`'s. ``False`` is
        therefore a proof that redaction would change nothing.
        """
        for secret in self._ordered:
            if secret in encoded:
                return True
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
