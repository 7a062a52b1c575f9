"""What a command runs against: environment, working directory, Home, policy, providers.

Time, environment, Home and PATH are passed in here once, at the CLI edge, so
stations below never read globals and tests can pin every one of them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from runtime.home.config import Config, capability_sources, configured_sources, load_config
from runtime.home.layout import Home, capabilities_path, home_path
from runtime.home.registry import Registry, load_registry
from runtime.plan.policy import Policy
from runtime.plan.policy_file import load_policy
from runtime.problems import Problem


@dataclass
class Workspace:
    environ: Mapping[str, str]
    cwd: Path
    clock: Callable[[], float] = field(default=time.time)
    # told each warning of the policy as it is loaded (an entry the floor overrides), so
    # that every command that reads the policy says it; the CLI prints them
    warn: Callable[[Problem], None] | None = None

    @cached_property
    def home(self) -> Home:
        return Home(home_path(self.environ))

    @cached_property
    def config(self) -> Config:
        return load_config(self.home, self.registry)

    @cached_property
    def policy_file(self) -> Path | None:
        explicit = self.environ.get("RUNTIME_POLICY_FILE")
        if explicit:
            return Path(explicit).expanduser()
        # lexists: a link to nothing is a broken policy (refused), not the absence of one
        home_file = self.home.policy_file
        return home_file if os.path.lexists(home_file) else None

    @cached_property
    def policy(self) -> Policy:
        policy = load_policy(
            self.policy_file, explicit=bool(self.environ.get("RUNTIME_POLICY_FILE"))
        )
        if self.warn is not None:
            for problem in policy.warnings:
                self.warn(problem)
        return policy

    @cached_property
    def registry(self) -> Registry:
        return load_registry()

    @cached_property
    def project(self) -> Path:
        """The folder whose ``capabilities/`` names are looked up in: the working folder,
        or the nearest above it that holds one (:func:`runtime.document.catalog.project_folder`).
        Roots and relative paths are taken from the working folder all the same."""
        from runtime.document.catalog import project_folder

        return project_folder(self.cwd, self.environ) or self.cwd

    @cached_property
    def sources(self) -> list[Path]:
        return capability_sources(
            self.config,
            self.home,
            self.project,
            capabilities_path(self.environ, self.home, self.cwd),
        )

    @cached_property
    def skipped_sources(self) -> list[tuple[Path, str, str]]:
        """The folders config.yaml lists (or RUNTIME_CAPABILITIES_DIR names) that lookups
        skip, why (it does not exist), and who named it.

        Only these are worth a note: the default sources (./capabilities, Home's)
        may well not exist."""
        from runtime.document.catalog import unusable

        named = [(p, "config.yaml") for p in configured_sources(self.config, self.home)]
        last = capabilities_path(self.environ, self.home, self.cwd)
        if last != self.home.capabilities_dir:
            named.append((last, "RUNTIME_CAPABILITIES_DIR"))
        return [(p, why, by) for p, by in named if (why := unusable(p)) is not None]

    @property
    def path(self) -> str:
        return self.environ.get("PATH", "")

    @cached_property
    def _found(self) -> dict[str, str | None]:
        return {}

    def which(self, name: str) -> str | None:
        """``name`` looked up on this workspace's PATH, once per command (a plan of many
        steps of one binary resolves it once)."""
        if name not in self._found:
            import shutil

            self._found[name] = shutil.which(name, path=self.path)
        return self._found[name]
