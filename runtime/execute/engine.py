"""Execute and record: run the planned steps in order, stop at the first failure.

Sixth and seventh stations. Each step is announced in the audit log before
it runs (if that record cannot be written, the step does not run) and its
result is recorded after. Earlier steps stay applied when a later one fails:
capabilities are not transactional, and the result says so.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from runtime.errors import Failure, Interrupted, RejectedCredential, StepError, Terminated
from runtime.execute.audit import AuditError, AuditLog
from runtime.execute.cancel import check as check_cancelled
from runtime.log import INFO, WARNING, get_logger
from runtime.plan.build import Plan, PlannedStep
from runtime.plan.network import NetworkRule
from runtime.plan.workspace import Workspace
from runtime.problems import Problem
from runtime.provider import StepEnvironment, StepOutcome
from runtime.redact import Redactor

if TYPE_CHECKING:
    from runtime.execute.services import RunServices

_log = get_logger("runtime.engine")

# The fields of a provider's own (Inspection.audit) each step's audit record carries, null
# where the provider gives none (the audit schema names each)
AUDIT_FIELDS = ("route_operation",)


@dataclass
class StepResult:
    planned: PlannedStep
    ran: bool = True
    outcome: StepOutcome | None = None
    duration_ms: float = 0.0
    # why the step failed: its class gives the step's status and the run's exit code
    failure: Failure | None = None
    error: str | None = None
    hint: str | None = None

    @classmethod
    def failed(
        cls,
        planned: PlannedStep,
        failure: Failure,
        error: str | None = None,
        outcome: StepOutcome | None = None,
        duration_ms: float = 0.0,
    ) -> StepResult:
        """The step ended with ``failure``; ``error`` says more than its message."""
        return cls(
            planned, True, outcome, duration_ms, failure, error or failure.message, failure.hint
        )

    @property
    def status(self) -> str:
        """``ok``, ``not-run``, or the status of the failure (``failed``, ``refused``...)."""
        if self.failure is not None:
            return self.failure.status or "failed"
        return "ok" if self.ran else "not-run"

    def to_json(self, redactor: Redactor) -> dict[str, Any]:
        doc = self.planned.to_json(redactor)
        o = self.outcome
        doc.update(
            {
                "status": self.status,
                "exit_code": o.exit_code if o else None,
                "http_status": o.http_status if o else None,
                "output": redactor.text(o.output) if o else None,
                "data": redactor.data(o.data) if o else None,
                "output_bytes": o.output_bytes if o else None,
                "truncated": o.truncated if o else False,
                "duration_ms": round(self.duration_ms, 3),
                "error": redactor.text(self.error) if self.error else None,
                "hint": redactor.text(self.hint) if self.hint else None,
            }
        )
        return doc


@dataclass
class RunResult:
    run_id: str
    plan: Plan
    results: list[StepResult] = field(default_factory=list)
    status: str = "ok"
    exit_code: int = 0

    @property
    def failed_step(self) -> StepResult | None:
        return next((r for r in self.results if r.failure is not None), None)


class Reporter(Protocol):
    def run_started(self, warnings: list[Problem]) -> None: ...
    def step_started(self, planned: PlannedStep, total: int) -> None: ...
    def step_output(self, planned: PlannedStep, stream: str, text: str) -> None: ...
    def step_finished(self, result: StepResult, total: int) -> None: ...


def execute_plan(
    plan: Plan,
    ws: Workspace,
    services: RunServices,
    redactor: Redactor,
    audit: AuditLog,
    reporter: Reporter,
    run_id: str,
    timeout: float,
) -> RunResult:
    run = RunResult(run_id, plan)
    total = len(plan.steps)
    cap = plan.capability
    base = {"run_id": run_id, "capability": cap.path, "sha256": cap.sha256}
    network = NetworkRule.from_requires(cap.requires.get("network"))
    stop: str | None = None
    in_progress: PlannedStep | None = None
    try:
        for planned in plan.steps:
            if stop is not None:
                run.results.append(StepResult(planned, ran=False))
                continue
            check_cancelled()  # a run cancelled from another thread: no next step
            try:
                # which step is about to run: its arguments, decision and outcome are in the
                # step's own record, the capability, its digest and the inputs in run.start
                # (a large argument is not recorded twice)
                audit.record("step.start", run_id=run_id, step=planned.index, target=planned.label)
            except AuditError as exc:
                failure = StepError(
                    f"{exc}; the step did not run",
                    hint="make the audit log writable (Runtime Home's audit/ folder)",
                )
                result = StepResult.failed(planned, failure)
                run.results.append(result)
                if _log.enabled(WARNING):
                    _log_finished(run_id, result)
                reporter.step_finished(result, total)
                stop, run.exit_code = result.status, int(failure.exit_code)
                continue
            in_progress = planned  # announced; its own record is not written yet
            if _log.enabled(INFO):
                _log.info(
                    "step.started",
                    run_id=run_id,
                    step=planned.index,
                    of=total,
                    target=planned.label,
                )
            reporter.step_started(planned, total)
            result = _run_step(
                network,
                planned,
                ws,
                services,
                redactor,
                reporter,
                timeout,
            )
            run.results.append(result)
            try:
                _record_step(audit, base, planned, result)
            except AuditError as exc:
                result.failure = StepError(f"{exc} (the step itself ran)")
                result.error = result.failure.message
            in_progress = None
            if _log.enabled(WARNING):  # a failed step is a warning, an ok one info
                _log_finished(run_id, result)
            reporter.step_finished(result, total)
            if result.failure is not None:
                stop, run.exit_code = result.status, int(result.failure.exit_code)
    except (KeyboardInterrupt, Terminated) as exc:
        # a signal between steps, while a record was written or the reporter printed: the
        # step that was announced and not yet recorded gets its record (as it ended, or as
        # interrupted), the steps never started are not run, and run.end is still written
        ended_by = Interrupted() if isinstance(exc, KeyboardInterrupt) else exc
        stop, run.exit_code = ended_by.status, int(ended_by.exit_code)
        ended = {r.planned.index: r for r in run.results}
        if in_progress is not None:
            last = ended.get(in_progress.index)
            if last is None:
                cause = f"{ended_by.status} by {ended_by.name}"
                last = StepResult.failed(in_progress, ended_by, cause)
                run.results.append(last)
            with contextlib.suppress(AuditError):
                _record_step(audit, base, in_progress, last)
        done = {r.planned.index for r in run.results}
        run.results += [StepResult(p, ran=False) for p in plan.steps if p.index not in done]
    run.status = stop or "ok"
    # the step records already hold the outcome; the CLI reports the run's own result
    with contextlib.suppress(AuditError):
        audit.record(
            "run.end",
            **base,
            status=run.status,
            exit_code=run.exit_code,
            steps=len(plan.steps),
            ok=sum(1 for r in run.results if r.status == "ok"),
        )
    return run


def _log_finished(run_id: str, result: StepResult) -> None:
    """The ``step.finished`` event: info when the step succeeded, else a warning."""
    outcome = result.outcome
    _log.log(
        INFO if result.failure is None else WARNING,
        "step.finished",
        run_id=run_id,
        step=result.planned.index,
        target=result.planned.label,
        status=result.status,
        duration_ms=round(result.duration_ms, 3),
        exit_code=outcome.exit_code if outcome else None,
        http_status=outcome.http_status if outcome else None,
        error=result.error,
    )


def _record_step(
    audit: AuditLog, base: dict[str, Any], planned: PlannedStep, result: StepResult
) -> None:
    outcome = result.outcome
    audit.record(
        "step",
        **base,
        step=planned.index,
        target=planned.label,
        provider=planned.provider,
        operation=planned.operation.name if planned.operation else None,
        # the provider's own (Inspection.audit): github's route_operation, the documented
        # API operation a REST call was sent to (e.g. repos/replace-all-topics)
        **{name: planned.inspection.audit.get(name) for name in AUDIT_FIELDS},
        binary=planned.binary,
        binary_path=planned.binary_path,
        args=planned.args,
        transport=planned.transport,
        effect=planned.effect,
        decision=planned.decision.to_json(),
        confined=planned.confined,
        unconfined_reason=planned.unconfined,
        status=result.status,
        exit_code=outcome.exit_code if outcome else None,
        http_status=outcome.http_status if outcome else None,
        duration_ms=round(result.duration_ms, 3),
        error=result.error,
    )


def _run_step(
    network: NetworkRule | None,
    planned: PlannedStep,
    ws: Workspace,
    services: RunServices,
    redactor: Redactor,
    reporter: Reporter,
    timeout: float,
) -> StepResult:
    env = StepEnvironment(
        run=services,
        timeout=timeout,
        on_output=lambda stream, text: reporter.step_output(planned, stream, text),
        network=network,
    )
    started = time.perf_counter()
    try:
        if planned.binary is not None:
            from runtime.execute.binaries import run_binary

            assert planned.binary_path is not None
            outcome = run_binary(
                planned.binary_path,
                planned.binary,
                planned.args,
                env,
                services,
                planned.credential,
                planned.inspection.credential_host,
            )
        else:
            provider = ws.registry.get(planned.provider or "")
            assert (
                provider is not None and planned.operation is not None and planned.call is not None
            )
            outcome = provider.execute(planned.operation, planned.call, env)
    except (KeyboardInterrupt, Failure, Exception) as exc:
        failure = _step_failure(exc, planned, ws, redactor)
        duration_ms = (time.perf_counter() - started) * 1000
        if isinstance(failure, Terminated):
            error = f"{failure.status} by {failure.name}; the step's processes were stopped"
            return StepResult.failed(planned, failure, error, duration_ms=duration_ms)
        said: StepOutcome | None = None
        if failure is exc and isinstance(failure, StepError):  # raised by the step itself
            said = StepOutcome(
                ok=False,
                exit_code=failure.program_exit_code,
                http_status=failure.http_status,
                data=failure.data,
            )
        return StepResult.failed(planned, failure, outcome=said, duration_ms=duration_ms)
    duration_ms = (time.perf_counter() - started) * 1000
    if outcome.ok:
        return StepResult(planned, True, outcome, duration_ms)
    kind = RejectedCredential if outcome.credential_rejected else StepError
    failed = kind(outcome.error or "the step failed", hint=outcome.hint)
    return StepResult.failed(planned, failed, outcome=outcome, duration_ms=duration_ms)


def _step_failure(
    exc: BaseException, planned: PlannedStep, ws: Workspace, redactor: Redactor
) -> Failure:
    """What a step's exception means: the failure whose class gives the step's status and
    the run's exit code. A signal, a :class:`StepError` and a refusal keep their own; any
    other failure met while the step ran (an invalid setting) and a bug in a provider are a
    failed step, recorded without a traceback."""
    if isinstance(exc, KeyboardInterrupt):
        return Interrupted()
    if isinstance(exc, Failure):
        return exc if exc.status is not None else StepError(exc.message, hint=exc.hint)
    if ws.environ.get("RUNTIME_DEBUG") == "1":  # asked for: where it happened, redacted
        import sys
        import traceback

        sys.stderr.write(redactor.text(traceback.format_exc()))
    return StepError(
        f"internal error in {planned.label}: {type(exc).__name__}",
        hint="this is a bug; rerun with RUNTIME_DEBUG=1 to see where, and report it",
    )
