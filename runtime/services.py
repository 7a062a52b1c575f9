"""Shared, lazily built services of one command: the Auth Engine, contexts, HTTP clients.

Nothing here is created until a step needs it, so commands that do not talk
to GitHub never import httpx or keyring.
"""

from __future__ import annotations

import contextlib
from functools import cached_property
from typing import TYPE_CHECKING, Any

from runtime.redact import Redactor

if TYPE_CHECKING:
    from runtime.execute.launch import Launcher
    from runtime.home.auth import AuthEngine
    from runtime.home.contexts import ContextStore
    from runtime.workspace import Workspace


class Services:
    def __init__(self, workspace: Workspace, redactor: Redactor) -> None:
        self.workspace = workspace
        self.redactor = redactor
        self._closers: list[Any] = []
        self.cache: dict[
            str, Any
        ] = {}  # per-run objects providers keep (e.g. an HTTP client per host)

    @cached_property
    def auth(self) -> AuthEngine:
        from runtime.home.auth import AuthEngine

        return AuthEngine(self.workspace, self.redactor)

    @cached_property
    def launcher(self) -> Launcher:
        """How this run starts programs (probed once: bubblewrap confines, or not here)."""
        from runtime.execute.launch import become_subreaper, for_run

        launcher = for_run(self.workspace)
        if not launcher.confined and become_subreaper():
            self.on_close(lambda: become_subreaper(False))
        return launcher

    @cached_property
    def contexts(self) -> ContextStore:
        from runtime.home.contexts import ContextStore

        return ContextStore(self.workspace.home)

    def on_close(self, closer: Any) -> None:
        self._closers.append(closer)

    def close(self) -> None:
        while self._closers:
            closer = self._closers.pop()
            with contextlib.suppress(Exception):  # closing must never mask the run's result
                closer()
