"""``capability validate``, in its three parts: discovery, checking and rendering.

Discovery finds what each argument names (a file, a name, or a folder's
Markdown files, recursively); checking walks each to the validate station
and keeps it, or skips it (a folder's entry that is not a regular file, a
Markdown file without a runtime block); rendering writes the result, as JSON
or in one of the text problem formats. The command itself, its options and
its help are :func:`runtime.cli.commands.validate_cmd`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.cli.render import emit_json, out, plural, problem_block
from runtime.errors import ExitCode, NotFound

if TYPE_CHECKING:
    from runtime.document.catalog import Target
    from runtime.pipeline import Run
    from runtime.plan.workspace import Workspace


@dataclass
class Validated:
    """What validate checked and what it skipped."""

    results: list[Run] = field(default_factory=list)  # the runs, walked to validate
    skipped: list[str] = field(default_factory=list)
    not_files: list[str] = field(
        default_factory=list
    )  # found in a folder, not regular files: why, each

    @property
    def valid(self) -> int:
        return sum(1 for r in self.results if r.ok)

    @property
    def invalid(self) -> int:
        return len(self.results) - self.valid

    @property
    def errors(self) -> int:
        return sum(1 for r in self.results for p in r.problems if p.is_error)

    @property
    def warnings(self) -> int:
        return sum(1 for r in self.results for p in r.problems if p.is_warning)

    @property
    def ok(self) -> bool:
        return self.invalid == 0

    def folders(self) -> list[dict[str, Any]]:
        """The counts of each folder that holds a file checked or skipped, in path order:
        a capability repository's summary by folder (``github``, ``gcp``...)."""
        import posixpath

        by: dict[str, dict[str, Any]] = {}

        def bucket(display: str) -> dict[str, Any]:
            folder = posixpath.dirname(display) or "."
            return by.setdefault(
                folder,
                {
                    "folder": folder,
                    "checked": 0,
                    "valid": 0,
                    "invalid": 0,
                    "errors": 0,
                    "warnings": 0,
                    "skipped": 0,
                },
            )

        for r in self.results:
            assert r.target is not None  # walked to validate
            counts = bucket(r.target.display)
            counts["checked"] += 1
            counts["valid" if r.ok else "invalid"] += 1
            counts["errors"] += sum(1 for p in r.problems if p.is_error)
            counts["warnings"] += sum(1 for p in r.problems if p.is_warning)
        for display in self.skipped:
            bucket(display)["skipped"] += 1
        return [by[k] for k in sorted(by, key=lambda f: f.split("/"))]


# -- discovery --------------------------------------------------------------------


def discover(ws: Workspace, arg: str) -> list[Target]:
    """The targets ``arg`` names: a file, a capability name, or a folder's files."""
    from runtime.document.catalog import resolve_many

    return resolve_many([arg], ws.sources, ws.cwd)


def nothing_found(arg: str, found: list[Target]) -> NotFound:
    """A folder with nothing to check: said, as git says of a pathspec that matches no
    file (not "0 checked", which reads as a pass)."""
    plain = len(found)
    return NotFound(
        f"no capability found in {arg} ("
        + (
            f"{plain} Markdown file{'s' if plain != 1 else ''} without a runtime block)"
            if plain
            else "it holds no Markdown file)"
        ),
        hint="a capability is a Markdown file with one ```runtime block; name "
        "capability files, or a folder that holds some",
    )


# -- checking ---------------------------------------------------------------------


def check(
    ws: Workspace, target: Target, into: Validated, *, strict: bool, only_capabilities: bool
) -> None:
    """Walk ``target`` to the validate station; keep its run in ``into``, or skip it."""
    from runtime.pipeline import Mode, Run, walk
    from runtime.pipeline import validate as validated

    result = walk(
        Run(ws, Mode.INSPECT, name=target.display, target=target, strict=strict),
        until=validated,
    )
    odd = next((p for p in result.problems if p.code == "not-a-file"), None)
    if odd is not None and not target.explicit:
        into.skipped.append(target.display)
        reason = odd.message.removeprefix("cannot read the file: it is ")
        into.not_files.append(f"{target.display} skipped: {reason}")
        return
    if (
        (only_capabilities or not target.explicit)
        and not result.has_runtime_block
        and not any(p.is_error and p.code != "no-runtime-block" for p in result.problems)
    ):
        into.skipped.append(target.display)
        return
    into.results.append(result)


# -- rendering --------------------------------------------------------------------


def render_json(found: Validated) -> None:
    emit_json(validated_document(found))


def validated_document(found: Validated) -> dict[str, Any]:
    """``capability validate --output json``: each capability's problems, the summary."""
    return {
        "ok": found.ok,
        "exit_code": 0 if found.ok else int(ExitCode.INVALID),
        "capabilities": [_capability_json(r) for r in found.results],
        "skipped": found.skipped,
        "folders": found.folders(),
        "summary": {
            "checked": len(found.results),
            "valid": found.valid,
            "invalid": found.invalid,
            "errors": found.errors,
            "warnings": found.warnings,
            "skipped": len(found.skipped),
        },
    }


def _capability_json(r: Run) -> dict[str, Any]:
    assert r.target is not None and r.capability is not None  # walked to validate
    return {
        "path": r.target.display,
        "sha256": r.capability.sha256,
        "valid": r.ok,
        # a secret the environment holds, written into the file, is not shown again (a
        # source line or value a problem quotes)
        "problems": r.redactor.data([p.to_json() for p in r.problems]),
    }


def render_text(found: Validated, format: str) -> None:
    """Each problem in ``format`` (text, plain or github), then the summary line; under
    ``--quiet`` the problems, and the summary only when something is invalid."""
    from runtime.cli.session import quiet_mode

    for r in found.results:
        assert r.capability is not None  # walked to validate
        text = r.capability.document.text
        lines = text.splitlines() if text else None
        hide = r.redactor.text  # as in JSON: no secret of the environment is shown
        for p in r.problems:
            if format == "github":
                from runtime.cli.render import github_annotation

                out(hide(github_annotation(p)))
            elif format == "plain":
                from runtime.cli.render import plain_line

                out(hide(plain_line(p)), styled=True)
            else:
                for line in problem_block(p, lines, hide):
                    out(hide(line), styled=True)
    if quiet_mode() and found.ok:
        return
    for line in found.not_files:
        out(line)
    _by_folder(found)
    without_block = len(found.skipped) - len(found.not_files)
    skipped_text = f"{plural(without_block, 'Markdown file')} without a runtime block skipped"
    if not found.results:  # only files named by pre-commit, none a capability
        out(f"nothing to check: {skipped_text}")
    else:
        summary = (
            f"{len(found.results)} checked: {found.valid} valid, {found.invalid} invalid "
            f"({plural(found.errors, 'error')}, {plural(found.warnings, 'warning')})"
        )
        if without_block:
            summary += f"; {skipped_text}"
        out(summary)


def _by_folder(found: Validated) -> None:
    """A line per folder when the files checked are in more than one (a whole capability
    repository): where the invalid ones are, before the total."""
    folders = [f for f in found.folders() if f["checked"]]
    if len(folders) < 2:
        return
    from runtime.cli.render import table

    rows = []
    for f in folders:
        said = f"{f['checked']} checked: {f['valid']} valid, {f['invalid']} invalid"
        if f["errors"] or f["warnings"]:
            said += f" ({plural(f['errors'], 'error')}, {plural(f['warnings'], 'warning')})"
        rows.append((f["folder"] + "/", said))
    out("by folder:")
    for line in table(rows, indent="  "):
        out(line)
