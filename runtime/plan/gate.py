"""The policy station: each step decided on its bound call, and the verdict of a run.

:func:`decide` gives every planned step its decision (a binary step on the program's
call as its profile reads it, an operation step on its bound call, a program that is
pinned to its credential's host on the hosts its args name); every command that shows
decisions walks through it. Before a run executes, :func:`enforce` makes of them one
refusal naming every refused step and the rule, before anything runs. Binaries that
are missing, and promises this machine cannot keep for programs (a network rule,
confinement), refuse the run too.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

from runtime.errors import MissingCapability, PolicyRefusal
from runtime.plan.build import UNDECIDED, Plan, PlannedStep
from runtime.plan.network import NetworkRule
from runtime.plan.programs import owned_profile
from runtime.problems import Problem
from runtime.provider import CredentialKind, Decision
from runtime.provider.programs import ProgramProfile
from runtime.redact import Redactor
from runtime.text import printable, shorten

if TYPE_CHECKING:
    from runtime.plan.policy import Policy
    from runtime.plan.workspace import Workspace


# What this station asks of the run's services (the execute station's RunServices has
# each, made when first asked: a plan whose steps need no credential's host makes no
# Auth Engine, and one that starts no program probes no sandbox).


class CredentialHosts(Protocol):
    """The Auth Engine, as deciding reads it: the host a credential is for, and its kind
    (the other names its programs use for that host)."""

    def default_host(self, name: str) -> str: ...
    def kind(self, name: str) -> CredentialKind: ...


class Credentials(Protocol):
    @property
    def auth(self) -> CredentialHosts: ...


class Availability(Protocol):
    @property
    def reason(self) -> str: ...


class Confinement(Protocol):
    """The run's launcher, as enforcing reads it: whether it confines, and why not."""

    @property
    def confined(self) -> bool: ...
    @property
    def availability(self) -> Availability: ...


class Launches(Protocol):
    @property
    def launcher(self) -> Confinement: ...


def decide(plan: Plan, ws: Workspace, services: Credentials) -> None:
    """Give each step of ``plan`` its decision, on its bound call."""
    for planned in plan.steps:
        if planned.decision is UNDECIDED:
            planned.decision = _decision(planned, ws, services)


def _decision(planned: PlannedStep, ws: Workspace, services: Credentials) -> Decision:
    policy, step = ws.policy, planned.step
    texts = step.arg_texts
    if planned.binary is not None:
        path = planned.binary_path
        owner = ws.registry.program_owner(planned.binary)
        decision = policy.decide_binary(
            planned.binary,
            planned.args,
            authored=texts if step.line else None,  # a typed command has no authored form
            real_name=os.path.basename(os.path.realpath(path)) if path else None,
            api_owner=owner,
        )
        credential = planned.credential
        if decision.allowed and credential is not None:
            host = services.auth.default_host(credential)
            decision = _pinned(
                owned_profile(planned.binary, owner),
                planned.args,
                _hosts(services, credential, host),
                decision,
            )
        return decision
    provider = ws.registry.get(planned.provider or "")
    operation, call = planned.operation, planned.call
    assert provider is not None and operation is not None and call is not None
    n = len(operation.words)
    decision = policy.decide_call(
        provider, operation, call, authored=texts[n:] if step.line else None
    )
    inspection = planned.inspection
    if decision.allowed and inspection.decision is not None and not inspection.decision.allowed:
        decision = inspection.decision
    if (
        decision.allowed
        and operation.program is not None
        and operation.credential is not None
        and inspection.credential_host
    ):
        hosts = _hosts(services, operation.credential, inspection.credential_host)
        decision = _pinned(
            owned_profile(operation.program, provider),
            [*operation.words, *planned.args[n:]],
            hosts,
            decision,
        )
    return decision


