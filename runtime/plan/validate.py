"""Validation: the grammar plus the checks against registered providers and policy.

Validation never authenticates, contacts a network or runs a step. It checks
what the grammar reference gives it: providers and their operations, argument
forms, that a binary is in ``allowed_binaries``; and, for ``capability
validate``, what the policy would refuse (:func:`policy_problems`), decided on
the args as written where the refusal holds whatever the inputs are. The rest
of the policy is decided at plan time, after substitution.
"""

from __future__ import annotations

import os

from runtime.document.grammar import references
from runtime.document.model import Capability, Step
from runtime.home.registry import Registry
from runtime.plan.binding import (
    argument_problems,
    authored_call,
    bind,
    did_you_mean,
    match_operation,
    resolve_call,
    similar_operations,
)
from runtime.plan.policy import NEVER_BINARIES, Policy
from runtime.plan.substitute import substitute
from runtime.problems import Problem
from runtime.provider import Decision, Operation
from runtime.provider.operations import Binding, Piece
from runtime.provider.programs import UNKNOWN

# step index -> the operation a provider step names and how its args bind to it
Resolved = dict[int, tuple[Operation, Binding]]


def check_steps(
    cap: Capability, registry: Registry, policy: Policy, resolved: Resolved | None = None
) -> list[Problem]:
    """The steps' problems; ``resolved`` (when given) receives each provider step that binds
    with no problem."""
    out: list[Problem] = []
    for step in cap.steps:
        out.extend(_check_step(cap, step, registry, policy, resolved))
        for arg in step.args:
            for ref in references(arg.text):
                if ref.group(1) not in cap.inputs:
                    out.append(
                        Problem(
                            cap.path,
                            arg.line,
                            arg.column,
                            "warning",
                            "undeclared-input",
                            f"'${{{ref.group(1)}}}' names no declared input; it will stay literally as typed",
                            "declare it under 'inputs:' or fix the name"
                            + (f" (declared: {', '.join(cap.inputs)})" if cap.inputs else ""),
                        )
                    )
    count = len(cap.steps)
    for entry in cap.lineage:
        for start, end in entry.steps:
            if start < 1 or end < start or (count and end > count):
                out.append(
                    Problem(
                        cap.path,
                        entry.line,
                        entry.column,
                        "warning",
                        "lineage-range",
                        f"Lineage names steps {start}-{end} for '{entry.name}', "
                        f"but the workflow has {count} steps",
                        "fix the step range",
                    )
                )
    return out


