"""What a provider says of a call before it runs: an :class:`Inspection`, with a
:class:`Decision` when it refuses the call and a :class:`Preview` of what it would
change."""

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


class PreviewFile(NamedTuple):
    """One file a previewed step would edit: its path as the step names it, the matches
    found in it, the sha256 of its content before and after, and the unified diff
    between them (empty when the edit leaves it as it is)."""

    path: str
    matches: int
    before_sha256: str
    after_sha256: str
    diff: str

    @property
    def changed(self) -> bool:
        return self.before_sha256 != self.after_sha256

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "matches": self.matches,
            "changed": self.changed,
            "before_sha256": self.before_sha256,
            "after_sha256": self.after_sha256,
            "diff": self.diff,
        }


@dataclass(frozen=True)
class Preview:
    """What a step would change, worked out at plan time without writing anything: the
    plan shows its ``summary`` and each file's diff under the step, and the plan
    document carries it. ``problem`` says why it cannot be worked out (a file it needs
    is not there, a count it expects is not met); a dry run then refuses the workflow
    rather than show a change it cannot preview."""

    summary: str = ""
    files: tuple[PreviewFile, ...] = ()
    problem: str | None = None
    hint: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "files": [f.to_json() for f in self.files],
            "problem": self.problem,
            "hint": self.hint,
        }


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
    # what the call would change, for a call whose change can be shown before it runs
    # (a structured file edit: per-file diffs); None for any other
    preview: Preview | None = None
