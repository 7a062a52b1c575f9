"""The checks a user policy file meets on top of the shipped default (its floor), shared by
runtime's own policy files (:mod:`runtime.plan.policy_file`) and Engineering Runtime's
(:mod:`runtime.plan.er_policy`): an entry the floor overrides is a warning at its
position, a bound above the default's is refused, and a file's errors are raised at the
first one's position."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.errors import InvalidPolicy
from runtime.plan.policy import NEVER_BINARIES
from runtime.yamldoc.schema import Hook, Msg

if TYPE_CHECKING:
    from runtime.plan.policy import Policy
    from runtime.problems import Problem


def denied_binary_check(floor: Policy) -> Hook:
    """The check of an allowed_binaries entry on top of ``floor``: one the floor denies is
    a warning at the entry (it has no effect), naming the rule."""

    def denied_binary(node: Any, value: Any, scope: Any) -> Msg | None:
        if value in NEVER_BINARIES:
            rule = "built-in: runtime never runs itself"
        else:
            denied = floor.denied_name(value)
            if denied is None:
                return None
            also = "" if denied == value else f", which covers {value}"
            rule = f"denied_binaries of the default policy lists {denied}{also}"
        return overridden(
            f"allowed_binaries entry '{value}'",
            rule,
            "remove it from allowed_binaries in this file; a provider operation or an allowed "
            "binary does the job instead",
        )

    return denied_binary


def raised_bound(floor: Policy, key: str, value: Any) -> int | float | None:
    """The default's bound ``file_edits.KEY`` when ``value`` is above it (as the file would
    write it: 100, not 100.0); None when it is not, or there is no such bound."""
    bound = floor.file_edits.get(key)
    if bound is None or not isinstance(value, float) or value <= bound[0]:
        return None
    return int(bound[0]) if bound[0].is_integer() else bound[0]


def overridden(entry: str, rule: str, hint: str) -> Msg:
    return Msg(
        f"{entry} has no effect: the safety floor overrides it ({rule}); a user policy "
        "can allow more, never what the default denies",
        hint,
        code="policy-floor",
        severity="warning",
    )


def raise_errors(problems: list[Problem], label: str) -> None:
    """Raise :class:`InvalidPolicy` for the errors among ``problems``, the first one's
    position in the message, if any."""
    errors = [p for p in problems if p.is_error]
    if errors:
        first = errors[0]
        raise InvalidPolicy(
            f"{label}:{first.line}:{first.column}: {first.message}",
            hint=first.hint,
            problems=errors,
        )
