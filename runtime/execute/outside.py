"""Paths a confined step's arguments name outside its write roots: said before it runs,
and explained when it fails.

Confined, a program sees the host's files only in the policy's roots and system
folders; everywhere else the sandbox is read-only, and ``/tmp`` is the step's own
(:func:`runtime.execute.sandbox.view`). So ``git init ../elsewhere`` fails with
git's own "Read-only file system", and ``git -C ../scratch log`` with "No such file
or directory" although the folder exists on the host. Both are right, and neither
says why: this module does. Where an argument looks like a path (absolute, or
relative with a ``..``; also the value of ``--option=VALUE``) and that path is not
in a write root, the plan warns before anything runs (not for a read-only system
folder, which a step reads as it is), and a failing step's error names the path,
the roots, and the policy lines that would allow it deliberately.

Only a binary step's arguments are read: they are the program's argv. An operation
run through a program (gh) builds its own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.execute import sandbox
from runtime.problems import Problem

if TYPE_CHECKING:
    from runtime.execute.launch import Launcher
    from runtime.execute.services import RunServices
    from runtime.plan.build import Plan
    from runtime.plan.workspace import Workspace
    from runtime.redact import Redactor

# How many paths a message names; the rest are counted.
_NAMED = 3


@dataclass(frozen=True)
class Outside:
    """An argument naming a path a confined step cannot use as the host's."""

    written: str  # the argument's path, as written
    path: str  # where it is on the host (absolute, symlinks resolved)
    view: str  # what the step finds there: read, tmp or absent (sandbox.view)
    exists: bool  # on the host

    def shown(self, redactor: Redactor) -> str:
        written = redactor.text(self.written)
        if os.path.normpath(self.written) == self.path:
            return f"'{written}'"
        return f"'{written}' ({redactor.text(self.path)})"


def path_arguments(args: Sequence[str]) -> list[str]:
    """The arguments that look like paths: absolute, or relative with a ``..`` part
    (``../x``, ``a/../../b``); of ``--option=VALUE``, the value. A URL is not one."""
    found = []
    for arg in args:
        word = arg
        if arg.startswith("-"):
            if "=" not in arg:
                continue
            word = arg.split("=", 1)[1]
        if not word or "://" in word or "\0" in word:
            continue
        if word.startswith("/") or ".." in word.split("/"):
            found.append(word)
    return found


def outside(base: sandbox.Confinement, args: Sequence[str], cwd: str) -> list[Outside]:
    """What ``args`` name outside the write roots of ``base``, once each, in order."""
    seen: dict[str, Outside] = {}
    for word in path_arguments(args):
        path = os.path.realpath(os.path.join(cwd, word))
        if path in seen:
            continue
        view = sandbox.view(base, path)
        if view != "write":
            seen[path] = Outside(word, path, view, os.path.lexists(path))
    return list(seen.values())


def warnings(
    plan: Plan, services: RunServices, redactor: Redactor, *, probe: bool, notes: bool
) -> list[Problem]:
    """A warning for each allowed binary step whose args name a path it will not find
    or cannot write (absent, or in its private ``/tmp``); with ``notes`` (execute) each
    is a note of its step too, for the JSON document. ``probe=False`` (plan) starts no
    process to learn whether steps are confined."""
    from runtime.execute.launch import for_run

    candidates = [
        s
        for s in plan.steps
        if s.binary is not None and s.decision.allowed and not s.waiting and s.args
    ]
    if not candidates:
        return []
    ws = services.workspace
    launcher: Launcher = services.launcher if probe else for_run(ws, probe=False)
    if not launcher.confined:
        return []  # unconfined, a program writes where it is told: there is nothing to say
    found: list[Problem] = []
    for planned in candidates:
        named = [o for o in outside(launcher.base, planned.args, str(ws.cwd)) if o.view != "read"]
        if not named:
            continue
        message = f"step {planned.index} ({planned.label}): " + _described(
            named, launcher.base, redactor, before=True
        )
        step = planned.step
        found.append(
            Problem(
                plan.capability.path,
                step.line or 1,
                step.column or 1,
                "warning",
                "outside-roots",
                message,
                redactor.text(allowance(named[0], ws)),
            )
        )
        if notes:
            planned.inspection.notes.append(message)
    return found


