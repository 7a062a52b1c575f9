"""The ``runtime`` command line.

The only layer that knows typer, prints, or picks exit codes. Each command
builds a :class:`~runtime.plan.workspace.Workspace`, walks the engine's stations
and renders what they return. Heavy imports happen inside the commands that
need them, so ``runtime --version`` costs little more than importing typer.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeGuard

import typer
from typer.core import TyperGroup

from runtime import __version__
from runtime.cli import session
from runtime.cli.session import STATE, start_log
from runtime.cli.session import ensure_home as ensure_home
from runtime.cli.session import json_mode as json_mode
from runtime.cli.session import workspace as workspace
from runtime.cli.shape import finish, global_options, help_text, suggest

if TYPE_CHECKING:
    from typer import _click as click  # typer vendors click: its own classes

    from runtime.errors import Failure, UsageError


# Top-level commands, imported only when used: name -> (modules to import, "module:attribute"
# of a Typer app, short help for `runtime --help`). Registered providers are added as
# commands by name (`runtime files ...`), found through entry points.
COMMANDS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "capability": (
        ("runtime.cli.commands", "runtime.cli.run_cmds"),
        "runtime.cli.commands:capability_app",
        "Validate, inspect, plan, preflight and execute capabilities.",
    ),
    "command": ((), "runtime.cli.run_cmds:command_app", "Run an allow-listed binary directly."),
    "policy": (
        (),
        "runtime.cli.admin_cmds:policy_app",
        "Show the effective policy; check a capability.",
    ),
    "audit": ((), "runtime.cli.admin_cmds:audit_app", "Read the audit log in Runtime Home."),
    "auth": ((), "runtime.cli.auth_cmds:auth_app", "Credentials: login, status, logout."),
    "context": (
        (),
        "runtime.cli.auth_cmds:context_app",
        "Named Runtime Contexts: the defaults providers read (a host, an organization).",
    ),
    "bootstrap": (
        (),
        "runtime.cli.commands:bootstrap_app",
        "Make Runtime Home match this version.",
    ),
    "doctor": ((), "runtime.cli.doctor_cmd:doctor_app", "Check the installation; say what to fix."),
    "agent": (
        (),
        "runtime.cli.agent_cmds:agent_app",
        "AI assistants: the shell-hook guard, and the files that wire them up.",
    ),
    "mcp": (
        (),
        "runtime.cli.mcp_cmd:mcp_app",
        "Serve runtime to AI assistants (MCP over stdio).",
    ),
    "version": ((), "runtime.cli.commands:version_app", "Print the version."),
}


class LazyGroup(TyperGroup):
    """The root group: imports a command's module only when that command runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params[:0] = global_options(root=True)

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        """typer appends its completion options once the group is made: runtime's own
        ``--install-completion`` callback takes the place of typer's."""
        params = super().get_params(ctx)
        for param in params:
            if param.name == "install_completion":
                from runtime.cli.completion import install_completion

                param.callback = install_completion
        return params

    def invoke(self, ctx: click.Context) -> Any:
        """Global options alone (``runtime -o json``, ``runtime --log-level debug``) are
        ``runtime`` alone: its help on stdout, exit 0, as a group alone gives its own
        (click would call it a missing command)."""
        if not ctx._protected_args and not ctx.args:
            sys.stdout.write(ctx.get_help() + "\n")
            raise typer.Exit(0)
        return super().invoke(ctx)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except Exception as error:
            if args and _is_usage_error(error):
                suggest(self, ctx, error, args[0])
            raise

    def list_commands(self, ctx: click.Context) -> list[str]:
        from runtime.home.registry import provider_names

        return [*COMMANDS, *(n for n in provider_names() if n not in COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        import importlib

        if cmd_name in COMMANDS:
            modules, target, _ = COMMANDS[cmd_name]
            for module in modules:
                importlib.import_module(module)
            module_name, _, attr = target.partition(":")
            sub = getattr(importlib.import_module(module_name), attr)
        else:
            from runtime.home.registry import provider_names

            if cmd_name not in provider_names():
                return None
            from runtime.cli.provider_cmd import provider_app

            sub = provider_app(cmd_name)
        command = finish(typer.main.get_command(sub), operation=cmd_name not in COMMANDS)
        command.name = cmd_name
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the table, without importing every command's module."""
        from runtime.home.registry import provider_names

        rows = [(name, help_text) for name, (_, _, help_text) in COMMANDS.items()]
        rows += [
            (name, f"Run a {name} operation directly (`runtime {name} --help` lists them).")
            for name in provider_names()
            if name not in COMMANDS
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


app = typer.Typer(
    cls=LazyGroup,
    rich_markup_mode=None,
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
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version_callback,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """Run capabilities (Markdown files with one runtime block) deterministically and safely.

    The global options (-o/--output, -q/--quiet, --log-level, --log-format; set by
    LazyGroup) may also follow the command."""
    start_log(STATE.log_level, STATE.log_format)


def _argv_wants_json(argv: list[str]) -> bool:
    """Whether a failure found before the options were parsed is reported as JSON: the
    last --output on the line (before ``--``), else RUNTIME_OUTPUT."""
    wanted = os.environ.get("RUNTIME_OUTPUT")
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg in ("--output", "-o") and i + 1 < len(argv):
            wanted = argv[i + 1]
        elif arg.startswith("--output="):
            wanted = arg.partition("=")[2]
        elif arg.startswith("-o") and not arg.startswith("--") and len(arg) > 2:
            wanted = arg[2:]
    return wanted == "json"


def _report_failure(failure: Failure, as_json: bool) -> int:
    """Say what failed (a JSON document, or lines on stderr) and return its exit code: the
    one place a failure becomes the process's exit code."""
    from runtime.cli.render import emit_json, paint, problem_line
    from runtime.cli.render import err as write_err
    from runtime.errors import Terminated
    from runtime.redact import Redactor
    from runtime.text import printable

    if isinstance(failure, Terminated):  # a signal: one line, whatever the output mode
        # but SIGPIPE: the reader went away (`| head`); like a program it ends, say nothing
        if failure.name != "SIGPIPE":
            sys.stderr.write(f"{failure.message}\n")
        return int(failure.exit_code)

    # A failure can quote what the user gave (an environment variable, an argument): the
    # environment's secrets in any encoding, a token shape or a URL's user:password in it
    # are redacted here, where every failure of every command leaves the process.
    redact = Redactor()
    redact.add_environment(os.environ)

    def err(text: str, *, styled: bool = False) -> None:
        write_err(redact.text(text), styled=styled)

    if as_json:
        from runtime.cli.documents import error_document

        emit_json(redact.data(error_document(failure)))
    else:
        if failure.problems:
            for p in failure.problems:
                err(problem_line(p, sys.stderr), styled=True)
                if p.hint:
                    err(f"  hint: {p.hint}")
            # the failure's own message, unless it only repeats a problem (with or
            # without its position)
            told = {p.message for p in failure.problems} | {
                f"{p.file}:{p.line}:{p.column}: {p.message}" for p in failure.problems
            }
            if failure.message not in told:
                err(f"error: {failure.message}")
        else:
            shown = printable(redact.text(failure.message), "\n\t")
            err(f"{paint('error', 'red', sys.stderr)}: {shown}", styled=True)
            if failure.hint:
                err(f"  hint: {failure.hint}")
    return int(failure.exit_code)


def _usage_failure(exc: click.ClickException) -> UsageError:
    """A click usage error as a :class:`~runtime.errors.UsageError`: a misspelled option
    gets "did you mean" (click lists the close ones as "Possible options"), and the hint
    names the help of the command that refused it."""
    from runtime.errors import UsageError
    from runtime.plan.binding import did_you_mean

    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", "") or "runtime"
    help_hint = f"run `{path} --help`"
    possibilities = getattr(exc, "possibilities", None)
    name = getattr(exc, "option_name", None)
    if possibilities and name:
        return UsageError(f"No such option: {name}", hint=did_you_mean(possibilities) + help_hint)
    return UsageError(exc.format_message(), hint=help_hint)


def _is_usage_error(exc: BaseException) -> TypeGuard[click.ClickException]:
    """Click's usage errors (typer vendors click, so match by shape, not by class)."""
    return hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int)


def command() -> None:
    """The ``runtime`` command itself (the console script, ``python -m runtime``).

    It owns its process, which exits right after :func:`main`: its heap is frozen
    first, so the interpreter's last collection does not walk every object typer and
    the run left alive (ARCHITECTURE.md, "Measured choices"). :func:`main`, which
    programs embed, leaves the collector alone.
    """
    import gc

    try:
        main()
    finally:
        gc.freeze()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run, map every failure to its documented exit code."""
    session.guard_standard_streams()
    STATE.reset()
    args = list(sys.argv[1:] if argv is None else argv)
    code: int
    try:
        with _shell_named(args):
            result = app(args=args, prog_name="runtime", standalone_mode=False)
        code = int(result) if isinstance(result, int) else 0
    except typer.Exit as exc:
        code = int(exc.exit_code)
    except BaseException as exc:  # every failure gets its exit code here
        code = _exit_code_for(exc, args)
    raise SystemExit(_with_lost_output(code))


# typer's switch for completion flags that take the shell's name (bash, zsh, fish,
# powershell, pwsh; click checks it) instead of detecting the shell with shellingham
_NAMED_SHELL = "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"


@contextlib.contextmanager
def _shell_named(args: list[str]) -> Iterator[None]:
    """``--install-completion zsh`` and ``--show-completion fish`` are for the shell named:
    typer would take the flags for the shell it detects and the name for nothing (from
    bash, install bash's completion and edit ~/.bashrc). Without a name, it detects."""
    named = any(
        flag in args[:-1] and not args[args.index(flag) + 1].startswith("-")
        for flag in ("--install-completion", "--show-completion")
    )
    if not named:
        yield
        return
    before = os.environ.get(_NAMED_SHELL)
    os.environ[_NAMED_SHELL] = "1"
    try:
        yield
    finally:  # an embedding program's environment is left as it was
        if before is None:
            os.environ.pop(_NAMED_SHELL, None)
        else:
            os.environ[_NAMED_SHELL] = before


def _with_lost_output(code: int) -> int:
    """The exit code once stdout is flushed: the command's own when it failed; else, if
    its output could not be written, 141 for a reader that went away (as SIGPIPE would
    end it) or :class:`~runtime.errors.OutputError`'s, said on stderr."""
    sys.stdout.flush()
    lost = session.lost_output()
    if lost is None:
        return code
    import signal

    from runtime.errors import OutputError, Terminated

    if session.reader_gone():
        return code or int(Terminated(signal.SIGPIPE).exit_code)
    failed = _report_failure(OutputError.of(lost), as_json=False)  # stdout is gone: stderr
    return code or failed


def _exit_code_for(exc: BaseException, args: list[str]) -> int:
    """Report a failure and return its exit code; never a traceback.

    Whatever was raised is taken as a :class:`~runtime.errors.Failure` (Ctrl-C as
    ``Interrupted``, click's usage errors as ``UsageError``, anything else as
    ``InternalError``), whose class holds its exit code. The error classes are imported
    only here, when something failed: ``runtime --version`` and ``--help`` should cost
    little more than importing typer.
    """
    from runtime.errors import Failure, InternalError, Interrupted

    shown = help_text(exc)
    if shown is not None:  # `runtime` or a group alone: its help, as gh prints it
        sys.stdout.write(shown + "\n")
        return 0
    if isinstance(exc, SystemExit):  # raised by code we call: keep its status
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    as_json = _argv_wants_json(args)
    failure: Failure
    if isinstance(exc, Failure):
        # raised by a command: the root callback ran, so the output mode is known
        failure, as_json = exc, as_json or json_mode()
    elif isinstance(exc, (typer.Abort, KeyboardInterrupt)):
        failure = Interrupted()
    elif not isinstance(exc, Exception):
        raise exc
    elif _is_usage_error(exc):
        failure = _usage_failure(exc)
    elif os.environ.get("RUNTIME_DEBUG") == "1":
        raise exc
    else:
        failure = InternalError(
            f"internal error: {type(exc).__name__}",
            hint="this is a bug in runtime; rerun with RUNTIME_DEBUG=1 to see where, and report it",
        )
    return _report_failure(failure, as_json)
