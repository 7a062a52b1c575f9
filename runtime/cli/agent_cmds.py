"""agent hook / init: AI assistants acting through runtime."""

from __future__ import annotations

import sys

import typer

from runtime.cli.render import emit_json, err, out
from runtime.cli.session import json_mode

agent_app = typer.Typer(
    rich_markup_mode=None,
    help="AI assistants: the shell-hook guard and the project files that wire them up.",
    no_args_is_help=True,
)

ASSISTANTS = ("claude", "codex", "copilot", "cursor", "gemini")


@agent_app.command("hook")
def agent_hook_cmd(
    assistant: str = typer.Argument(
        ..., help="The assistant whose hook protocol to speak: " + ", ".join(ASSISTANTS) + "."
    ),
) -> None:
    """The shell-hook guard: decide the shell command of the event on stdin.

    Allows it only when it is one `runtime ...` command, optionally piped into the
    policy's agents.shell_filters; records the decision in the audit log; prints it
    as the assistant's protocol asks (a denial says what to run instead).
    """
    from runtime.agent.hook import main

    raise typer.Exit(main([assistant]))


@agent_app.command("init")
def agent_init_cmd(
    assistants: list[str] = typer.Option(
        None,
        "--assistant",
        "-a",
        help="Only this assistant's files (repeatable): " + ", ".join(ASSISTANTS) + ".",
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Write the changes the diff shows."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the diff only; write nothing."),
) -> None:
    """Write the project files that wire AI assistants to runtime: the MCP server entry
    (`runtime mcp serve`), each assistant's shell hook (`runtime agent hook`) and a
    section of AGENTS.md.

    Shows a unified diff first and writes it with --yes (on a terminal, it asks);
    merges into existing settings files, keeping everything in them. Run it again at
    any time: what is already there is not written twice.
    """
    from pathlib import Path

    from runtime.agent import setup
    from runtime.errors import UsageError

    chosen = tuple(dict.fromkeys(assistants or ASSISTANTS))
    unknown = [a for a in chosen if a not in ASSISTANTS]
    if unknown:
        raise UsageError(
            f"unknown assistant {unknown[0]!r}",
            hint="--assistant is one of " + ", ".join(ASSISTANTS),
        )
    if yes and dry_run:
        raise UsageError("--yes and --dry-run together", hint="choose one")
    root = Path.cwd()
    changes = setup.plan(root, chosen)
    pending = [c for c in changes if c.action != "unchanged"]
    notes = [n for c in changes for n in c.notes]
    if json_mode():
        written = setup.write(root, changes) if pending and yes else []
        emit_json(
            {
                "ok": True,
                "root": str(root),
                "written": written,
                "files": [{"path": c.path, "action": c.action, "diff": c.diff()} for c in changes],
                "notes": notes,
            }
        )
        return
    for note in notes:
        err(f"note: {note}")
    if not pending:
        out("runtime agent init: every file is already set up; nothing to change")
        return
    sys.stdout.write("".join(c.diff() for c in pending))
    sys.stdout.flush()
    if dry_run:
        err("nothing written (--dry-run)")
        return
    if not yes and not _confirmed():
        err("nothing written: run `runtime agent init --yes` to write these changes")
        return
    err(f"wrote {', '.join(setup.write(root, changes))}")


def _confirmed() -> bool:
    """On a terminal, ask; elsewhere (a pipe, CI), nothing is written without --yes."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False
    return typer.confirm("Write these changes?", default=False)