def explain(
    args: Sequence[str], services: RunServices, stderr: str, redactor: Redactor
) -> tuple[str, str] | None:
    """For a confined step that failed: what its args name outside the write roots, for
    its error (``; the step ran confined: ...``), and how to allow it deliberately (its
    hint). A read-only path it sees (a read root, a system folder) counts only when the
    program says it met a read-only file system."""
    launcher = services.launcher
    named = [
        o
        for o in outside(launcher.base, args, str(services.cwd))
        if o.view != "read" or "Read-only file system" in stderr
    ]
    if not named:
        return None
    note = "; the step ran confined: " + _described(named, launcher.base, redactor, before=False)
    return note, redactor.text(allowance(named[0], services.workspace))


def _described(
    named: list[Outside], base: sandbox.Confinement, redactor: Redactor, *, before: bool
) -> str:
    parts = [_one(o, base, redactor, before=before) for o in named[:_NAMED]]
    more = len(named) - _NAMED
    if more > 0:
        parts.append(f"and {more} more path{'s' if more > 1 else ''} outside them")
    return "; ".join(parts) + f" ({_roots(base, redactor)})"


def _one(o: Outside, base: sandbox.Confinement, redactor: Redactor, *, before: bool) -> str:
    shown = o.shown(redactor)
    if o.view == "tmp":
        tmp = sandbox.private_tmp(base)
        ends = "what it writes there is gone when it ends" if before else "not the host's"
        return (
            f"{shown} is in the step's own private temporary folder ({tmp}), "
            f"empty when the step starts: {ends}"
        )
    if o.view == "read":
        return f"{shown} is outside the write roots, read-only inside the sandbox"
    if o.exists:
        sees = "the confined step will not find it" if before else "it is not there for the step"
        return f"{shown} is outside the roots, so {sees}"
    made = ": the confined step cannot make it" if before else "; it is not on the host either"
    return f"{shown} is outside the write roots, where the sandbox is read-only{made}"


def _roots(base: sandbox.Confinement, redactor: Redactor) -> str:
    def listed(paths: Sequence[str]) -> str:
        return ", ".join(redactor.text(p) for p in paths) or "none"

    writes, reads = list(base.write_paths), list(base.read_paths)
    same = sorted(reads) == sorted(writes)
    return f"write roots: {listed(writes)}; read roots: {'the same' if same else listed(reads)}"


def allowance(o: Outside, ws: Workspace) -> str:
    """How to allow deliberately what ``o`` names: the user policy's roots, with the lines
    that would do it (a user policy's roots replace the default ones, so the lines keep
    those in force)."""
    policy = ws.policy
    where = ws.policy_file or ws.home.policy_file
    shown = "`runtime policy show` prints the roots in force"
    head = f"to allow it deliberately, change the roots in a user policy ({where}): "
    folder = _folder(o)
    if folder is None:
        return (
            f"{head}a folder that holds {o.path} would be / itself; write inside the "
            f"write roots instead; {shown}"
        )
    lines = []
    if o.exists:
        lines.append(f"read_roots: {_flow([*policy.read_roots[0], o.path])} to read it")
    lines.append(f"write_roots: {_flow([*policy.write_roots[0], folder])} to write there")
    return head + ", or ".join(lines) + f"; {shown}"


def _folder(o: Outside) -> str | None:
    """The folder a write root would be for ``o``: itself if it is one, else the nearest
    folder that holds it on the host (a root must exist to be mounted); None for ``/``,
    which can be no root."""
    path = o.path
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return None if path == "/" else path


def _flow(entries: list[Any]) -> str:
    """A YAML flow list of ``entries`` (JSON's strings are YAML's double-quoted ones)."""
    return "[" + ", ".join(json.dumps(str(e)) for e in dict.fromkeys(entries)) + "]"
