"""policy show / check, audit tail / show."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import typer

from runtime.cli.completion import capability_names
from runtime.cli.render import emit_json, err, out, plural
from runtime.cli.session import ensure_home, json_mode, workspace
from runtime.errors import ExitCode

if TYPE_CHECKING:
    from pathlib import Path

    from runtime.execute.audit import Skipped
    from runtime.plan.build import PlannedStep
    from runtime.redact import Redactor

policy_app = typer.Typer(
    rich_markup_mode=None,
    help="Show the effective policy and check capabilities against it.",
    no_args_is_help=True,
)
# the most records `audit tail -n` shows: more than the default rotation keeps (60 MiB of
# records of a few hundred bytes), and a number a deque can hold
MAX_LINES = 1_000_000

audit_app = typer.Typer(
    rich_markup_mode=None, help="Read the audit log in Runtime Home.", no_args_is_help=True
)


@policy_app.command("show")
def policy_show_cmd() -> None:
    """Print the effective policy and where each value came from."""
    ws = workspace()
    ensure_home(ws)
    doc = ws.policy.to_json()
    if json_mode():
        emit_json({"ok": True, "policy": doc})
        return
    out("sources: " + " <- ".join(doc["sources"]))

    def grouped(items: list[dict[str, Any]], key: str) -> None:
        by: dict[str, list[str]] = {}
        for item in items:
            by.setdefault(item["source"], []).append(item[key])
        for source, names in by.items():
            out(f"    {', '.join(names)}  [{source}]")

    out("allowed_binaries:")
    grouped(doc["allowed_binaries"], "name")
    conflicts = sorted(
        {b["name"] for b in doc["allowed_binaries"]} & {b["name"] for b in doc["denied_binaries"]}
    )
    if conflicts:
        out(f"    (also denied, so never run: {', '.join(conflicts)})")
    only = doc["only_binaries"]
    if only["value"] is not None:
        out(
            f"only_binaries (nothing else runs): {', '.join(only['value']) or '(none)'}  "
            f"[{only['source']}]"
        )
    out("denied_binaries:")
    grouped(doc["denied_binaries"], "name")
    out("denied_arguments:")
    for item in doc["denied_arguments"]:
        out(f"    {item['binary']}: {' '.join(item['run'])}  [{item['source']}]")
    out("denied_operations:")
    for item in doc["denied_operations"]:
        out(f"    {item['operation']}  [{item['source']}]")
    out("allowed_destructive (a destroy effect runs only when listed here):")
    for item in doc["allowed_destructive"]:
        out(f"    {item['operation']}  [{item['source']}]")
    if not doc["allowed_destructive"]:
        out("    (none: every destructive operation is refused)")
    for key in ("read_roots", "write_roots", "timeout_seconds"):
        out(f"{key}: {doc[key]['value']}  [{doc[key]['source']}]")
    out("binary_environment:")
    grouped(doc["binary_environment"], "name")
    out("binary_credentials:")
    for item in doc["binary_credentials"]:
        out(f"    {item['binary']} -> {item['credential']}  [{item['source']}]")
    out("allowed_subcommands:")
    for binary in sorted({i["binary"] for i in doc["allowed_subcommands"]}):
        items = [i for i in doc["allowed_subcommands"] if i["binary"] == binary]
        out(f"  {binary}:")
        grouped(items, "subcommand")
    out("literal_options (an input never fills their value):")
    for binary in sorted({i["binary"] for i in doc["literal_options"]}):
        items = [i for i in doc["literal_options"] if i["binary"] == binary]
        out(f"  {binary}:")
        grouped(items, "option")
    out("system_paths (what a confined binary step may read besides the roots):")
    grouped(doc["system_paths"], "path")
    for key, what, does in (
        ("admitted_helpers", "path", "execute"),
        ("binary_hosts", "host", "reach"),
    ):
        out(f"{key} (what a confined step may {does} besides its program's profile):")
        for binary in sorted({i["binary"] for i in doc[key]}):
            out(f"  {binary}:")
            grouped([i for i in doc[key] if i["binary"] == binary], what)
        if not doc[key]:
            out("    (none)")
    for key in ("git_hooks", "allow_unconfined", "require_confinement"):
        out(f"{key}: {str(doc[key]['value']).lower()}  [{doc[key]['source']}]")
    out(
        "agents (what an assistant is offered through `runtime mcp serve`, and what `runtime agent hook` lets a runtime command pipe into):"
    )
    for key, item in doc["agents"].items():
        value = item["value"]
        shown = ", ".join(value) or "(none)" if isinstance(value, list) else str(value).lower()
        out(f"    {key}: {shown}  [{item['source']}]")
    out("file_edits (the bounds on one structured edit; a user policy may only lower them):")
    by: dict[str, list[str]] = {}
    for key, bound in doc["file_edits"].items():
        by.setdefault(bound["source"], []).append(f"{key} {bound['value']}")
    for source, bounds in by.items():
        out(f"    {', '.join(bounds)}  [{source}]")


@policy_app.command("import")
def policy_import_cmd(
    file: str = typer.Argument(
        ..., help="An Engineering Runtime policy file (schema_version: 3).", metavar="FILE"
    ),
) -> None:
    """Convert an Engineering Runtime policy file and print the runtime policy it maps to.

    Each of its keys becomes runtime's as `runtime policy spec` says (Engineering Runtime
    policy files): allowed_binaries, command_policy (denied_binaries, rules, admitted_helpers),
    file_policy (read_roots, write_roots, max_edit_*) and providers.NAME.denied. A key that
    cannot be honoured is an error at its FILE:LINE:COL, naming it (exit 2); what the
    safety floor overrides is a warning. The ER file is accepted as it is wherever a
    policy is (RUNTIME_POLICY_FILE, policy.yaml in Runtime Home); the output, saved as
    policy.yaml, is the same policy in runtime's own keys.
    """
    from pathlib import Path

    from runtime.cli.session import _warn
    from runtime.plan.er_policy import runtime_text
    from runtime.plan.policy_file import import_er_file

    ws = workspace()
    ensure_home(ws, needed=False)
    path = Path(file).expanduser()
    imported = import_er_file(path if path.is_absolute() else ws.cwd / path)
    for problem in imported.warnings:
        _warn(problem)
    text = runtime_text(imported, file)
    if json_mode():
        emit_json(
            {
                "ok": True,
                "source": file,
                "policy": imported.data,
                "origins": {k: list(v) for k, v in imported.origins.items()},
                "warnings": [w.to_json() for w in imported.warnings],
                "text": text,
            }
        )
        return
    out(text.rstrip("\n"))


@policy_app.command("spec")
def policy_spec_cmd() -> None:
    """Print the policy file's reference: where it is, how it combines with the default,
    every key (the copy in Runtime Home)."""
    from runtime.cli.commands import print_spec

    print_spec("policy")


@policy_app.command("check")
def policy_check_cmd(
    name: str = typer.Argument(
        ..., help="Capability path or name.", autocompletion=capability_names
    ),
    inputs: list[str] = typer.Option(
        None, "--input", "-i", help="An input as key=value (repeatable)."
    ),
) -> None:
    """Show each step's policy decision without running anything."""
    from runtime.cli.documents import plan_exit
    from runtime.pipeline import Mode, capability_run, policy, walk

    ws = workspace()
    ensure_home(ws)
    # a missing required input does not stop the check: the steps that do not name it are
    # decided, the ones that do wait for it (exit 2, as plan without it)
    run = walk(capability_run(ws, name, Mode.PREFLIGHT, input_pairs=inputs or []), until=policy)
    plan, redactor, target = run.plan, run.redactor, run.target
    assert plan is not None and target is not None
    decisions = [_decision(s, redactor) for s in plan.steps]
    code = plan_exit(plan)
    waiting = list(dict.fromkeys(n for s in plan.waiting for n in s.waiting))
    if json_mode():
        emit_json(
            {
                "ok": code == 0,
                "exit_code": code,
                "capability": target.display,
                "decisions": decisions,
            }
        )
    else:
        for d in decisions:
            if d["waiting"]:
                verdict = f"UNDECIDED: {d['reason']}"
            else:
                reason = f" ({d['reason']})" if d["reason"] else ""
                verdict = f"{'allowed' if d['allowed'] else 'REFUSED'} by {d['rule']}{reason}"
            out(f"[{d['index']}] {d['target']}: {verdict}")
        if code == int(ExitCode.INVALID):
            steps = plural(len(plan.waiting), "step")
            several = len(waiting) > 1
            err(
                f"error: missing required input{'s' if several else ''}: {', '.join(waiting)}; "
                f"{steps} cannot be decided without {'them' if several else 'it'}"
            )
            err("  hint: " + " ".join(f"--input {n}=..." for n in waiting))
    raise typer.Exit(code)


