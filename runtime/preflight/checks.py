"""Preflight: does this machine have what the capability needs, here and now?

:func:`run_preflight` checks every requirement, declared and inferred, into a
:class:`runtime.preflight.report.Report`: each by the checker its type names
in :data:`CHECKERS`. The checkers are grouped by what they look at:
programs (:mod:`runtime.preflight.programs`), the network
(:mod:`runtime.preflight.network`), credentials
(:mod:`runtime.preflight.credentials`) and paths
(:mod:`runtime.preflight.paths`); the checks of what the run itself names
(its inputs, the objects it refers to, the runner) are here, with the table.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from runtime.document.model import Capability
from runtime.document.requirements import Requirement, declared
from runtime.plan.build import Plan
from runtime.plan.network import NetworkRule
from runtime.plan.workspace import Workspace
from runtime.preflight.credentials import check_credential
from runtime.preflight.inferred import inferred
from runtime.preflight.network import (
    check_context_source,
    check_host,
    check_mcp,
    check_network,
    check_network_enforcement,
)
from runtime.preflight.paths import check_path
from runtime.preflight.programs import (
    check_confinement,
    check_executable,
    check_model,
    check_operation,
    check_package,
    check_runtime,
    check_tool,
)
from runtime.preflight.report import (
    FALSE,
    TRUE,
    UNKNOWN,
    Check,
    Context,
    PreflightServices,
    Report,
    timestamp,
)


def run_preflight(
    ws: Workspace,
    services: PreflightServices,
    plan: Plan,
    inputs: dict[str, str],
    *,
    live: bool = False,
    strict: bool = False,
    probe: bool = True,
    runner_capabilities: tuple[str, ...] | None = None,
) -> Report:
    cap = plan.capability
    decl = declared(cap)
    inf = inferred(plan)
    ctx = Context(ws, services, plan, inputs, live, probe, ws.clock, runner_capabilities)
    ctx.network = NetworkRule.from_requires(cap.requires.get("network"))
    ctx.hosts = [r.target["host"] for r in inf.items if r.type == "networkHost"]
    report = Report(
        warnings=decl.warnings + inf.warnings,
        cost_hints=decl.cost_hints,
        live=live,
        strict=strict,
    )
    extra = typed_requirements(cap)
    for req in [*decl.items, *extra, *inf.items]:
        report.checks.append(check(req, ctx))
    _duplicates(report, extra)
    return report


def typed_requirements(cap: Capability) -> list[Requirement]:
    """Declared typed requirements (``metadata.runtime.requirements``)."""
    from runtime.document.typed_requirements import collect

    return collect(cap)


def _duplicates(report: Report, typed: list[Requirement]) -> None:
    seen: dict[str, int] = {}
    for req in typed:
        seen[req.id] = seen.get(req.id, 0) + 1
    for rid, count in seen.items():
        if count > 1:
            dup = Requirement(
                f"duplicate-id:{rid}",
                "duplicateId",
                {"id": rid},
                source="metadata.runtime.requirements",
            )
            report.checks.append(
                Check(
                    dup,
                    FALSE,
                    FALSE,
                    f"requirement id '{rid}' is declared {count} times",
                    "give each requirement a unique id",
                )
            )


def check(req: Requirement, ctx: Context) -> Check:
    if req.origin == "inferred" and req.review_status == "needsReview":
        return Check(
            req,
            UNKNOWN,
            UNKNOWN,
            "inferred requirement awaiting review (reviewStatus: needsReview)",
        )
    fn = CHECKERS.get(req.type)
    if fn is None:
        return Check(req, UNKNOWN, UNKNOWN, f"no check for requirement type '{req.type}'")
    result = fn(req, ctx)
    if req.max_age_seconds is not None and result.readiness != UNKNOWN:
        stamp = result.checked_at or timestamp(ctx)
        result.checked_at = stamp
        at = datetime.fromisoformat(stamp)
        result.valid_until = (at + timedelta(seconds=req.max_age_seconds)).isoformat(
            timespec="seconds"
        )
    return result


def check_input(req: Requirement, ctx: Context) -> Check:
    name = req.target["name"]
    if name in ctx.inputs:
        return Check(req, TRUE, TRUE, f"input {name} is supplied")
    return Check(req, TRUE, FALSE, f"required input {name} is not supplied", f"--input {name}=...")


# -- declared typed requirements -----------------------------------------------------------------


def check_object_ref(req: Requirement, ctx: Context) -> Check:
    from runtime.document.catalog import resolve_name
    from runtime.home.contexts import ContextStore

    kind, name = req.target["kind"], req.target["name"]
    note = (
        "; generation ignored (this kind has no generations)" if "generation" in req.target else ""
    )
    if kind == "capability":
        found = resolve_name(name, ctx.ws.sources)
        if found is None:
            return Check(
                req,
                FALSE,
                FALSE,
                f"no capability named {name} in the capability sources{note}",
                "add it to a capability source folder",
            )
        return Check(req, TRUE, TRUE, f"capability {name} at {found}{note}")
    if kind == "context":
        names = ContextStore(ctx.ws.home).names()
        if name in names:
            return Check(req, TRUE, TRUE, f"context {name} exists{note}")
        return Check(
            req,
            FALSE,
            FALSE,
            f"no context named {name}{note}",
            f"runtime context set {name} key=value",
        )
    # policy: "default" (shipped), "user" (the user policy file), or a path to a policy file
    if name == "default":
        return Check(req, TRUE, TRUE, f"the default policy ships with runtime{note}")
    path = ctx.ws.policy_file if name == "user" else Path(os.path.expanduser(name))
    if path is not None and not path.is_absolute():
        path = ctx.ws.cwd / path
    if path is not None and path.is_file():
        return Check(req, TRUE, TRUE, f"policy file {path} exists{note}")
    return Check(req, FALSE, FALSE, f"no policy file for '{name}'{note}")


def check_runner_capability(req: Requirement, ctx: Context) -> Check:
    name = req.target["name"]
    if ctx.runner_capabilities is None:
        return Check(
            req,
            TRUE,
            UNKNOWN,
            "no --runner-capability was given, so the runner's capabilities are unknown",
        )
    if name in ctx.runner_capabilities:
        return Check(req, TRUE, TRUE, f"the runner offers {name}", checked_at=timestamp(ctx))
    return Check(
        req,
        TRUE,
        FALSE,
        f"the runner does not offer {name}",
        f"run on a runner with --runner-capability {name}",
        checked_at=timestamp(ctx),
    )


CHECKERS: dict[str, Callable[[Requirement, Context], Check]] = {
    "confinement": check_confinement,
    "networkEnforcement": check_network_enforcement,
    "objectRef": check_object_ref,
    "runnerCapability": check_runner_capability,
    "contextSource": check_context_source,
    "mcpServer": check_mcp,
    "mcpTool": check_mcp,
    "mcpResource": check_mcp,
    "runtime": check_runtime,
    "tool": check_tool,
    "package": check_package,
    "network": check_network,
    "model": check_model,
    "providerOperation": check_operation,
    "executable": check_executable,
    "credential": check_credential,
    "networkHost": check_host,
    "localPath": check_path,
    "input": check_input,
}