def _hosts(services: Credentials, credential: str, host: str) -> tuple[str, ...]:
    """``host`` and the other names its programs may use for it (github.com:
    api.github.com), as the provider of the credential declares."""
    aliases = services.auth.kind(credential).host_aliases
    return (host, *(aliases(host) if aliases is not None else ()))


def _pinned(
    program: ProgramProfile, args: list[str], hosts: tuple[str, ...], decision: Decision
) -> Decision:
    """A program whose profile reads the hosts its args name (gh:
    :attr:`ProgramProfile.named_hosts`) talks only to the host its credential is for: a
    ``--repo HOST/...``, a URL or a ``--hostname`` naming another host is refused (the
    token would go there)."""
    if program.named_hosts is None:
        return decision
    name = program.name
    allowed = {h.lower() for h in hosts}
    for what, target in program.named_hosts(args):
        if target not in allowed:
            return Decision(
                False,
                f"built-in: {name} is pinned to its host",
                f"'{what}' names the host {target}, not {hosts[0]}, which {name}'s token is for",
                f"{name} talks only to the host of the run (the context's host setting); "
                "name repositories as OWNER/REPO",
            )
    return decision


def enforce(plan: Plan, policy: Policy, services: Launches, redactor: Redactor) -> list[Problem]:
    """Refuse before anything runs: a policy refusal (3), a missing binary or a promise
    this machine cannot keep (5), under ``policy``. The warnings it returns are for the
    run: steps that run unconfined because a policy allows it."""
    refused = plan.refused
    if refused:
        found = [_refusal_line(s, redactor) for s in refused]
        lines = [line for line, _ in found]
        shown = "`runtime policy show` prints the effective policy and where each rule comes from"
        hint = next((s.decision.hint for s in refused if s.decision.hint), "")
        if len(lines) == 1:
            message = f"{lines[0]}; nothing ran"
        else:  # one line each: six refusals of a step quoting a file are six lines
            message = f"{len(lines)} steps refused by policy; nothing ran:\n" + "\n".join(
                f"  {line}" for line in lines
            )
        if any(cut for _, cut in found) and plan.capability.document.text:
            shown += "; `runtime capability plan CAP --output json` shows each step's args whole"
        raise PolicyRefusal(message, hint=f"{hint}; {shown}" if hint else shown)
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
    return _confinement(plan, policy, services)


# How much of a refused step's args and reason its line quotes: an arg filled from a file
# (``--input body=@notes.md``) would otherwise put the whole file in the refusal, each
# time a step quotes it. Enough for any path a person types, and the reason's head and
# tail (what is refused, and the root or entry that refuses it).
REFUSAL_ARG = 80
REFUSAL_ARGS = 240
REFUSAL_REASON = 600


def _refusal_line(planned: PlannedStep, redactor: Redactor) -> tuple[str, bool]:
    """``step N (what) refused by RULE: reason`` on one line: control characters escaped
    (a newline as ``\\n``), the args and the reason shortened, the end of the reason
    kept (it names the roots or the entry that decides); and whether anything was cut."""
    n = len(planned.operation.words) if planned.operation else 0
    args = [printable(redactor.text(a)) for a in planned.args[n:]]
    short_args = [shorten(a, REFUSAL_ARG) for a in args]
    what = shorten(" ".join([planned.label, *short_args]), REFUSAL_ARGS)
    reason = printable(redactor.text(planned.decision.reason or ""))
    short_reason = _middle(reason, REFUSAL_REASON)
    line = f"step {planned.index} ({what}) refused by {planned.decision.rule}"
    line += f": {short_reason}" if short_reason else ""
    whole = " ".join([planned.label, *args])
    return line, what != whole or short_reason != reason


def _middle(text: str, limit: int) -> str:
    """``text`` cut in the middle to ``limit`` characters: its head and its tail."""
    if len(text) <= limit:
        return text
    half = (limit - 3) // 2
    return text[:half] + "..." + text[len(text) - half :]


def _confinement(plan: Plan, policy: Policy, services: Launches) -> list[Problem]:
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
