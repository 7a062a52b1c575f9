"""The ``runtime`` command line.

The only layer that knows typer, prints, or picks exit codes. Each command
builds a :class:`~runtime.workspace.Workspace`, walks the engine's stations
and renders what they return. Heavy imports happen inside the commands that
need them, so ``runtime --version`` costs little more than importing typer.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

import typer

from runtime import __version__
from runtime.errors import RuntimeFailure, UsageError
from runtime.exitcodes import ExitCode


class _State:
    output: str = "text"


STATE = _State()


app = typer.Typer(
    name="runtime",
    help="Run capabilities (Markdown files with one runtime block) deterministically and safely.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"runtime {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    output: str = typer.Option(
        "text",
        "--output",
        "-o",
        help="Output format: text, or json (exactly one JSON document on stdout).",
        envvar="RUNTIME_OUTPUT",
    ),
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version_callback,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    if output not in ("text", "json"):
        raise UsageError(f"--output must be text or json, not '{output}'", hint="use --output json")
    STATE.output = output


def json_mode() -> bool:
    return STATE.output == "json"


def workspace() -> Any:
    from runtime.workspace import Workspace

    return Workspace(environ=dict(os.environ), cwd=Path.cwd())


def ensure_home(ws: Any) -> None:
    """Cheap on every command: one small file read when Home is current."""
    from runtime.home import refresh

    try:
        refresh(ws.home)
    except OSError as exc:
        raise UsageError(
            f"cannot prepare Runtime Home at {ws.home.root}: {exc.strerror or exc}",
            hint="set RUNTIME_HOME to a writable folder",
        ) from None


from runtime.cli import admin_cmds as _admin_cmds  # noqa: E402,F401
from runtime.cli import auth_cmds as _auth_cmds  # noqa: E402,F401
from runtime.cli import commands as _commands  # noqa: E402,F401  (registers the commands)
from runtime.cli import run_cmds as _run_cmds  # noqa: E402,F401
from runtime.cli.provider_cmd import register_provider_commands  # noqa: E402

register_provider_commands(app)


def _argv_wants_json(argv: list[str]) -> bool:
    for i, arg in enumerate(argv):
        if arg in ("--output", "-o") and i + 1 < len(argv) and argv[i + 1] == "json":
            return True
        if arg == "--output=json":
            return True
    return os.environ.get("RUNTIME_OUTPUT") == "json"


def _report_failure(failure: RuntimeFailure, as_json: bool) -> int:
    from runtime.cli.render import emit_json, err, problem_line

    if as_json:
        emit_json(
            {
                "ok": False,
                "exit_code": int(failure.exit_code),
                "error": {
                    "code": failure.code,
                    "message": failure.message,
                    "hint": failure.hint,
                    "problems": [p.to_json() for p in failure.problems],
                },
            }
        )
    else:
        if failure.problems:
            for p in failure.problems:
                err(problem_line(p))
                if p.hint:
                    err(f"  hint: {p.hint}")
            if not any(problem_line(p).endswith(failure.message) for p in failure.problems):
                err(f"error: {failure.message}")
        else:
            err(f"error: {failure.message}")
            if failure.hint:
                err(f"  hint: {failure.hint}")
    return int(failure.exit_code)


def _is_usage_error(exc: BaseException) -> bool:
    """Click's usage errors (typer vendors click, so match by shape, not by class)."""
    return hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run, map every failure to its documented exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = _argv_wants_json(args)
    code: int
    try:
        result = app(args=args, prog_name="runtime", standalone_mode=False)
        code = int(result) if isinstance(result, int) else 0
    except RuntimeFailure as failure:
        code = _report_failure(failure, as_json or json_mode())
    except typer.Exit as exc:
        code = int(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        sys.stderr.write("interrupted\n")
        code = int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        code = 0
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    except Exception as exc:  # the last line of defence: never a traceback
        if _is_usage_error(exc):
            usage = UsageError(
                exc.format_message(),  # type: ignore[attr-defined]
                hint="run `runtime --help` (or the command followed by --help)",
            )
            code = _report_failure(usage, as_json)
        else:
            if os.environ.get("RUNTIME_DEBUG") == "1":
                raise
            internal = RuntimeFailure(
                f"internal error: {type(exc).__name__}",
                hint="this is a bug in runtime; rerun with RUNTIME_DEBUG=1 to see where, and report it",
                code="internal-error",
            )
            internal.exit_code = ExitCode.INTERNAL_ERROR
            code = _report_failure(internal, as_json)
    sys.stdout.flush()
    raise SystemExit(code)