def _decision(step: PlannedStep, redactor: Redactor) -> dict[str, Any]:
    """A step's decision as `policy check` reports it; undecided (``allowed`` null) when
    it names a required input that was not supplied."""
    found = {"index": step.index, "target": step.label, "args": redactor.data(step.args)}
    if step.waiting:
        names = ", ".join(step.waiting)
        reason = f"depends on input {names}, not supplied"
        return {
            **found,
            "allowed": None,
            "rule": None,
            "reason": reason,
            "waiting": list(step.waiting),
        }
    return {**found, **step.decision.to_json(), "waiting": []}


@audit_app.command("tail")
def audit_tail_cmd(
    n: int = typer.Option(
        20, "-n", "--lines", min=1, max=MAX_LINES, help="How many records to show."
    ),
) -> None:
    """Show the last N audit records (across the rotated files, oldest first)."""
    from collections import deque

    from runtime.execute.audit import read_records, run_states

    ws = workspace()
    ensure_home(ws)
    last: deque[dict[str, Any]] = deque(maxlen=n)
    skipped: list[Skipped] = []

    def every() -> Iterator[dict[str, Any]]:
        # one pass over the log (up to audit_keep + 1 files), keeping only the last N
        for record in _read(read_records(ws.home.audit_log, skipped)):
            last.append(record)
            yield record

    states = run_states(every())
    shown = {r.get("run_id") for r in last}
    _render_records(
        list(last),
        ws.home.audit_log,
        {k: v for k, v in states.items() if k in shown},
        skipped,
    )


