"""Built-in commands: version, bootstrap, and the capability group."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from runtime import __version__
from runtime.cli.completion import capability_names
from runtime.cli.render import (
    emit_json,
    err,
    out,
    plural,
    problem_line,
    step_ranges,
    table,
)
from runtime.cli.session import ensure_home, json_mode, workspace
from runtime.errors import ExitCode

if TYPE_CHECKING:
    from runtime.document.model import Capability, Step
    from runtime.pipeline import Run
    from runtime.plan.workspace import Workspace
    from runtime.provider import BoundCall, Operation

capability_app = typer.Typer(
    rich_markup_mode=None,
    help="Validate, inspect, plan and execute capabilities.",
    no_args_is_help=True,
)
version_app = typer.Typer(rich_markup_mode=None)
bootstrap_app = typer.Typer(rich_markup_mode=None)


@version_app.command("version")
def version_cmd() -> None:
    """Print the version."""
    if json_mode():
        emit_json({"ok": True, "version": __version__})
    else:
        out(f"runtime {__version__}")


@bootstrap_app.command("bootstrap")
def bootstrap_cmd() -> None:
    """Make Runtime Home match this version: copy specs, write the manifest, prune old files."""
    ws = workspace()
    report = ensure_home(ws, verify=True)
    assert report is not None  # needed: a Home that cannot be prepared raised
    if json_mode():
        emit_json(
            {
                "ok": True,
                "home": str(report.home),
                "version": report.version,
                "previous_version": report.previous_version,
                "written": report.written,
                "pruned": report.pruned,
                "unchanged": report.unchanged,
                "created": report.created,
            }
        )
        return
    out(f"Runtime Home: {report.home}")
    if report.previous_version != report.version:
        out(f"version: {report.previous_version or '(none)'} -> {report.version}")
    else:
        out(f"version: {report.version}")
    for rel in report.written:
        out(f"  wrote  {rel}")
    for rel in report.pruned:
        out(f"  pruned {rel}")
    for rel in report.created:
        out(f"  made   {rel}/ (empty; yours)")
    out(f"{len(report.written)} written, {len(report.pruned)} pruned, {report.unchanged} unchanged")


# -- capability validate ---------------------------------------------------------


@capability_app.command("validate")
def validate_cmd(
    targets: list[str] = typer.Argument(
        ...,
        help="Capability files, names or folders (recursively).",
        autocompletion=capability_names,
    ),
    format: str = typer.Option(
        "text",
        "--format",
        help="Text problem format: text (with source and hint), plain (FILE:LINE:COL only), github (workflow commands).",
    ),
    only_capabilities: bool = typer.Option(
        False,
        "--only-capabilities",
        help="Skip Markdown files without a runtime block even when named (pre-commit passes every changed .md).",
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Report what the policy would refuse as errors (exit 2), not warnings; the pre-commit hook uses it.",
    ),
) -> None:
    """Check capabilities without running anything or reading the machine.

    Checked: the closed grammar of the runtime block and the frontmatter (keys, types,
    requires, requirements), that each step names an operation one of the registered
    providers declares, with arguments of its form and types, or a binary in
    allowed_binaries, and that each
    ${reference} names a declared input. Then what the policy would refuse at plan time
    (denied binaries, subcommands, options and argument runs, denied operations, destroys
    no allowed_destructive entry lists): a step whose args hold ${inputs} is reported
    only when it is refused whatever the inputs are; the rest is decided by plan and
    execute. Policy refusals are warnings, errors with --strict. PATH, credentials, paths
    and the network are preflight's (`runtime capability preflight`).

    A folder is searched recursively (a whole capability repository: hidden folders are
    not looked in, Markdown without a runtime block is skipped); one that holds no
    capability is an error (exit 2), as a file that does not exist is. Files checked in
    more than one folder get a summary by folder before the total.
    """
    from runtime.cli import validation
    from runtime.errors import UsageError

    if format not in ("text", "plain", "github"):
        raise UsageError(f"--format must be text, plain or github, not '{format}'")
    ws = workspace()
    ensure_home(ws, needed=False)  # reads no machine state: Home need not be writable
    found = validation.Validated()
    for arg in targets:
        named = validation.discover(ws, arg)
        checked = len(found.results)
        for target in named:
            validation.check(ws, target, found, strict=strict, only_capabilities=only_capabilities)
        if len(found.results) == checked and not any(t.explicit for t in named):
            raise validation.nothing_found(arg, named)
    if json_mode():
        validation.render_json(found)
    else:
        validation.render_text(found, format)
    if not found.ok:
        raise typer.Exit(int(ExitCode.INVALID))


# -- capability list / show / dependents ------------------------------------------


def _load_capability(ws: Workspace, path: Path) -> Capability:
    """The capability at ``path``, loaded and parsed (the walk's first station)."""
    from runtime.pipeline import Mode, Run, load, walk

    cap = walk(Run(ws, Mode.INSPECT, name=str(path)), until=load).capability
    assert cap is not None  # load gives one or raises
    return cap


@capability_app.command("list")
def list_cmd() -> None:
    """List capabilities found through the capability sources."""
    from runtime.document.catalog import list_sources

    ws = workspace()
    ensure_home(ws, needed=False)
    listing = list_sources(ws.sources)
    rows: list[dict[str, Any]] = []
    for entry in listing.entries:
        cap = _load_capability(ws, entry.path)
        if cap.document.runtime_block is None:
            continue
        rows.append(
            {
                "name": entry.name,
                "title": cap.title,
                "description": cap.description,
                "path": str(entry.path),
                "source": str(entry.source),
                "shadowed_by": str(entry.shadowed_by) if entry.shadowed_by else None,
            }
        )
    if json_mode():
        emit_json(
            {
                "ok": True,
                "sources": [str(s) for s in ws.sources],
                "missing_sources": [str(p) for p, _, _ in ws.skipped_sources],
                "capabilities": rows,
            }
        )
        return
    for source, why, by in ws.skipped_sources:
        err(f"note: capability source {source} ({by}) {why}; skipped")
    if not rows:
        # Engineering Runtime's words, which its CI greps for on a fresh Home
        out("No capabilities resolved.")
        out("  searched: " + ", ".join(str(s) for s in ws.sources))
        return
    lines = table(
        [
            (
                r["name"] + (" (shadowed)" if r["shadowed_by"] else ""),
                r["title"] or r["description"] or "",
                r["source"],
            )
            for r in rows
        ],
        headers=("NAME", "TITLE", "SOURCE"),
    )
    for line in lines:
        out(line)
    for r in rows:
        if r["shadowed_by"]:
            out(f"note: {r['path']} is shadowed by {r['shadowed_by']}")


@capability_app.command("show")
def show_cmd(
    name: str = typer.Argument(
        ..., help="Capability name or path.", autocompletion=capability_names
    ),
) -> None:
    """Show a capability: inputs, steps and the operation each resolves to, lineage, requires.

    An invalid capability is shown as far as it could be read, with its problems, and
    exits 2 as validate does."""
    from runtime.pipeline import Mode, capability_run, resolve, walk

    ws = workspace()
    ensure_home(ws, needed=False)
    run = walk(capability_run(ws, name, Mode.INSPECT), until=resolve)
    target, cap, problems = run.target, run.capability, run.problems
    assert target is not None and cap is not None
    steps = []
    for step in cap.steps:
        info: dict[str, Any] = {"index": step.index, "args": step.arg_texts, "line": step.line}
        if step.provider is not None:
            info["provider"] = step.provider
            op, call = _bound_call(run, step)
            info["operation"] = op.name if op else None
            info["transport"] = op.transport if op else None
            # the bound call's effect, as plan decides it; None while an input decides it
            effect = op.known_effect(call) if op and call else None
            info["effect"] = effect
            info["effects"] = [effect] if effect else list(op.possible_effects() if op else ())
            info["effect_inputs"] = list(op.effect_inputs(call)) if op and call else []
        else:
            info["binary"] = step.binary
        steps.append(info)
    # what could be read is shown either way, but an invalid capability is not a
    # success: show answers as validate, plan and execute do for the same file
    errors = [p for p in problems if p.is_error]
    code = int(ExitCode.INVALID) if errors else 0
    doc: dict[str, Any] = {
        "ok": not errors,
        "exit_code": code,
        "path": target.display,
        "sha256": cap.sha256,
        "name": target.name or Path(target.display).stem,
        "title": cap.title,
        "description": cap.description,
        "version": cap.version,
        "inputs": [i.to_json() for i in cap.inputs.values()],
        "steps": steps,
        "lineage": [e.to_json() for e in cap.lineage],
        "requires": cap.requires,
        "requirements": _requirements(run),
        "problems": [p.to_json() for p in problems],
    }
    # a secret the environment holds, written into the file, is not shown again
    doc = run.redactor.data(doc)
    if json_mode():
        emit_json(doc)
        raise typer.Exit(code)

    def say(text: str, styled: bool = False) -> None:
        out(run.redactor.text(text), styled=styled)

    say(f"{doc['title'] or doc['name']}  ({target.display})")
    if cap.sha256:  # none when the file could not be read
        say(f"sha256: {cap.sha256}")
    if cap.description:
        say(f"description: {cap.description}")
    say("inputs:" if cap.inputs else "inputs: (none)")
    for i in cap.inputs.values():
        say(f"  {i.name}{' (required)' if i.required else ''}: {i.description or ''}")
    say("steps:")
    for s in steps:
        if "provider" in s:
            effects = s["effect"] or "|".join(s["effects"])
            if s["effect_inputs"]:
                names = ", ".join(f"'{n}'" for n in s["effect_inputs"])
                effects += f": depends on input {names}"
            resolved = (
                f"-> {s['provider']} {s['operation']} [{s['transport']}, {effects}]"
                if s["operation"]
                else "-> (no such operation)"
            )
            say(f"  {s['index']}. {s['provider']} {' '.join(s['args'])}  {resolved}")
        else:
            say(f"  {s['index']}. binary {s['binary']} {' '.join(s['args'])}")
    if cap.lineage:
        say("lineage:")
        for e in cap.lineage:
            say(f"  {e.name}" + (f" ({step_ranges(e.steps)})" if e.steps else ""))
    if cap.requires:
        say("requires:")
        for key, value in cap.requires.items():
            say(f"  {key}: {value}")
    if doc["requirements"]:
        say("requirements (checked by `runtime capability preflight`):")
        for r in doc["requirements"]:
            flag = " (optional)" if r["optional"] else ""
            say(f"  {r['id']}  [{r['type']}, {r['origin']}]{flag}")
    for p in problems:
        say(problem_line(p), styled=True)
        if p.hint:
            say(f"  hint: {p.hint}")
    if errors:
        err(f"error: {target.display} is not a valid capability ({plural(len(errors), 'error')})")
        err(f"  hint: run `runtime capability validate {name}` to see each problem in its source")
        raise typer.Exit(code)


def _bound_call(run: Run, step: Step) -> tuple[Operation | None, BoundCall | None]:
    """The operation a provider step names and its call as bound without inputs (the plan's,
    or validation's binding when the capability does not plan); (None, None) if unbound."""
    from runtime.plan.binding import match_operation, resolve_call
    from runtime.plan.build import pieces

    if run.plan is not None:
        planned = next(s for s in run.plan.steps if s.index == step.index)
        return planned.operation, planned.call
    texts = step.arg_texts
    if step.index in run.resolved:
        op, binding = run.resolved[step.index]
        rest = texts[len(op.words) :]
        return op, resolve_call(binding, rest, [pieces(a, {}) for a in rest])
    provider = run.ws.registry.get(step.provider or "")
    return (match_operation(provider.operations, texts) if provider else None), None


def _requirements(run: Run) -> list[dict[str, Any]]:
    """Declared and inferred requirements, not checked (inputs are not known here); none
    when the capability does not validate (then there is no plan to infer them from)."""
    from runtime.document.requirements import declared
    from runtime.preflight.checks import typed_requirements
    from runtime.preflight.inferred import inferred

    if run.plan is None:
        return []
    cap = run.plan.capability
    items = [*declared(cap).items, *typed_requirements(cap), *inferred(run.plan).items]
    return [r.to_json() for r in items]


@capability_app.command("dependents")
def dependents_cmd(
    name: str = typer.Argument(..., help="Capability name.", autocompletion=capability_names),
) -> None:
    """List capabilities whose Lineage section names NAME."""
    from runtime.document.catalog import list_sources

    ws = workspace()
    ensure_home(ws)
    hits: list[dict[str, Any]] = []
    for entry in list_sources(ws.sources).entries:
        if entry.shadowed_by:
            continue
        cap = _load_capability(ws, entry.path)
        for lin in cap.lineage:
            if lin.name == name:
                hits.append(
                    {
                        "name": entry.name,
                        "path": str(entry.path),
                        "steps": [list(r) for r in lin.steps],
                    }
                )
    if json_mode():
        emit_json({"ok": True, "name": name, "dependents": hits})
        return
    if not hits:
        out(f"no capability names '{name}' in its Lineage")
        return
    for h in hits:
        out(f"{h['name']}  {h['path']}" + (f"  ({step_ranges(h['steps'])})" if h["steps"] else ""))


@capability_app.command("new")
def new_cmd(
    name: str = typer.Argument(..., help="Capability name (kebab-case), or a path ending in .md."),
    provider: str = typer.Option(
        "files", "--provider", help="Starting point: a registered provider's example steps."
    ),
) -> None:
    """Write a commented starting capability that validates as written. Never overwrites."""
    import errno
    import re

    from runtime.document.scaffold import render
    from runtime.errors import UsageError

    ws = workspace()
    ensure_home(ws)
    ws_registry = workspace().registry
    found = ws_registry.get(provider)
    if found is None or not found.scaffold:
        offered = [n for n in ws_registry.names() if ws_registry.providers[n].scaffold]
        raise UsageError(
            f"--provider must be one of {', '.join(offered)}, not '{provider}'",
            hint="each registered provider with example steps can be a starting point",
        )
    if name.endswith(".md"):
        path = Path(name) if Path(name).is_absolute() else ws.cwd / name
        stem = path.stem
    else:
        stem = name
        path = ws.cwd / "capabilities" / f"{name}.md"
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", stem) or len(stem) > 64:
        raise UsageError(
            f"'{stem}' is not a valid capability name",
            hint="use 1 to 64 lowercase letters, digits and single '-'",
        )
    if path.exists():
        raise UsageError(f"{path} already exists; nothing was written", hint="choose another name")
    text = render(stem, found.scaffold, found.scaffold_network)
    created = False
    # the folders it makes on the way, deepest first: taken away again if nothing is written
    made = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x", encoding="utf-8") as fh:  # "x": refuse to overwrite, even in a race
            created = True
            fh.write(text)
    except FileExistsError as exc:
        if exc.filename is not None and Path(exc.filename) != path:  # a file for the folder
            raise UsageError(
                f"cannot create {path}: {exc.filename} is not a folder; nothing was written",
                hint="give a path ending in .md elsewhere, or move that file away",
            ) from None
        raise UsageError(f"{path} already exists; nothing was written") from None
    except OSError as exc:
        if created:  # a half-written file would make the next try say "already exists"
            with contextlib.suppress(OSError):
                path.unlink()
        for folder in made:  # "nothing was written" holds for them too (rmdir: if empty)
            with contextlib.suppress(OSError):
                folder.rmdir()
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        raise UsageError(
            f"cannot write {path}: {exc.strerror or exc}; nothing was written",
            hint="free some space there, then run it again"
            if full
            else "run it in a folder you can write to, or give a path ending in .md there",
        ) from None
    if json_mode():
        emit_json({"ok": True, "path": str(path), "provider": provider})
    else:
        out(f"wrote {path}")
        out(f"next: runtime capability validate {path}")


@capability_app.command("spec")
def spec_cmd(
    provider: str = typer.Argument(
        None, help="Another spec instead: a provider's (files, github), or policy."
    ),
) -> None:
    """Print the authoring reference from Runtime Home (the one for the installed version)."""
    print_spec(provider)


def print_spec(provider: str | None) -> None:
    """Print Home's copy of a spec (``None``: the authoring reference), or the one this
    version ships where Home cannot be refreshed."""
    from runtime.errors import NotFound
    from runtime.home.resources import specs_dir

    ws = workspace()
    # where Home cannot be refreshed (read-only, or none), its copies may be another
    # version's: the ones this version ships are printed instead
    current = ensure_home(ws, needed=False) is not None
    specs = ws.home.specs_dir if current else specs_dir()
    reference = "capability-spec.md"
    if provider is not None:
        # the provider specs this version ships (Home holds their copies): only those
        # names, never a path into Home
        names = sorted(p.stem for p in specs_dir().glob("*.md") if p.name != reference)
        if provider not in names:
            raise NotFound(
                f"no spec named '{provider}'",
                hint=f"specs: {', '.join(names)} (`runtime capability spec NAME`); "
                "`runtime capability spec` prints the authoring reference",
            )
    path = specs / (f"{provider}.md" if provider else reference)
    if current and not path.is_file():
        ensure_home(ws, verify=True)  # a runtime-owned file went missing: repair Home
    text = _home_spec(path)
    if json_mode():
        emit_json({"ok": True, "path": str(path), "text": text})
    else:
        sys.stdout.write(text)


def _home_spec(path: Path) -> str:
    """The text of Home's copy of a spec; a copy that cannot be read (not UTF-8, no
    permission, not a file) is refused, naming it: `runtime bootstrap` restores it."""
    from runtime.errors import UsageError
    from runtime.reading import position, read_file

    hint = "run `runtime bootstrap`: it restores the specs in Runtime Home"
    try:
        raw = read_file(path)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}", hint=hint) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = position(raw, exc.start)
        raise UsageError(f"{path}:{line}:{column}: not UTF-8 text", hint=hint) from None
