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
from runtime.redact import Redactor

if TYPE_CHECKING:
    from runtime.services import RunServices


def enforce(plan: Plan, services: RunServices, redactor: Redactor) -> None:
    """Refuse before anything runs: a policy refusal (3), a missing binary or a promise
    this machine cannot keep (5)."""
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
    _confinement(plan, services)


def _confinement(plan: Plan, services: RunServices) -> None:
    """Refuse (exit 5) binary steps whose promises this machine cannot keep.

    MDA requires.network must be satisfied or refused: ``none`` needs OS
    confinement (a new network namespace); ``local`` and host lists cannot be
    enforced on a program at all. ``require_confinement: true`` in a policy
    refuses binary steps wherever confinement is missing.
    """
    binaries = [s for s in plan.steps if s.binary is not None]
    programs = binaries + [s for s in plan.steps if s.transport == "cli"]
    if not programs:
        return
    ws = services.workspace
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
    launcher = services.launcher
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
