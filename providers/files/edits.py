"""The structured edits' entry points: validation, the plan's preview, the step.

Each edit operation names its format's editor (``handler`` in its declaration:
``providers.files.yaml_edit:yaml_set``); the editor reads the call's options and edits one
file's text (:mod:`providers.files.yaml_edit`, :mod:`providers.files.hcl_edit`,
:mod:`providers.files.codeowners`); the batch around it, its checks and its writes are
:mod:`providers.files.batch`. A format's library is imported when an edit of that
format is checked or run, never at start-up.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from providers.files.atomic import TempNames, in_run
from providers.files.batch import (
    ArgumentProblem,
    Batch,
    Editor,
    Memory,
    Refused,
    Selection,
    work_out,
    write,
)
from providers.files.confine import (
    Confined,
    UnusablePath,
    confine,
    policy_key,
    system_limits,
    unusable,
)
from runtime.provider import (
    BoundCall,
    Decision,
    Inspection,
    Operation,
    PolicyRefusal,
    Preview,
    RunContext,
    StepEnvironment,
    StepError,
    StepOutcome,
)
from runtime.provider.operations import Access, BindingProblem


def _format(operation: Operation) -> Any:
    """The module of the operation's format, whose function its handler names makes its
    editor (imported on first use)."""
    handler = operation.handler
    if not isinstance(handler, str):
        raise StepError(f"the files provider has no edit '{operation.name}'")
    return importlib.import_module(handler.partition(":")[0])


def _options(call: BoundCall) -> dict[str, str]:
    return dict(call.options)


def _index(call: BoundCall, key: str) -> int:
    if call.binding is None:
        return -1
    return next((i for k, i in call.binding.options if k == key), -1)


def _literal(call: BoundCall, key: str) -> bool:
    """Whether the option's value is known (no reference waits for an input)."""
    return not any(p.missing for p in call.option_pieces(key))


def _where_problems(operation: Operation, call: BoundCall) -> list[BindingProblem]:
    """What is wrong with where the edit looks, whatever the files hold."""
    options = _options(call)
    problems = []
    if "filename" not in options and "include" not in options:
        problems.append(
            BindingProblem(
                -1,
                f"'files {operation.name}' needs --filename NAME or --include GLOB: the files "
                "it edits under --dir",
                f"e.g. {operation.example}",
                code="missing-option",
            )
        )
    name = options.get("filename")
    if name is not None and _literal(call, "filename") and ("/" in name or name in ("", ".", "..")):
        problems.append(
            BindingProblem(
                _index(call, "filename"),
                f"--filename {name!r} is not a file's name",
                "give the name alone (build.yaml) and the folder with --dir",
                code="bad-value",
            )
        )
    return problems


def _argument_problems(operation: Operation, call: BoundCall) -> list[BindingProblem]:
    known = {k: v for k, v in call.options if _literal(call, k)}
    found = _format(operation).argument_problems(operation.name, known)
    return [BindingProblem(_index(call, p.key), p.message, p.hint, code="bad-value") for p in found]


def check(operation: Operation, call: BoundCall) -> list[BindingProblem]:
    """Validation: where the edit looks, and each literal argument its format reads (a
    path of ``yaml set``, the HCL expression of ``set-attribute``...), at FILE:LINE:COL."""
    problems = _where_problems(operation, call)
    folder = call.option("dir")
    if folder is not None and _literal(call, "dir"):
        found = unusable(folder, system_limits((Path("."),)))
        if found is not None:
            problems.append(
                BindingProblem(
                    _index(call, "dir"),
                    f"files {operation.name} cannot take --dir {folder!r}: it {found.what}",
                    found.hint,
                    code=found.code,
                )
            )
    return problems + _argument_problems(operation, call)


def _selection(operation: Operation, call: BoundCall, run: RunContext) -> Selection:
    """Where the call looks, its folder proven inside the read and the write roots."""
    folder = call.option("dir")
    if folder is None:
        raise StepError(f"'files {operation.name}' needs --dir FOLDER")
    confined = _confine(folder, run, "write")
    _confine(folder, run, "read")  # it reads them too
    expected = call.option("expected_per_file")
    return Selection(
        confined,
        call.option("filename"),
        call.option("include"),
        int(expected) if expected is not None else None,
    )


def _confine(folder: str, run: RunContext, access: Access) -> Confined:
    roots = run.roots(access)
    try:
        return confine(folder, roots.paths, run.cwd, access)
    except UnusablePath:
        raise
    except PolicyRefusal as refusal:
        rule = f"{policy_key(access)} ({roots.source})"
        raise Refused(rule, refusal.message, refusal.hint) from None