def _check_step(
    cap: Capability, step: Step, registry: Registry, policy: Policy, resolved: Resolved | None
) -> list[Problem]:
    def problem(line: int, col: int, code: str, message: str, hint: str | None = None) -> Problem:
        return Problem(cap.path, line, col, "error", code, message, hint)

    if step.binary is not None:
        name = step.binary
        if name in NEVER_BINARIES:
            return [
                problem(
                    step.line,
                    step.column,
                    "binary-runtime",
                    f"step {step.index}: 'runtime' is never a valid binary",
                    "a capability cannot invoke another: inline its steps and declare a Lineage section",
                )
            ]
        if "/" in name:
            return [
                problem(
                    step.line,
                    step.column,
                    "binary-path",
                    f"step {step.index}: binary '{name}' must be a name, not a path",
                    f"write '{os.path.basename(name)}': an allowed binary is named, and "
                    "resolved on PATH at plan time"
                    if policy.binary_listed(os.path.basename(name))
                    else "name an allowed binary; it is resolved on PATH at plan time",
                )
            ]
        refusal = policy.binary_refusal(name)
        if refusal is not None:
            code, message, hint = refusal
            return [problem(step.line, step.column, code, f"step {step.index}: {message}", hint)]
        return []
    provider = registry.get(step.provider or "")
    if provider is None:
        known = registry.names()
        return [
            problem(
                step.line,
                step.column,
                "unknown-provider",
                f"step {step.index}: '{step.provider}' is not a registered provider",
                "registered providers: " + ", ".join(known),
            )
        ]
    texts = step.arg_texts
    operation = match_operation(provider.operations, texts)
    if operation is None:
        where = step.args[0] if step.args else None
        words = " ".join(texts[:2]) if texts else "(no args)"
        return [
            problem(
                where.line if where else step.line,
                where.column if where else step.column,
                "unknown-operation",
                f"step {step.index}: '{words}' is not an operation of '{provider.name}'",
                did_you_mean(similar_operations(provider.operations, texts))
                + f"run `runtime {provider.name} --help` for the operations; they are: "
                + ", ".join(op.name for op in provider.operations),
            )
        ]
    offset = len(operation.words)
    binding, binding_problems = bind(operation, texts[offset:])
    # the declared types and choices of the literal values (a value with a ${reference}
    # is checked at plan time, once known), then the provider's optional ``check`` hook:
    # what it can tell from the args as authored (a REST route GitHub does not document);
    # it looks only, like ``inspect`` at plan time
    if not binding_problems:
        rest = texts[offset:]
        pieces = [(Piece(a, None, bool(references(a))),) for a in rest]
        binding_problems = argument_problems(operation, resolve_call(binding, rest, pieces))
        binding_problems += provider.check(operation, authored_call(binding, rest))
    if resolved is not None and not binding_problems:  # only a step with no problem
        resolved[step.index] = (operation, binding)
    out: list[Problem] = []
    for bp in binding_problems:
        if bp.arg_index >= 0:
            arg = step.args[offset + bp.arg_index]
            line, col = arg.line, arg.column
        else:
            line, col = step.args[0].line, step.args[0].column
        out.append(problem(line, col, bp.code, f"step {step.index}: {bp.message}", bp.hint))
    return out


def policy_problems(
    cap: Capability, registry: Registry, policy: Policy, resolved: Resolved, *, strict: bool
) -> list[Problem]:
    """What plan and execute would refuse by policy (exit 3), said before a commit.

    Each step is decided as plan decides it, on its args as written with every declared
    input's value unknown (:data:`UNKNOWN`): a refusal is reported only when it holds
    whatever the inputs are (``git push --force ${remote}``); what depends on a value (a
    subcommand, a method or a route from an input) is left to plan time. The program's
    real file, the paths a call touches and the host gh is pinned to belong to this
    machine and are left to plan time too. Warnings; errors when ``strict``.
    """
    values = dict.fromkeys(cap.inputs, UNKNOWN)
    out: list[Problem] = []
    for step in cap.steps:
        texts = step.arg_texts
        args = [substitute(text, values) for text in texts]
        decision: Decision | None = None
        if step.binary is not None:
            if policy.binary_listed(step.binary):  # else already an error of its own
                owner = registry.program_owner(step.binary)
                decision = policy.decide_binary(
                    step.binary,
                    args,
                    authored=texts,
                    api_owner=owner,
                )
        elif step.index in resolved and (provider := registry.get(step.provider or "")):
            operation, binding = resolved[step.index]
            n = len(operation.words)
            pieces = [(Piece(a, None, UNKNOWN in a),) for a in args[n:]]
            call = resolve_call(binding, args[n:], pieces)
            decision = policy.decide_call(provider, operation, call, authored=texts[n:])
        if decision is None or decision.allowed:
            continue
        what = " ".join([step.binary or step.provider or "", *texts])
        what = what if len(what) <= 60 else what[:57] + "..."
        reason = f": {decision.reason}" if decision.reason else ""
        whatever = ", whatever the inputs," if any(UNKNOWN in a for a in args) else ""
        hint = "plan and execute refuse this step (exit 3); `runtime capability plan` shows "
        hint += "the decision, `runtime policy show` the rules"
        where = step.args[0] if step.args else step
        out.append(
            Problem(
                cap.path,
                where.line,
                where.column,
                "error" if strict else "warning",
                "policy-refused",
                # an unknown value has no text of its own
                f"step {step.index} ({what}) would be refused{whatever} by {decision.rule}"
                f"{reason}".replace(UNKNOWN, "${...}"),
                (f"{decision.hint}; {hint}" if decision.hint else hint).replace(UNKNOWN, "${...}"),
            )
        )
    return out
