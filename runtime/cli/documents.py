"""The JSON documents of a run, a plan and a failure: what ``--output json`` prints.

Built here once, for both edges that answer with them: the command line
prints them (:mod:`runtime.cli.run_cmds`, :func:`runtime.cli._report_failure`),
and ``runtime mcp serve`` returns the same document as a tool result's
``structuredContent`` (:mod:`runtime.cli.mcp_calls`). The schemas under
``specs/schemas/`` describe each (``execute``, ``plan``, ``error``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.errors import ExitCode

if TYPE_CHECKING:
    from runtime.document.model import Capability
    from runtime.errors import Failure
    from runtime.execute.engine import RunResult
    from runtime.pipeline import Run
    from runtime.plan.build import Plan
    from runtime.preflight.report import Report


def planned(run: Run) -> tuple[Capability, Plan]:
    """The capability and plan of a run the resolve station has planned."""
    assert run.capability is not None and run.plan is not None
    return run.capability, run.plan


def plan_exit(plan: Plan) -> int:
    """The exit code of a plan: what would stand in the way of running it."""
    if plan.refused:
        return int(ExitCode.POLICY_REFUSED)
    if plan.waiting:  # planned without a required input: the run cannot start as asked
        return int(ExitCode.INVALID)
    if plan.missing_binaries:
        return int(ExitCode.MISSING_CAPABILITY)
    return 0


def dry_run_exit(plan: Plan) -> int:
    """The exit code of a plan shown for itself (``capability plan``, ``execute
    --dry-run``): a plan's, and 1 where it would run but a change cannot be previewed (a
    dry run shows what each step would change, or refuses: a change it cannot show is
    one it cannot stand for; the run would fail there, or change something else than
    planned)."""
    code = plan_exit(plan)
    if code == 0 and plan.unpreviewable:
        return int(ExitCode.STEP_FAILED)
    return code


def plan_json(prepared: Run, report: Report | None = None) -> dict[str, Any]:
    cap, plan = planned(prepared)
    extra = {"preflight": report.to_json()} if report is not None else {}
    return {
        **extra,
        "capability": {"path": cap.path, "sha256": cap.sha256},
        # where the policy's relative roots and the steps' relative paths start
        "working_folder": str(prepared.ws.cwd),
        "inputs": prepared.redactor.inputs(prepared.inputs),
        "steps": [s.to_json(prepared.redactor) for s in plan.steps],
        "warnings": [p.to_json() for p in prepared.warnings],
    }


def plan_document(prepared: Run, command: str) -> dict[str, Any]:
    """``capability plan`` (and ``execute --dry-run``): the plan, its decisions and the
    offline preflight."""
    _, plan = planned(prepared)
    code = dry_run_exit(plan)
    return {
        "ok": code == 0,
        "exit_code": code,
        "command": command,
        "dry_run": True,
        **plan_json(prepared, prepared.report),
    }


def applied_note(result: RunResult) -> str | None:
    """What stays done when a step failed after others succeeded."""
    from runtime.cli.render import steps_named

    done = [r.planned.index for r in result.results if r.status == "ok"]
    if result.failed_step is None or not done:
        return None
    return (
        f"{steps_named(done)} {'stays' if len(done) == 1 else 'stay'} applied: "
        "capabilities are not transactional"
    )


def run_document(prepared: Run, result: RunResult) -> dict[str, Any]:
    """A run's end: every step's outcome, the summary, what stays applied."""
    red = prepared.redactor
    cap, _ = planned(prepared)
    failed = result.failed_step
    return {
        "ok": result.exit_code == 0,
        "exit_code": result.exit_code,
        "status": result.status,
        "run_id": result.run_id,
        "capability": {"path": cap.path, "sha256": cap.sha256},
        "inputs": red.inputs(prepared.inputs),
        "steps": [r.to_json(red) for r in result.results],
        "summary": {
            "total": len(result.results),
            "ok": sum(1 for r in result.results if r.status == "ok"),
            "not_run": sum(1 for r in result.results if r.status == "not-run"),
            "failed_step": failed.planned.index if failed else None,
        },
        "note": applied_note(result),
        # what was said before the first step (an optional input left literal)
        "warnings": [p.to_json() for p in prepared.warnings],
    }


def error_document(failure: Failure) -> dict[str, Any]:
    """What failed, before or instead of a run: its code, message, hint and the problems
    at their positions (the caller redacts it)."""
    return {
        "ok": False,
        "exit_code": int(failure.exit_code),
        "status": failure.document_status,
        "error": {
            "code": failure.code,
            "message": failure.message,
            "hint": failure.hint,
            "problems": [p.to_json() for p in failure.problems],
        },
    }
