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
from typing import Any, Protocol

from runtime.errors import MissingCapability, MissingCredential, PolicyRefusal, RuntimeFailure
from runtime.execute.audit import AuditError, AuditLog
from runtime.exitcodes import ExitCode
from runtime.plan.build import Plan, PlannedStep
from runtime.plan.network import NetworkRule
from runtime.provider import StepEnvironment, StepError, StepOutcome, Terminated
from runtime.redact import Redactor
from runtime.workspace import Workspace


@dataclass
class StepResult:
    planned: PlannedStep
    status: str
    outcome: StepOutcome | None = None
    duration_ms: float = 0.0
    error: str | None = None
    hint: str | None = None
    signum: int | None = None  # the signal that terminated the step (status "terminated")

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
        for r in self.results:
            if r.status not in ("ok", "not-run"):
                return r
        return None


class Reporter(Protocol):
    def run_started(self, warnings: list[Any]) -> None: ...
    def step_started(self, planned: PlannedStep, total: int) -> None: ...
    def step_output(self, planned: PlannedStep, stream: str, text: str) -> None: ...
    def step_finished(self, result: StepResult, total: int) -> None: ...


def execute_plan(
    plan: Plan,
    ws: Workspace,
    services: Any,
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
                run.results.append(StepResult(planned, "not-run"))
                continue
            try:
                # which step is about to run: its arguments, decision and outcome are in the
                # step's own record, the capability, its digest and the inputs in run.start
                # (a large argument is not recorded twice)
                audit.record("step.start", run_id=run_id, step=planned.index, target=planned.label)
            except AuditError as exc:
                result = StepResult(
                    planned,
                    "failed",
                    error=f"{exc}; the step did not run",
                    hint="make the audit log writable (Runtime Home's audit/ folder)",
                )
                run.results.append(result)
                reporter.step_finished(result, total)
                stop, run.exit_code = "failed", int(ExitCode.STEP_FAILED)
                continue
            in_progress = planned  # announced; its own record is not written yet
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
                result.status = "failed"
                result.error = f"{exc} (the step itself ran)"
            in_progress = None
            reporter.step_finished(result, total)
            if result.status == "interrupted":
                stop, run.exit_code = "interrupted", int(ExitCode.INTERRUPTED)
            elif result.status == "terminated":
                stop, run.exit_code = "terminated", 128 + (result.signum or 15)
            elif result.status == "refused":
                stop, run.exit_code = "refused", int(ExitCode.POLICY_REFUSED)
            elif result.status == "missing-credential":
                stop, run.exit_code = "missing-credential", int(ExitCode.MISSING_CREDENTIAL)
            elif result.status == "missing-capability":
                stop, run.exit_code = "missing-capability", int(ExitCode.MISSING_CAPABILITY)
            elif result.status != "ok":
                stop, run.exit_code = "failed", int(ExitCode.STEP_FAILED)
    except (KeyboardInterrupt, Terminated) as exc:
        # a signal between steps, while a record was written or the reporter printed: the
        # step that was announced and not yet recorded gets its record (as it ended, or as
        # interrupted), the steps never started are not run, and run.end is still written
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "terminated"
        stop = status
        run.exit_code = (
            int(ExitCode.INTERRUPTED) if isinstance(exc, KeyboardInterrupt) else exc.exit_code
        )
        cause = "SIGINT" if isinstance(exc, KeyboardInterrupt) else exc.name
        ended = {r.planned.index: r for r in run.results}
        if in_progress is not None:
            last = ended.get(in_progress.index)
            if last is None:
                last = StepResult(in_progress, status, error=f"{status} by {cause}")
                run.results.append(last)
            with contextlib.suppress(AuditError):
                _record_step(audit, base, in_progress, last)
        done = {r.planned.index for r in run.results}
        run.results += [StepResult(p, "not-run") for p in plan.steps if p.index not in done]
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
        # the documented API operation a REST call was sent to (e.g. repos/replace-all-topics)
        route_operation=route.operation_id if (route := planned.inspection.route) else None,
        binary=planned.binary,
        binary_path=planned.binary_path,
        args=planned.args,
        transport=planned.transport,
        effect=planned.effect,
        decision=planned.decision.to_json(),
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
    services: Any,
    redactor: Redactor,
    reporter: Reporter,
    timeout: float,
) -> StepResult:
    services.network = network
    env = StepEnvironment(
        run=services,
        timeout=timeout,
        on_output=lambda stream, text: reporter.step_output(planned, stream, text),
        step_index=planned.index,
    )
    started = time.perf_counter()

    def done(
        status: str,
        outcome: StepOutcome | None = None,
        error: str | None = None,
        hint: str | None = None,
    ) -> StepResult:
        return StepResult(
            planned, status, outcome, (time.perf_counter() - started) * 1000, error, hint
        )

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
    except KeyboardInterrupt:
        return done("interrupted", error="interrupted by SIGINT; the step's processes were stopped")
    except Terminated as exc:
        result = done(
            "terminated", error=f"terminated by {exc.name}; the step's processes were stopped"
        )
        result.signum = exc.signum
        return result
    except PolicyRefusal as exc:
        return done("refused", error=exc.message, hint=exc.hint)
    except MissingCredential as exc:
        return done("missing-credential", error=exc.message, hint=exc.hint)
    except MissingCapability as exc:
        return done("missing-capability", error=exc.message, hint=exc.hint)
    except StepError as exc:
        outcome = StepOutcome(
            ok=False, exit_code=exc.exit_code, http_status=exc.http_status, data=exc.data
        )
        return done("failed", outcome, exc.message, exc.hint)
    except RuntimeFailure as exc:
        return done("failed", error=exc.message, hint=exc.hint)
    except Exception as exc:  # a bug in a provider: the step fails and is recorded, no traceback
        if ws.environ.get("RUNTIME_DEBUG") == "1":  # asked for: where it happened, redacted
            import sys
            import traceback

            sys.stderr.write(redactor.text(traceback.format_exc()))
        return done(
            "failed",
            error=f"internal error in {planned.label}: {type(exc).__name__}",
            hint="this is a bug; rerun with RUNTIME_DEBUG=1 to see where, and report it",
        )
    if outcome.ok:
        return done("ok", outcome)
    return done("failed", outcome, outcome.error or "the step failed", outcome.hint)
