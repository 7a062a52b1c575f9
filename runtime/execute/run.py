"""The execute and record stations' work: open the audit log, register every secret the
run could reach, record the run's start, run the plan; record a refused run."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from runtime.errors import RuntimeFailure, UsageError
from runtime.execute.audit import AuditError, AuditLog
from runtime.execute.engine import Reporter, RunResult, execute_plan
from runtime.plan.build import Plan
from runtime.redact import SECRET_NAME, Redactor

if TYPE_CHECKING:
    from runtime.document.model import Capability
    from runtime.services import RunServices
    from runtime.workspace import Workspace


def run_plan(
    plan: Plan,
    inputs: dict[str, str],
    services: RunServices,
    redactor: Redactor,
    reporter: Reporter,
    run_id: str,
    timeout: float,
) -> RunResult:
    """Run the plan's steps in order, recording each: the runtime is not dumpable, every
    secret in reach is registered first, and run.start is written before the first step
    (if it cannot be, nothing runs)."""
    from runtime.execute.launch import protect_process

    ws = services.workspace
    protect_process()
    register_credentials(plan, services, redactor)
    try:
        audit = AuditLog(ws.home.audit_log, redactor, ws.clock)
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
            )
        except AuditError as exc:
            raise UsageError(f"{exc}; nothing ran", hint="make the audit log writable") from None
        return execute_plan(plan, ws, services, redactor, audit, reporter, run_id, timeout)
    finally:
        audit.close()


def register_credentials(plan: Plan, services: RunServices, redactor: Redactor) -> None:
    """Every secret this run could reach goes to the redactor before the first step.

    The values of environment variables named like secrets (the runtime's token
    variable among them), and each credential a planned step will ask the Auth
    Engine for: whatever a step prints, in whatever encoding, is redacted even if
    the step that would have registered it never runs.
    """
    for name, value in services.environ.items():
        if SECRET_NAME.search(name):
            redactor.add(value)
    auth = None
    for planned in plan.steps:
        if planned.credential is None:
            continue
        auth = auth or services.auth
        try:
            host = planned.inspection.credential_host or auth.default_host(planned.credential)
            auth.lookup(planned.credential, host)  # registers what it finds
        except RuntimeFailure:
            continue  # reported by the step that needs it


def record_refusal(
    ws: Workspace,
    capability: Capability | None,
    redactor: Redactor,
    run_id: str,
    reason: str,
    status: str,
) -> None:
    """A refused run leaves one audit record too (best effort: the refusal itself is the answer)."""
    try:
        audit = AuditLog(ws.home.audit_log, redactor, ws.clock)
    except AuditError:
        return
    try:
        audit.record(
            "run.refused",
            run_id=run_id,
            capability=capability.path if capability else None,
            sha256=capability.sha256 if capability else None,
            status=status,
            reason=reason,
        )
    except AuditError:
        pass
    finally:
        audit.close()
