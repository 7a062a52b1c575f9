"""Running one provider operation straight from the command line (filled in by the execute station)."""

from __future__ import annotations

from typing import Any

from runtime.errors import UsageError


def run_direct(ws: Any, provider: Any, args: list[str]) -> int:
    raise UsageError(f"running '{provider.name} {' '.join(args[:2])}' directly is not available yet")
