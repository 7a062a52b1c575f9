"""Redaction of secrets from anything that leaves the process."""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[REDACTED]"
SECRET_NAME = re.compile(
    r"(?i)(token|secret|password|passwd|api[_-]?key|private[_-]?key|credential)"
)
# Shapes of well-known tokens, redacted even when the value was never registered.
TOKEN_SHAPES = re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b")
URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@]+(?::[^/\s@]*)?@")


class Redactor:
    """Knows the secret values of this run and removes them from text and data."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._ordered: list[str] = []  # longest first, so a secret inside another goes too

    def add(self, secret: str | None) -> None:
        if secret and len(secret) >= 4 and secret not in self._secrets:
            self._secrets.add(secret)
            self._ordered = sorted(self._secrets, key=len, reverse=True)

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
