"""The policy station's verdict for a run that is about to execute.

The plan already holds a decision per step; here they become one refusal
naming every refused step and the rule, before anything runs. Binaries that
are missing, and promises this machine cannot keep for programs (a network
rule, a policy that requires OS confinement), refuse the run too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.errors import MissingCapability, PolicyRefusal
from runtime.plan.build import Plan
from runtime.plan.network import NetworkRule
from runtime.problems import Problem
from runtime.redact import Redactor

if TYPE_CHECKING:
    from runtime.execute.services import RunServices


def enforce(plan: Plan, services: RunServices, redactor: Redactor) -> list[Problem]:
    """Refuse before anything runs: a policy refusal (3), a missing binary or a promise
    this machine cannot keep (5). The warnings it returns are for the run: steps that run
    unconfined because a policy allows it."""
    refused = plan.refused
    if refused:
        lines = []
        for s in refused:
            what = f"{s.label} {' '.join(redactor.text(a) for a in s.args[len(s.operation.words) if s.operation else 0 :])}".strip()
            reason = f": {s.decision.reason}" if s.decision.reason else ""
            lines.append(f"step {s.index} ({what}) refused by {s.decision.rule}{reason}")
        shown = "`runtime policy show` prints the effective policy and where each rule comes from"
        hint = next((s.decision.hint for s in refused if s.decision.hint), "")
        raise PolicyRefusal(
            "; ".join(lines) + "; nothing ran", hint=f"{hint}; {shown}" if hint else shown
        )
    missing = plan.missing_binaries
    if missing:
        # gh for an operation run through it too: found before step 1 runs, not at its step
        names = ", ".join(sorted({s.program or "" for s in missing}))
        steps = ", ".join(f"{s.index}: {s.label}" for s in missing)
        raise MissingCapability(
            f"missing capability: binary {names} not found on PATH "
            f"(step{'s' if len(missing) > 1 else ''} {steps}); nothing ran",
            hint="install it, or put it on PATH",
        )
    return _confinement(plan, services)


def _confinement(plan: Plan, services: RunServices) -> list[Problem]:
    """Refuse (exit 5) steps that start a program where the kernel cannot confine them,
    unless the policy deliberately allows running unconfined; then each such step is
    marked (``confined: false``) and warned about. Confined or not, every program step is
    marked, for the JSON document and the audit log.

    Confined, the capability's ``requires.network`` narrows what the step's proxy lets
    through. Unconfined nothing can hold a program to it, so a rule other than ``public``
    refuses the run.
    """
    binaries = [s for s in plan.steps if s.binary is not None]
    programs = binaries + [s for s in plan.steps if s.transport == "cli"]
    if not programs:
        return []
    policy = services.workspace.policy
    launcher = services.launcher
    for planned in programs:
        planned.confined = launcher.confined
    if launcher.confined:
        return []
    reason = launcher.availability.reason
    steps = ", ".join(f"{s.index}: {s.label}" for s in programs)
    plural = "s" if len(programs) > 1 else ""
    if not policy.unconfined_allowed:
        demanded = (
            f"; the policy requires confinement (require_confinement: true, "
            f"{policy.require_confinement[1]})"
            if policy.require_confinement[0]
            else ""
        )
        raise MissingCapability(
            f"missing capability: confinement: {reason} (step{plural} {steps}){demanded}; "
            "nothing ran",
            hint=CONFINEMENT_FIX
            + (
                ""
                if policy.require_confinement[0]
                else "; or, deliberately, let steps run unconfined: allow_unconfined: true "
                "in a user policy"
            ),
        )
    rule = NetworkRule.from_requires(plan.capability.requires.get("network"))
    if rule is not None and rule.kind != "public":
        raise MissingCapability(
            f"missing capability: the capability declares {rule.describe()}, which runtime "
            f"cannot hold a program to unconfined ({reason}; step{plural} {steps}); "
            "nothing ran",
            hint=CONFINEMENT_FIX,
        )
    source = policy.allow_unconfined[1]
    warnings = []
    for planned in programs:
        planned.unconfined = f"{reason} (allow_unconfined: true, {source})"
        step = planned.step
        warnings.append(
            Problem(
                plan.capability.path,
                step.line or 1,
                step.column or 1,
                "warning",
                "unconfined",
                f"step {planned.index} ({planned.label}) runs NOT confined: {planned.unconfined}",
                "without confinement the program may execute anything and reach any host",
            )
        )
    return warnings


CONFINEMENT_FIX = (
    "install bubblewrap (Debian package bubblewrap), allow unprivileged user namespaces and "
    "boot a kernel with Landlock (5.13 or later, lsm=landlock); `runtime doctor` shows "
    "which layer is missing"
)