def _editor(operation: Operation, call: BoundCall) -> Editor:
    make: Callable[[Mapping[str, str]], Editor] = operation.implementation
    return make(_options(call))


def inspect(operation: Operation, call: BoundCall, run: RunContext) -> Inspection:
    """The plan's look: where the edit looks, and what it would change (its preview, or
    the refusal or problem that keeps it from running). Writes nothing."""
    if any(p.missing for pieces in call.pieces for p in pieces):
        return Inspection()  # an input not given: the plan waits for it
    problems = _where_problems(operation, call)
    if problems:
        return Inspection(problems=problems)
    try:
        selection = _selection(operation, call, run)
        editor = _editor(operation, call)
    except UnusablePath as exc:
        problem = BindingProblem(
            _index(call, "dir"),
            f"files {operation.name} cannot take --dir {call.option('dir')!r}: it {exc.what}",
            exc.hint,
            code=exc.code,
        )
        return Inspection(problems=[problem])
    except ArgumentProblem as exc:
        return Inspection(
            problems=[BindingProblem(_index(call, exc.key), exc.message, exc.hint, "bad-value")]
        )
    except Refused as refusal:
        return Inspection(
            decision=Decision(False, refusal.rule, refusal.message, refusal.hint or "")
        )
    paths = [(str(selection.folder.resolved), "write")]
    try:
        batch = _work_out(operation, call, run, selection, editor, planning=True)
    except Refused as refusal:
        said = _of_plan(refusal.message)
        decision = Decision(False, refusal.rule, said, refusal.hint or "")
        return Inspection(paths=paths, decision=decision)
    except StepError as exc:
        return Inspection(
            paths=paths, preview=Preview(problem=_of_plan(exc.message), hint=exc.hint)
        )
    return Inspection(paths=paths, preview=batch.preview())


def _of_plan(message: str) -> str:
    """A batch's message as the plan says it, where nothing is ever written."""
    return message.removesuffix("; nothing was written")


def _work_out(
    operation: Operation,
    call: BoundCall,
    run: RunContext,
    selection: Selection,
    editor: Editor,
    *,
    planning: bool,
    deadline: float | None = None,
) -> Batch:
    limits = run.edit_limits()
    return work_out(
        selection,
        editor,
        call_key=(operation.name, *call.args),
        limits=limits,
        protected=run.protected_paths(),
        memory=run.state(Memory),
        deadline=deadline,
        planning=planning,
    )


def execute(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
    """The step: the batch worked out and checked again on the files as they are now,
    then written, each file atomically; nothing is written when a check fails."""
    run = env.run
    try:
        selection = _selection(operation, call, run)
        editor = _editor(operation, call)
    except ArgumentProblem as exc:
        raise StepError(exc.message, hint=exc.hint) from None
    batch = _work_out(
        operation, call, run, selection, editor, planning=False, deadline=env.deadline
    )
    memory = run.state(Memory)
    if memory.names is None:
        memory.names = TempNames(lambda: run.home_key("temporaries"))
    with in_run(memory.names, memory.swept):
        written = write(batch)
    return _outcome(operation, batch, len(written))


def _outcome(operation: Operation, batch: Batch, written: int) -> StepOutcome:
    selection = batch.selection
    lines = [
        f"edited {written} of {len(batch.files)} files {selection.describe()} under "
        f"{selection.folder.given} ({batch.matches} match{'' if batch.matches == 1 else 'es'})"
    ]
    for f in batch.matched:
        state = "" if f.changed else ", already as asked"
        lines.append(
            f"  {_shown(f.shown)}: {f.matches} match{'' if f.matches == 1 else 'es'}{state}"
        )
    for link in batch.skipped:
        lines.append(f"  {_shown(link)}: a symbolic link, not followed")
    return StepOutcome(
        ok=True,
        output="\n".join(lines),
        data={
            "operation": operation.name,
            "dir": selection.folder.given,
            "files": [
                {
                    "path": f.shown,
                    "outcome": f.outcome(),
                    "matches": f.matches,
                    "before_sha256": f.before_sha256,
                    "after_sha256": f.after_sha256,
                }
                for f in batch.files
            ],
            "changed": written,
            "matches": batch.matches,
            "skipped_links": list(batch.skipped),
        },
    )


def _shown(path: str) -> str:
    return path if path.isprintable() else repr(path)