@audit_app.command("show")
def audit_show_cmd(
    run_id: str = typer.Argument(..., help="A run id (from execute's output)."),
) -> None:
    """Show every audit record of one run (across the rotated files)."""
    from runtime.errors import NotFound
    from runtime.execute.audit import read_records, run_states

    ws = workspace()
    ensure_home(ws)
    skipped: list[Skipped] = []
    records = [
        r for r in _read(read_records(ws.home.audit_log, skipped)) if r.get("run_id") == run_id
    ]
    if not records:
        _note_skipped(skipped)  # perhaps the run's records were on those lines
        raise NotFound(
            f"no audit records for run '{run_id}'", hint="`runtime audit tail` lists recent runs"
        )
    _render_records(records, ws.home.audit_log, run_states(records), skipped)


def _read(records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``records``, a log that cannot be read said as the unusable Home file it is."""
    from runtime.errors import UsageError
    from runtime.execute.audit import AuditError

    try:
        yield from records
    except AuditError as exc:
        raise UsageError(str(exc), hint=exc.hint) from None


def _note_skipped(skipped: list[Skipped]) -> None:
    """Say on stderr which files of the log have lines that hold no record: the log was
    damaged (a line torn by a killed run, a hand edit), and what it showed is not all."""
    if json_mode():
        return  # the document has them
    for s in skipped:
        lines = "1 line" if s.count == 1 else f"{s.count} lines"
        hold = "holds" if s.count == 1 else "hold"
        err(
            f"note: skipped {lines} of {s.path} that {hold} no audit record "
            f"(line {s.first_line}: {s.why})"
        )


def _shown(value: object) -> str:
    """A record's field as text: a string as it is, anything else (in a damaged or
    hand-edited log) as its JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


