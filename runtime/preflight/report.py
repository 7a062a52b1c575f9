"""Preflight's report: each requirement's check, and what they add up to.

Each check records two answers, each ``True``, ``False`` or ``Unknown``:
*resolution* (is the target well defined, does the reference resolve) and
*readiness* (is it usable now), with a short reason and, when not ready, how
to fix it. Offline by default; ``live`` adds bounded, read-only network
checks. A report never contains a secret, a URL's credentials, query or
fragment, or a remote error text.

The checkers are :mod:`runtime.preflight.programs`, ``network``,
``credentials`` and ``paths``; :mod:`runtime.preflight.checks` runs them,
by requirement type, into a :class:`Report`. This module holds what they
share: the verdicts, :class:`Check`, :class:`Report` and the
:class:`Context` each checker is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from runtime.document.requirements import Requirement
from runtime.plan.build import Plan
from runtime.plan.network import NetworkRule
from runtime.plan.workspace import Workspace
from runtime.provider import RunContext

if TYPE_CHECKING:
    from runtime.execute.launch import Launcher
    from runtime.home.auth import AuthEngine

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
LIVE_TIMEOUT = 5.0
LIVE_MAX_BYTES = 64 * 1024


@dataclass
class Check:
    requirement: Requirement
    resolution: str
    readiness: str
    reason: str
    fix: str | None = None
    checked_at: str | None = None
    valid_until: str | None = None
    # an Unknown runtime can never settle, whatever the machine: MDA's tools and model
    # (they describe the consumer's agent and model) and packages it cannot look up
    # (informational in MDA). Shown, never a refusal, not even with --strict.
    advisory: bool = False

    @property
    def blocks(self) -> bool:
        return not self.requirement.optional and self.readiness == FALSE

    def to_json(self) -> dict[str, Any]:
        doc = self.requirement.to_json()
        doc.update(
            {
                "resolution": self.resolution,
                "readiness": self.readiness,
                "reason": self.reason,
                "fix": self.fix,
                "advisory": self.advisory,
            }
        )
        if self.checked_at:
            doc["checkedAt"] = self.checked_at
        if self.valid_until:
            doc["validUntil"] = self.valid_until
        return doc


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cost_hints: dict[str, Any] | None = None
    live: bool = False
    strict: bool = False

    def blocking(self) -> list[Check]:
        """Required checks not ready: False, and with ``strict`` every Unknown that could
        hide a failure (all but the advisory ones)."""
        return [
            c
            for c in self.checks
            if not c.requirement.optional
            and (
                c.readiness == FALSE or (self.strict and c.readiness == UNKNOWN and not c.advisory)
            )
        ]

    @property
    def ready(self) -> bool:
        return not self.blocking()

    def to_json(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "live": self.live,
            "strict": self.strict,
            "checks": [c.to_json() for c in self.checks],
            "blocking": [c.requirement.id for c in self.blocking()],
            "warnings": self.warnings,
            "cost_hints": self.cost_hints,
        }


class PreflightServices(RunContext, Protocol):
    """What preflight asks of the run's services: the Auth Engine, the launcher (probed
    only when a check needs it), and the run a provider's ``check_token`` and ``ping``
    are given (the execute station's RunServices has each, made when first asked)."""

    @property
    def auth(self) -> AuthEngine: ...
    @property
    def launcher(self) -> Launcher: ...


@dataclass
class Context:
    ws: Workspace
    services: PreflightServices
    plan: Plan
    inputs: dict[str, str]
    live: bool
    probe: bool  # may run `NAME --version` (not in `plan`, which starts no process)
    now: Callable[[], float]
    runner_capabilities: tuple[str, ...] | None = None
    network: NetworkRule | None = None
    hosts: list[str] = field(default_factory=list)
    # folder -> (is a folder, writable and searchable): asked once per folder in one
    # preflight, not once per file written into it (a capability that writes many files
    # into one folder would otherwise ask the file system the same question each time)
    folders: dict[str, tuple[bool, bool]] = field(default_factory=dict)


def timestamp(ctx: Context) -> str:
    """Now, as a check's ``checkedAt``: UTC, to the second."""
    return datetime.fromtimestamp(ctx.now(), UTC).isoformat(timespec="seconds")
