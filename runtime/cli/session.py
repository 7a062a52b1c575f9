"""What every command of the CLI shares: the output mode, the workspace, Runtime Home.

Kept apart from :mod:`runtime.cli` (the application and its entry point) so that
the command modules, which the application imports lazily, import this and not
the package that imports them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any


class _State:
    output: str = "text"


STATE = _State()


def json_mode() -> bool:
    return STATE.output == "json"


def workspace() -> Any:
    from pathlib import Path

    from runtime.workspace import Workspace

    return Workspace(environ=dict(os.environ), cwd=Path.cwd())


def ensure_home(ws: Any, *, verify: bool = False) -> Any:
    """Cheap on every command: one small file read when Home is current.

    Returns what was refreshed; ``verify`` compares every file (``runtime bootstrap``).
    """
    from runtime.errors import UsageError
    from runtime.home.layout import refresh

    try:
        return refresh(ws.home, verify=verify)
    except OSError as exc:
        raise UsageError(
            f"cannot prepare Runtime Home at {ws.home.root}: {exc.strerror or exc}",
            hint="set RUNTIME_HOME to a writable folder",
        ) from None


def start_log(level: str | None, fmt: str | None) -> None:
    """Turn the diagnostic event stream on or off for this process (:mod:`runtime.log`):
    from ``--log-level`` / ``--log-format``, else ``RUNTIME_LOG_LEVEL`` /
    ``RUNTIME_LOG_FORMAT``; off by default, and then structlog is not imported. A value
    that is not one of the choices is a usage error (exit 2)."""
    from runtime import log

    try:
        chosen = log.settings(level, fmt)
    except log.LogSettingError as exc:
        from runtime.errors import UsageError

        raise UsageError(exc.message, hint=exc.hint) from None
    log.configure(chosen)


def silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush has nowhere to fail."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
