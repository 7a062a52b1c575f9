"""The policy's ``agents`` section: what an AI assistant is offered through MCP.

``runtime mcp serve`` offers an assistant tools made from this section and the
catalog; the rest of the policy decides every step of every call as it decides
a step run from the command line. The section narrows, never widens::

    agents:
      capabilities: ["*"]         # catalog capabilities offered as tools (globs of names)
      execute_own_text: false     # capability text the assistant writes: validate, plan
      operations: read            # the effects the assistant's own steps may have
      confirm: [write, destroy]   # effects the user confirms before a run starts
      shell_filters: [jq, head, grep]  # what `runtime agent hook` lets runtime pipe into

The assistant's own steps are those of the ``operation`` tool (one provider
operation) and of capability text it wrote (``execute``, when
``execute_own_text`` offers it): each is refused at the policy station when
its bound call's effect is past ``operations`` (:func:`limit_own_steps`), so
that a refused step is refused, shown and recorded as every other. Each key
of a user file replaces the default's (specs/policy.md).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from runtime.provider import Decision

EFFECTS = ("read", "write", "destroy")


@dataclass
class AgentPolicy:
    # each (value, the file it came from)
    capabilities: tuple[list[str], str] = (["*"], "default")
    execute_own_text: tuple[bool, str] = (False, "default")
    operations: tuple[str, str] = ("read", "default")
    confirm: tuple[list[str], str] = (["write", "destroy"], "default")
    # the read-only filters `runtime agent hook` lets a runtime command pipe into
    shell_filters: tuple[list[str], str] = ([], "default")

    def offers(self, name: str) -> bool:
        """Whether the catalog capability ``name`` is offered as a tool: a glob of
        ``capabilities`` matches it (``*`` matches across ``/`` too)."""
        return any(fnmatch.fnmatchcase(name, glob) for glob in self.capabilities[0])

    @property
    def own_effects(self) -> tuple[str, ...]:
        """The effects the assistant's own steps may have: up to ``operations``."""
        return EFFECTS[: EFFECTS.index(self.operations[0]) + 1]

    def confirms(self, effect: str) -> bool:
        """Whether a step with ``effect`` waits for the user's confirmation."""
        return effect in self.confirm[0]

    def to_json(self) -> dict[str, Any]:
        return {
            key: {"value": value, "source": source}
            for key, (value, source) in (
                ("capabilities", self.capabilities),
                ("execute_own_text", self.execute_own_text),
                ("operations", self.operations),
                ("confirm", self.confirm),
                ("shell_filters", self.shell_filters),
            )
        }


class _Step(Protocol):
    """A planned step as limiting reads it (runtime.plan.build's PlannedStep)."""

    decision: Decision
    effect: str


def limit_own_steps(steps: Iterable[_Step], agents: AgentPolicy) -> None:
    """Refuse each allowed step of the assistant's own whose effect is past what
    ``operations`` offers, with that rule (the step's own decision stands otherwise)."""
    level, source = agents.operations
    offered = agents.own_effects
    for planned in steps:
        if not planned.decision.allowed or planned.effect in offered:
            continue
        planned.decision = Decision(
            False,
            f"agents.operations: {level} ({source})",
            f"its effect is {planned.effect}: an assistant's own steps may only "
            + " or ".join(offered),
            f"a user policy's agents section can offer more (operations: {planned.effect}); "
            "or run it yourself, or through a catalog capability that does it",
        )
