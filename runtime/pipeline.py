"""The pipeline in one place: load -> validate -> resolve -> (preflight) -> plan/policy -> execute -> record.

Each function is one station or a short run of them; the CLI calls them in
order and renders what they return. Errors are values (problems) until a
station must stop the command, then a :class:`~runtime.errors.RuntimeFailure`
carries the documented exit code.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any

from runtime.document.catalog import Target, resolve_one
from runtime.document.loader import Document
from runtime.document.model import Arg, Capability, Step
from runtime.document.validate import Validation, validate_file
from runtime.errors import (
    InvalidCapability,
    MissingCapability,
    PolicyRefusal,
    RuntimeFailure,
    UsageError,
)
from runtime.execute.engine import Reporter, RunResult, execute_plan
from runtime.plan.build import Plan, build_plan
from runtime.plan.network import NetworkRule
from runtime.plan.substitute import check_inputs, check_sizes
from runtime.problems import Problem
from runtime.provider import bind, match_operation
from runtime.redact import Redactor
from runtime.services import Services
from runtime.workspace import Workspace


@dataclass
class Prepared:
    target: Target | None
    capability: Capability
    inputs: dict[str, str]
    plan: Plan
    services: Services
    redactor: Redactor
    warnings: list[Problem]


def validated(ws: Workspace, name: str) -> tuple[Target, Validation]:
    target = resolve_one(name, ws.sources, ws.cwd)
    result = validate_file(target.path, target.display, ws.registry, ws.policy)
    if not result.ok:
        errors = [p for p in result.problems if p.is_error]
        raise InvalidCapability(
            f"{target.display} is not a valid capability ({len(errors)} error{'s' if len(errors) != 1 else ''}); nothing ran",
            hint=f"run `runtime capability validate {name}` for details",
            problems=errors,
        )
    return target, result


def prepare(
    ws: Workspace, name: str, inputs: dict[str, str], *, require_inputs: bool = True
) -> Prepared:
    """Load, validate, check inputs, resolve and decide policy. ``require_inputs=False`` (preflight)
    leaves missing required inputs to be reported as unmet requirements."""
    target, result = validated(ws, name)
    cap = result.capability
    check_inputs(cap, inputs, require=require_inputs)
    check_sizes(cap, inputs)
    redactor = Redactor()
    for key, value in inputs.items():
        from runtime.redact import SECRET_NAME

        if SECRET_NAME.search(key):
            redactor.add(value)
    services = Services(ws, redactor)
    plan = build_plan(cap, inputs, ws, services, result.resolved)
    warnings = [p for p in result.problems if not p.is_error]
    return Prepared(target, cap, inputs, plan, services, redactor, warnings)


def single_step(
    ws: Workspace, provider: str | None, binary: str | None, args: list[str]
) -> Prepared:
    """A one-step capability for `runtime <provider> ...` and `runtime command run`."""
    label = f"runtime {provider or 'command run ' + (binary or '')}"
    if provider is not None:
        prov = ws.registry.get(provider)
        assert prov is not None
        op = match_operation(prov.operations, args)
        if op is None:
            raise UsageError(
                f"'{' '.join(args[:2])}' is not an operation of '{provider}'",
                hint=f"run `runtime {provider} --help` for the operations",
            )
        _, problems = bind(op, args[len(op.words) :])
        if problems:
            raise UsageError(problems[0].message, hint=problems[0].hint)
    else:
        assert binary is not None
        if not ws.policy.binary_listed(binary):
            raise PolicyRefusal(
                f"binary '{binary}' is not in allowed_binaries",
                hint="allowed: " + ", ".join(sorted(ws.policy.allowed_binaries)),
            )
    doc = Document(label, "", "")
    step = Step(1, provider, binary, tuple(Arg(a, 0, 0) for a in args), 0, 0)
    cap = Capability(label, "", doc, steps=[step])
    redactor = Redactor()
    services = Services(ws, redactor)
    plan = build_plan(cap, {}, ws, services)
    return Prepared(None, cap, {}, plan, services, redactor, [])


def gate(prepared: Prepared) -> None:
    """Refuse before anything runs: a policy refusal (3) or a missing binary (5)."""
    plan = prepared.plan
    refused = plan.refused
    if refused:
        lines = []
        for s in refused:
            what = f"{s.label} {' '.join(prepared.redactor.text(a) for a in s.args[len(s.operation.words) if s.operation else 0 :])}".strip()
            reason = f": {s.decision.reason}" if s.decision.reason else ""
            lines.append(f"step {s.index} ({what}) refused by {s.decision.rule}{reason}")
        shown = "`runtime policy show` prints the effective policy and where each rule comes from"
        hint = next((s.decision.hint for s in refused if s.decision.hint), "")
        raise PolicyRefusal(
            "; ".join(lines) + "; nothing ran", hint=f"{hint}; {shown}" if hint else shown
        )
    missing = plan.missing_binaries
    if missing:
        names = ", ".join(sorted({s.binary or "" for s in missing}))
        raise MissingCapability(
            f"missing capability: binary {names} not found on PATH; nothing ran",
            hint="install it, or put it on PATH",
        )
    confinement_gate(prepared)


def confinement_gate(prepared: Prepared) -> None:
    """Refuse (exit 5) binary steps whose promises this machine cannot keep.

    MDA requires.network must be satisfied or refused: ``none`` needs OS
    confinement (a new network namespace); ``local`` and host lists cannot be
    enforced on a program at all. ``require_confinement: true`` in a policy
    refuses binary steps wherever confinement is missing.
    """
    plan = prepared.plan
    binaries = [s for s in plan.steps if s.binary is not None]
    programs = binaries + [s for s in plan.steps if s.transport == "cli"]
    if not programs:
        return
    ws = prepared.services.workspace
    rule = NetworkRule.from_requires(plan.capability.requires.get("network"))
    steps = ", ".join(str(s.index) for s in binaries)
    if binaries and rule is not None and rule.kind in ("local", "hosts"):
        raise MissingCapability(
            f"missing capability: the capability declares {rule.describe()}, which runtime "
            f"cannot enforce on a program (binary step{'s' if len(binaries) > 1 else ''} "
            f"{steps}); nothing ran",
            hint="declare network: public (or none, if the steps need no network), or use "
            "provider operations, whose every connection is checked",
        )
    launcher = prepared.services.launcher
    if launcher.confined:
        return
    required, source = ws.policy.require_confinement
    if required:
        raise MissingCapability(
            f"missing capability: binary steps cannot be OS-confined here "
            f"({launcher.availability.reason}) and the policy requires it "
            f"(require_confinement: true, {source}); nothing ran",
            hint="install bubblewrap and allow unprivileged user namespaces, "
            "or run where they are available",
        )
    if binaries and rule is not None and rule.kind == "none":
        raise MissingCapability(
            f"missing capability: the capability declares network: none, which needs OS "
            f"confinement for binary steps ({launcher.availability.reason}); nothing ran",
            hint="install bubblewrap (Debian package bubblewrap) and allow unprivileged user "
            "namespaces",
        )


def preflight_gate(prepared: Prepared, strict: bool) -> Any:
    """The offline preflight before execute: a required requirement not ready refuses the run.

    Exit 4 when only credentials are missing, else 5 (missing capability). Nothing has run.
    """
    from runtime.errors import MissingCredential
    from runtime.preflight.checks import run_preflight

    ws = prepared.services.workspace
    report = run_preflight(ws, prepared.services, prepared.plan, prepared.inputs, strict=strict)
    blocking = report.blocking()
    if not blocking:
        return report
    shown = 5  # a long workflow can miss the same folder in hundreds of steps
    lines = [f"{c.requirement.id}: {c.reason}" for c in blocking[:shown]]
    if len(blocking) > shown:
        lines.append(
            f"and {len(blocking) - shown} more (`runtime capability preflight` lists them all)"
        )
    fixes = list(dict.fromkeys(c.fix for c in blocking if c.fix))  # each fix once, in order
    hint = "; ".join(fixes) or "run `runtime capability preflight` for the report"
    if all(c.requirement.type == "credential" for c in blocking):
        raise MissingCredential(
            "missing credential: " + "; ".join(lines) + "; nothing ran", hint=hint
        )
    raise MissingCapability("missing capability: " + "; ".join(lines) + "; nothing ran", hint=hint)


def execute(
    prepared: Prepared, reporter: Reporter, timeout: float | None, run_id: str
) -> RunResult:
    from runtime.execute.audit import AuditError, AuditLog
    from runtime.execute.launch import protect_process

    ws = prepared.services.workspace
    protect_process()
    register_credentials(prepared)
    try:
        audit = AuditLog(ws.home.audit_log, prepared.redactor, ws.clock)
    except AuditError as exc:
        raise UsageError(
            f"{exc}; nothing ran", hint="make Runtime Home writable, or set RUNTIME_HOME"
        ) from None
    cap = prepared.capability
    try:
        audit.record(
            "run.start",
            run_id=run_id,
            capability=cap.path,
            sha256=cap.sha256,
            inputs=prepared.redactor.inputs(prepared.inputs),
            steps=len(prepared.plan.steps),
            # who ran it: a run.start without run.end is "running" while this process lives,
            # "abandoned" once it is gone (SIGKILL, a power cut)
            pid=os.getpid(),
            host=socket.gethostname(),
        )
    except AuditError as exc:
        audit.close()
        raise UsageError(f"{exc}; nothing ran", hint="make the audit log writable") from None
    try:
        return execute_plan(
            prepared.plan,
            ws,
            prepared.services,
            prepared.redactor,
            audit,
            reporter,
            run_id,
            timeout if timeout is not None else ws.policy.timeout(),
        )
    finally:
        audit.close()
        prepared.services.close()


def register_credentials(prepared: Prepared) -> None:
    """Every secret this run could reach goes to the redactor before the first step.

    The values of environment variables named like secrets (the runtime's token
    variable among them), and each credential a planned step will ask the Auth
    Engine for: whatever a step prints, in whatever encoding, is redacted even if
    the step that would have registered it never runs.
    """
    from runtime.redact import SECRET_NAME

    ws = prepared.services.workspace
    for name, value in ws.environ.items():
        if SECRET_NAME.search(name):
            prepared.redactor.add(value)
    auth = None
    for planned in prepared.plan.steps:
        if planned.credential is None:
            continue
        auth = auth or prepared.services.auth
        host = planned.inspection.credential_host or auth.default_host(planned.credential)
        try:
            auth.lookup(planned.credential, host)  # registers what it finds
        except RuntimeFailure:
            continue  # reported by the step that needs it


def record_refusal(
    ws: Workspace, prepared: Prepared | None, run_id: str, reason: str, status: str
) -> None:
    """A refused run leaves one audit record too (best effort: the refusal itself is the answer)."""
    from runtime.execute.audit import AuditError, AuditLog

    redactor = prepared.redactor if prepared else Redactor()
    try:
        audit = AuditLog(ws.home.audit_log, redactor, ws.clock)
    except AuditError:
        return
    try:
        cap = prepared.capability if prepared else None
        audit.record(
            "run.refused",
            run_id=run_id,
            capability=cap.path if cap else None,
            sha256=cap.sha256 if cap else None,
            status=status,
            reason=reason,
        )
    except AuditError:
        pass
    finally:
        audit.close()
