"""What a provider says of a call before it runs: an :class:`Inspection`, with a
:class:`Decision` when it refuses the call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from runtime.provider.operations import BindingProblem


class Decision(NamedTuple):
    """A policy decision: allowed or not, and the rule that decided."""

    allowed: bool
    rule: str  # which rule decided, e.g. "allowed_binaries: git (default)"
    reason: str = ""
    hint: str = ""  # what a refused author can do instead

    def to_json(self) -> dict[str, Any]:
        return {"allowed": self.allowed, "rule": self.rule, "reason": self.reason}


@dataclass
class Inspection:
    """What a provider says about a call before it runs (no side effects)."""

    # a refusal beyond the generic rules (e.g. a path outside the roots)
    decision: Decision | None = None
    notes: list[str] = field(default_factory=list)  # e.g. "ORG from context 'work': acme"
    # what a person should be told before the call runs (a setting that is ignored): a
    # warning on stderr, and in the documents' notes and warnings
    warnings: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)  # network hosts the call will contact
    paths: list[tuple[str, str]] = field(default_factory=list)  # (path, access) it will touch
    credential_host: str | None = None
    # args the call cannot take as resolved (an input value that would change a REST
    # route): invalid inputs, refused at plan time with exit 2 at the arg's position
    problems: list[BindingProblem] = field(default_factory=list)
    # Fields of the provider's own, under the names it gives them: ``record`` for the
    # step in the plan and execute documents, ``audit`` for the step's audit record
    # (github: the documented API operation a call is sent to, ``route`` and
    # ``route_operation``). The documents are closed: they carry the fields their schemas
    # name (runtime.plan.build.RECORD_FIELDS, runtime.execute.engine.AUDIT_FIELDS), null
    # where the provider gives none.
    record: dict[str, Any] = field(default_factory=dict)
    audit: dict[str, Any] = field(default_factory=dict)
