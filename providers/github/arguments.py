"""Arguments of the github provider's ``api`` and ``graphql`` calls: ``key=value`` pairs
typed as JSON values (:func:`typed`) and built into a request body or the GraphQL
variables (:func:`build_body`).
"""

from __future__ import annotations

import re
from typing import Any

from runtime.provider import StepError


def typed(value: str) -> Any:
    """``true``/``false``/``null`` and integers become JSON values; the rest stays text."""
    if value == "true":
        return True
    if value == "false":
        return False
    if value == "null":
        return None
    if re.fullmatch(r"-?(0|[1-9][0-9]*)", value):
        return int(value)
    return value


def build_body(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """``key=v``, ``key[]=v`` (array) and ``a[b]=v`` (nested object) into a JSON body."""
    body: dict[str, Any] = {}
    for key, raw in pairs:
        value = typed(raw)
        parts = re.findall(r"[^\[\]]+|\[\]", key)
        if not parts:
            continue
        target: dict[str, Any] = body
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            nxt = parts[i + 1] if not last else None
            if part == "[]":
                continue
            if last:
                target[part] = value
            elif nxt == "[]":
                existing = target.setdefault(part, [])
                if not isinstance(existing, list):
                    raise StepError(f"'{key}' mixes an array and a value for '{part}'")
                if i + 2 == len(parts):
                    existing.append(value)
                    break
                obj: dict[str, Any] = {}
                existing.append(obj)
                target = obj
            else:
                child = target.setdefault(part, {})
                if not isinstance(child, dict):
                    raise StepError(f"'{key}' mixes an object and a value for '{part}'")
                target = child
    return body
