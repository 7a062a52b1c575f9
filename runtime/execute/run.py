"""The execute and record stations' work: open the audit log, register every secret the
run could reach, record the run's start, run the plan; record a refused run."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from runtime.errors import RuntimeFailure, UsageError
from runtime.execute.audit import AuditError, AuditLog, Origin
from runtime.execute.engine import Reporter, RunResult, execute_plan
from runtime.home.config import Rotation
from runtime.plan.build import Plan
from runtime.redact import Redactor

if TYPE_CHECKING:
    from runtime.execute.services import RunServices
    from runtime.plan.workspace import Workspace


def run_plan(
    plan: Plan,
    inputs: dict[str, str],
    services: RunServices,
    redactor: Redactor,
    reporter: Reporter,
    run_id: str,
    timeout: float,
    *,
    origin: Origin | None = None,
) -> RunResult:
    """Run the plan's steps in order, recording each: the runtime is not dumpable, every
    secret in reach is registered first, and run.start is written before the first step
    (if it cannot be, nothing runs)."""
    from runtime.execute.launch import protect_process

    ws = services.workspace
    protect_process()
    register_credentials(plan, services, redactor)
    try:
        audit = open_audit(ws, redactor, ws.config.audit)
    except AuditError as exc:
        raise UsageError(
            f"{exc}; nothing ran", hint="make Runtime Home writable, or set RUNTIME_HOME"
        ) from None
    cap = plan.capability
    try:
        try:
            audit.record(
                "run.start",
                run_id=run_id,
                capability=cap.path,
                sha256=cap.sha256,
                inputs=redactor.inputs(inputs),
                steps=len(plan.steps),
                # who ran it: a run.start without run.end is "running" while this process
                # lives, "abandoned" once it is gone (SIGKILL, a power cut)
                pid=os.getpid(),
                host=socket.gethostname(),
                **(origin or Origin()).fields(),
            )
        except AuditError as exc:
            raise UsageError(f"{exc}; nothing ran", hint="make the audit log writable") from None
        return execute_plan(plan, ws, services, redactor, audit, reporter, run_id, timeout)
    finally:
        audit.close()


def open_audit(ws: Workspace, redactor: Redactor, rotation: Rotation) -> AuditLog:
    """Home's audit log, rotating as config.yaml says (:class:`AuditError` if it cannot
    be opened)."""
    return AuditLog(ws.home.audit_log, redactor, ws.clock, rotation)


def register_credentials(plan: Plan, services: RunServices, redactor: Redactor) -> None:
    """Every secret this run could reach goes to the redactor before the first step.

    The environment's (:meth:`Redactor.add_environment`), and each credential a planned
    step will ask the Auth Engine for: whatever a step prints, in whatever encoding,
    is redacted even if the step that would have registered it never runs.
    """
    redactor.add_environment(services.environ)
    auth = None
    asked: set[tuple[str | None, str | None]] = set()
    for planned in plan.steps:
        # once per credential and host, not per step: every step of a host would find
        # (and register) the same value
        wanted = (planned.credential, planned.inspection.credential_host)
        if planned.credential is None or wanted in asked:
            continue
        asked.add(wanted)
        auth = auth or services.auth
        try:
            host = planned.inspection.credential_host or auth.default_host(planned.credential)
            auth.lookup(planned.credential, host)  # registers what it finds
        except RuntimeFailure:
            continue  # reported by the step that needs it


# the problems a refusal record lists at most (the reason says how many there are)
RECORDED_PROBLEMS = 20


def record_refusal(
    ws: Workspace,
    redactor: Redactor,
    run_id: str,
    *,
    capability: str | None,
    sha256: str | None,
    failure: RuntimeFailure,
    rules: list[str],
    origin: Origin | None = None,
) -> None:
    """A refused run leaves one audit record too: what was refused, the failure's code,
    exit code and message, and the policy rules or the problems that refused it. Best
    effort: the refusal itself is the answer. Redacted as every record is, with the
    environment's secrets registered first (a refusal comes before the run registers
    them)."""
    redactor.add_environment(ws.environ)
    try:
        rotation = ws.config.audit
    except RuntimeFailure:  # a broken config.yaml (perhaps the refusal itself)
        rotation = Rotation()
    try:
        audit = open_audit(ws, redactor, rotation)
    except AuditError:
        return
    extra: dict[str, list[str]] = {}
    if rules:
        extra["rules"] = rules
    if failure.problems:
        extra["problems"] = [
            f"{p.file}:{p.line}:{p.column}: {p.message}"
            for p in failure.problems[:RECORDED_PROBLEMS]
        ]
    try:
        audit.record(
            "run.refused",
            run_id=run_id,
            capability=capability,
            sha256=sha256,
            status=failure.code,
            exit_code=int(failure.exit_code),
            reason=failure.message,
            **extra,
            **(origin or Origin()).fields(),
        )
    except AuditError:
        pass
    finally:
        audit.close()