# a step's arguments in a record's line are cut here (the JSON output has them whole)
SHOWN_ARGS = 200


def _record_line(r: dict[str, Any]) -> str:
    """A record on one line: when, which run, what happened (the capability, the step, its
    arguments, redacted when they were recorded), and how it ended. Any field may be of
    another type in a damaged or hand-edited log: it shows as its JSON."""
    from runtime.cli.reporters import short_args
    from runtime.text import printable

    parts = [_shown(r.get("time", "")), _shown(r.get("run_id", "")), _shown(r.get("event", "?"))]
    if r.get("capability") is not None:
        parts.append(_shown(r["capability"]))
    if r.get("event") == "run.start" and isinstance(r.get("steps"), int):
        parts.append(f"{r['steps']} step{'s' if r['steps'] != 1 else ''}")
    inputs = r.get("inputs")
    if isinstance(inputs, dict) and inputs:
        parts.append("inputs " + ", ".join(f"{k}={_shown(v)!r}" for k, v in inputs.items()))
    elif inputs:
        parts.append(f"inputs {_shown(inputs)}")
    if r.get("origin") not in (None, "cli"):  # an assistant's call: through which client
        client = r.get("client")
        who = f"{_shown(r['origin'])}"
        if isinstance(client, dict):
            who += f" {_shown(client.get('name', '?'))} {_shown(client.get('version', '?'))}"
        parts.append(f"by {who}")
    if "step" in r:
        parts.append(f"step {_shown(r['step'])}")
    if "target" in r:
        what = _shown(r["target"])
        args = r.get("args")
        if isinstance(args, list) and all(isinstance(a, str) for a in args):
            words = r.get("operation")
            skip = len(words.split()) if isinstance(words, str) and r.get("provider") else 0
            if args[skip:]:
                what += " " + short_args(args[skip:], SHOWN_ARGS)
        elif args is not None:
            what += " " + _shown(args)
        parts.append(what)
    if "status" in r:
        parts.append(_shown(r["status"]))
    if r.get("event") == "run.end" and isinstance(r.get("steps"), int) and "ok" in r:
        parts.append(f"{_shown(r['ok'])}/{r['steps']} steps ok")
    if r.get("exit_code") is not None:
        parts.append(f"exit {_shown(r['exit_code'])}")
    if r.get("http_status") is not None:
        parts.append(f"http {_shown(r['http_status'])}")
    for why in ("error", "reason"):
        if r.get(why):
            parts.append(_shown(r[why]))
    # a field's newline (a refusal quoting a file) is escaped: one line per record
    return "  ".join(printable(p) for p in parts)


def _render_records(
    records: list[dict[str, Any]], path: Path, states: dict[str, str], skipped: list[Skipped]
) -> None:
    """The records, then a line for each run that never recorded its end."""
    if json_mode():
        emit_json(
            {
                "ok": True,
                "audit_log": str(path),
                "records": records,
                "unfinished_runs": [{"run_id": k, "state": v} for k, v in states.items()],
                "skipped_lines": [
                    {
                        "file": str(s.path),
                        "count": s.count,
                        "first_line": s.first_line,
                        "why": s.why,
                    }
                    for s in skipped
                ],
            }
        )
        return
    _note_skipped(skipped)
    if not records:
        out(f"no audit records in {path}")
        return
    for r in records:
        out(_record_line(r))
    for run_id, state in states.items():
        why = (
            "its process is still running"
            if state == "running"
            else "it never recorded its end: the process was killed (its last step may be cut short)"
        )
        out(f"run {run_id}: {state}: {why}")
