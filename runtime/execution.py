"""What a provider gets to run a step, and what it gives back.

:class:`StepEnvironment` is everything a step may use: nothing is read from
globals. :class:`StepOutcome` is the result, text for people and data for
JSON. Providers signal failure by returning ``ok=False`` or by raising one of
the errors in :mod:`runtime.errors` (a policy refusal, a missing credential)
or :class:`StepError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.execute.launch import Launcher
    from runtime.execute.process import ProcessResult
    from runtime.plan.network import NetworkRule
    from runtime.plan.policy import Policy
    from runtime.redact import Redactor
    from runtime.services import Services


class StepError(Exception):
    """A step failed; the message is shown to the user as is (no secrets in it)."""

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        exit_code: int | None = None,
        http_status: int | None = None,
        data: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code
        self.http_status = http_status
        self.data = data


@dataclass
class StepEnvironment:
    cwd: Path
    environ: Mapping[str, str]
    policy: Policy
    redactor: Redactor
    services: Services
    timeout: float
    # Called with chunks of a step's own output while it runs (text mode streams it).
    on_output: Callable[[str, str], None] = field(default=lambda stream, text: None)
    step_index: int = 0
    # The capability's declared network rule (MDA requires.network), enforced by providers
    # before every connection; None when the capability declares none.
    network: NetworkRule | None = None
    # When the step started (time.monotonic()); ``timeout`` after it, its time is up.
    started: float = field(default_factory=time.monotonic)

    @property
    def deadline(self) -> float:
        """When the step's time limit runs out (``time.monotonic()``): providers hold their
        own work (requests, retries, waits) to it, as binary steps are held to ``timeout``."""
        return self.started + self.timeout

    @property
    def launcher(self) -> Launcher:
        launcher: Launcher = self.services.launcher
        return launcher

    def run_program(
        self, argv: list[str], environ: Mapping[str, str], scratch: str | None = None
    ) -> ProcessResult:
        """Run ``argv`` (argv[0] absolute) for this step, as the engine runs every program:
        confined where the system allows it (no network under ``network: none``), in a
        process group of its own, bounded in time and memory, its output streamed redacted.
        ``scratch`` is a folder from ``self.launcher.scratch``. Raises
        :class:`runtime.execute.process.ProcessStartError` if it cannot start."""
        from runtime.execute.launch import children, reap_orphans
        from runtime.execute.process import run_process

        launcher = self.launcher
        network = self.network is None or self.network.kind != "none"
        command, child = launcher.command(argv, environ, network=network, scratch=scratch)
        # confined, the step's PID namespace ends with it; unconfined, what it leaves behind
        # is found among our children (we are a subreaper) and killed
        before = set() if launcher.confined else children()
        try:
            return run_process(
                command,
                env=child,
                cwd=self.cwd,
                timeout=self.timeout,
                on_output=self.on_output,
                redact=self.redactor.text,
            )
        finally:
            if not launcher.confined:
                reap_orphans(before)

    def check_host(self, host: str) -> None:
        """Raise MissingCapability when the capability's network rule forbids ``host``."""
        if self.network is None:
            return
        allowed, reason = self.network.check(host, resolve=True)
        if not allowed:
            from runtime.errors import MissingCapability

            raise MissingCapability(
                f"{reason}: the capability declares {self.network.describe()}",
                hint="change metadata.mda.requires.network in the capability if this host is intended",
            )


@dataclass
class StepOutcome:
    ok: bool
    output: str = ""  # human-readable output of the step
    data: Any = None  # structured output (JSON-able)
    exit_code: int | None = None  # a binary's (or gh's) exit code
    http_status: int | None = None  # the last HTTP status of a REST/GraphQL step
    error: str | None = None
    hint: str | None = None
    output_bytes: int | None = None  # total bytes a process printed (output may be a head and tail)
    truncated: bool = False
    streamed: bool = False  # the output already reached the terminal while the step ran
    details: dict[str, Any] = field(default_factory=dict)


from runtime.errors import Terminated as Terminated  # noqa: E402  (re-exported)
