"""Preflight's checks of paths: a path a step reads, lists, writes or deletes
exists or can be made (by an earlier step, perhaps), and a declared path
allows the access it declares.
"""

from __future__ import annotations

import os
from pathlib import Path

from runtime.document.requirements import Requirement
from runtime.preflight.report import FALSE, TRUE, UNKNOWN, Check, Context


def _created_by_earlier(
    ctx: Context, path: str, step: int | None, kinds: tuple[str, ...]
) -> int | None:
    for s in ctx.plan.steps:
        if step is not None and s.index >= step:
            break
        if s.operation is None or s.operation.name not in kinds:
            continue
        for p, _ in s.inspection.paths:
            if p == path:
                return s.index
    return None


def _binary_before(ctx: Context, step: int | None) -> bool:
    return any(s.binary is not None and (step is None or s.index < step) for s in ctx.plan.steps)


def check_path(req: Requirement, ctx: Context) -> Check:
    path = req.target["path"]
    if req.typed:
        return _declared_path(req, ctx)
    from runtime.document.grammar import REFERENCE

    declared = ctx.plan.capability.inputs
    waiting = [
        name
        for name in dict.fromkeys(m.group(1) for m in REFERENCE.finditer(path))
        if name in declared and name not in ctx.inputs
    ]
    if waiting:  # a preflight without that input: the path is not known yet
        names = ", ".join(waiting)
        return Check(req, UNKNOWN, UNKNOWN, f"{path} depends on input {names}, not supplied")
    op = req.target.get("operation")
    step = req.step
    p = Path(path)
    if op in ("read", "list", "delete"):
        if p.exists():
            need = os.R_OK if op != "delete" else os.W_OK
            target = p if op != "delete" else p.parent
            if os.access(target, need):
                return Check(req, TRUE, TRUE, f"{path} exists")
            return Check(
                req,
                TRUE,
                FALSE,
                f"{path} exists but is not {'readable' if op != 'delete' else 'removable'}",
            )
        made = _created_by_earlier(ctx, path, step, ("write", "append", "mkdir"))
        if made is not None:
            return Check(req, TRUE, TRUE, f"{path} is created by step {made}")
        if _binary_before(ctx, step):
            return Check(
                req,
                TRUE,
                UNKNOWN,
                f"{path} does not exist yet; an earlier binary step may create it",
            )
        if op == "delete":
            # nothing this machine lacks: deleting what is not there is the step's own
            # failure ("no such file", exit 1), as the same call typed is
            return Check(
                req,
                TRUE,
                UNKNOWN,
                f"{path} does not exist now: the step fails unless something creates it",
            )
        return Check(req, TRUE, FALSE, f"{path} does not exist", "create it first, or fix the path")
    parent = str(p.parent)
    if op == "mkdir" and p.is_dir():
        return Check(req, TRUE, TRUE, f"{path} already exists")
    if p.exists() and op in ("write", "append") and not os.access(p, os.W_OK):
        return Check(req, TRUE, FALSE, f"{path} is not writable")
    folder = ctx.folders.get(parent)
    if folder is None:
        is_dir = Path(parent).is_dir()
        folder = ctx.folders[parent] = (is_dir, is_dir and os.access(parent, os.W_OK | os.X_OK))
    if folder[0]:
        if folder[1]:
            return Check(req, TRUE, TRUE, f"{parent} is writable")
        return Check(req, TRUE, FALSE, f"{parent} is not writable")
    made = _created_by_earlier(ctx, parent, step, ("mkdir",))
    if made is not None:
        return Check(req, TRUE, TRUE, f"its folder {parent} is created by step {made}")
    if _binary_before(ctx, step):
        return Check(
            req, TRUE, UNKNOWN, f"{parent} does not exist yet; an earlier binary step may create it"
        )
    return Check(
        req,
        TRUE,
        FALSE,
        f"the folder {parent} does not exist",
        f"add a `files mkdir {parent}` step first",
    )


def _declared_path(req: Requirement, ctx: Context) -> Check:
    raw = req.target["path"]
    p = Path(os.path.expanduser(raw))
    p = p if p.is_absolute() else ctx.ws.cwd / p
    if not p.exists():
        return Check(req, TRUE, FALSE, f"{raw} does not exist", "create it, or fix the path")
    flags = {"read": os.R_OK, "write": os.W_OK, "execute": os.X_OK}
    missing = [a for a in req.target.get("access", []) if not os.access(p, flags.get(a, 0))]
    if missing:
        return Check(req, TRUE, FALSE, f"{raw}: no {', '.join(missing)} permission")
    return Check(req, TRUE, TRUE, f"{raw}: {', '.join(req.target.get('access', []))} allowed")
