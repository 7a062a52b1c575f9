"""How a plan and its preflight read as text, in their short and full forms.

``capability plan`` and ``execute --dry-run`` show, by default, a page a person takes
in at a glance: one line per step (what it runs, its effect, the policy's verdict),
a line under a step only where something stands in its way (a refusal, a program not
on PATH), and the preflight as a summary of what is not ready or not known, grouped.
``--verbose`` shows each step's operation, program, policy rule and notes, and the
preflight's full table, which ``capability preflight`` always prints. ``--quiet``
keeps only what stands in the way. A step whose change can be previewed (a structured
file edit) shows it under its line in both forms: its counts and each file's diff.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from runtime.cli.render import out, out_wrapped, terminal_width
from runtime.text import display_width, printable, shorten

if TYPE_CHECKING:
    from runtime.plan.build import PlannedStep
    from runtime.preflight.report import Check, Report
    from runtime.redact import Redactor

# arguments cut here when the terminal's width is not known (a pipe): the full ones are
# in --verbose and the JSON document
UNWRAPPED = 200
UNDER = "      "  # a step's own lines, under its line


class Verbatim(str):
    """A line under a step printed as it is, never wrapped (a line of a diff)."""


def verdict(step: PlannedStep) -> str:
    if step.waiting:
        return "waiting"
    return "allowed" if step.decision.allowed else "REFUSED"


def stands_in_the_way(step: PlannedStep) -> list[str]:
    """What keeps ``step`` from running as planned, one sentence each (none: it would run)."""
    found = []
    if step.waiting:
        found.append(f"waits for input {', '.join(step.waiting)}: not supplied")
    elif not step.decision.allowed:
        reason = f": {step.decision.reason}" if step.decision.reason else ""
        found.append(f"refused by {step.decision.rule}{reason}")
    elif step.program is not None and step.binary_path is None:
        found.append(f"{step.program}: not found on PATH")
    elif step.inspection.preview is not None and step.inspection.preview.problem:
        preview = step.inspection.preview
        hint = f" ({preview.hint})" if preview.hint else ""
        found.append(f"cannot preview: {preview.problem}{hint}")
    return found


def preview_lines(step: PlannedStep, red: Redactor | None) -> list[str]:
    """What the step would change, under its line: the counts, then each file's unified
    diff (a file's line endings left out, a character a terminal acts on escaped)."""
    preview = step.inspection.preview
    if preview is None or preview.problem:
        return []

    def shown(text: str) -> str:
        return printable(red.text(text) if red is not None else text)

    lines: list[str] = [UNDER + shown(preview.summary)] if preview.summary else []
    for found in preview.files:
        for line in found.diff.splitlines():
            lines.append(Verbatim(UNDER + shown(line.rstrip("\r"))))
    return lines


def _cut(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` terminal cells, a cut marked ``...``."""
    if display_width(text) <= cells:
        return text
    text = text[:cells]  # no character is narrower than a cell but a combining one
    while text and display_width(text) > max(0, cells - 3):
        text = text[:-1]
    return text + "..."


def step_lines(
    steps: list[PlannedStep],
    label: Callable[[PlannedStep], str],
    *,
    quiet: bool,
    red: Redactor | None = None,
) -> list[str]:
    """One line per step, its effect and verdict in a column at the right (within the
    terminal's width: a long command is cut, ``--verbose`` has it whole), and under a
    step what stands in its way, or what it would change (its preview); ``quiet``: only
    the steps something stands in the way of."""
    lefts = [printable(label(s)) for s in steps]
    rights = [f"{s.effect:<7}  {verdict(s)}" for s in steps]
    column = max((display_width(left) for left in lefts), default=0)
    width = terminal_width()
    room = (width if width else UNWRAPPED) - 2 - max((len(r) for r in rights), default=0)
    column = max(10, min(column, room))
    lines = []
    for step, left, right in zip(steps, lefts, rights, strict=True):
        problems = stands_in_the_way(step)
        if quiet and not problems:
            continue
        left = _cut(left, column)
        lines.append(f"{left}{' ' * (column - display_width(left))}  {right}")
        lines += [f"{UNDER}{p}" for p in problems]
        if not quiet and not problems:
            lines += preview_lines(step, red)
    return lines


def print_step_lines(lines: list[str]) -> None:
    for line in lines:
        if isinstance(line, Verbatim):
            out(line)
        elif line.startswith(UNDER):
            out_wrapped(line.removeprefix(UNDER), UNDER, hanging=UNDER + "  ")
        else:
            out(line)


def step_details(s: PlannedStep, red: Redactor) -> None:
    """What ``--verbose`` shows under a step: its operation or binary, the program it
    starts, the policy's decision with its rule, the provider's notes."""
    if s.binary is not None:
        out(f"      binary: {s.binary_path or '(not found on PATH)'}")
    else:
        out(
            f"      operation: {s.operation.name if s.operation else '?'}  transport: {s.transport}  effect: {s.effect}"
        )
        if s.program is not None:
            out(f"      program: {s.binary_path or f'{s.program} (not found on PATH)'}")
    verdict = "allowed" if s.decision.allowed else "REFUSED"
    reason = f": {s.decision.reason}" if s.decision.reason else ""
    out(f"      policy: {verdict} [{s.decision.rule}]{reason}")
    for note in s.inspection.notes:
        out(f"      note: {red.text(note)}")
    if s.inspection.preview is not None and s.inspection.preview.problem:
        print_step_lines([f"{UNDER}{p}" for p in stands_in_the_way(s)])
    print_step_lines(preview_lines(s, red))


def fits(text: str) -> str:
    """A line that is not worth wrapping (an input's value), cut to the terminal's width."""
    width = terminal_width()
    return _cut(printable(text), width) if width else shorten(printable(text), UNWRAPPED)


def preflight_summary(report: Report, heading: str, *, quiet: bool) -> None:
    """The preflight in a few lines: how many requirements and how many are ready, then
    the ones that are not, grouped (not ready, each with its fix; optional and not
    ready; not known offline; advisory: the table has their reasons), its warnings and
    cost hints. ``quiet``: only
    what is not ready, and the warnings."""
    from runtime.preflight.report import FALSE, UNKNOWN

    blocking = report.blocking()
    groups: list[tuple[str, list[Check]]] = [
        ("not ready", blocking),
        (
            "optional, not ready",
            [c for c in report.checks if c.requirement.optional and c.readiness == FALSE],
        ),
        (
            "unknown",
            [
                c
                for c in report.checks
                if c.readiness == UNKNOWN and not c.advisory and c not in blocking
            ],
        ),
        ("advisory, unknown", [c for c in report.checks if c.readiness == UNKNOWN and c.advisory]),
    ]
    if quiet:
        groups = groups[:1]
        if not blocking and not report.warnings:
            return
    total = len(report.checks)
    ready = sum(1 for c in report.checks if c.readiness == "True")
    count = f"{total} requirement{'s' if total != 1 else ''}"
    state = "all ready" if ready == total else f"{ready} ready"
    out_wrapped(f"{heading} {count}, {state}")
    for name, checks in groups:
        if not checks:
            continue
        out_wrapped(f"{name}: {', '.join(c.requirement.id for c in checks)}", "  ")
        if name not in ("not ready", "optional, not ready"):
            continue  # not known offline: --verbose says why, preflight --live may know
        for c in checks:
            which = "" if len(checks) == 1 else f" {c.requirement.id}"
            if c.fix:
                out_wrapped(f"fix{which}: {c.fix}", "    ", hanging="      ")
    for w in report.warnings:
        out_wrapped(f"warning: {w}", "  ")
    if report.cost_hints and not quiet:
        hints = ", ".join(f"{k}={v}" for k, v in report.cost_hints.items())
        out_wrapped(f"cost hints: {hints}", "  ")
