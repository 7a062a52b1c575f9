"""The preflight station's verdict for a run that is about to execute."""

from __future__ import annotations

from runtime.errors import MissingCapability, MissingCredential
from runtime.preflight.report import Report


def require_ready(report: Report) -> None:
    """A required requirement not ready refuses the run (before execute, after the offline
    preflight): exit 4 when only credentials are missing, else 5 (missing capability)."""
    blocking = report.blocking()
    if not blocking:
        return
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
