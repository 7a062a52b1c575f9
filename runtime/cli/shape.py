"""How every command reads, applied once to the command tree typer builds.

Typer turns each command module's app into click commands; :func:`finish` then
gives the whole tree the conventions people type and read by:

- the global options (``--output``/``-o``, ``--quiet``/``-q``, ``--log-level``,
  ``--log-format``) are accepted after the command too (``runtime capability execute X
  -o json``), as gh accepts its flags anywhere; after a provider's operation ``-q`` is
  the operation's own (gh's ``--jq``), so there runtime's is ``--quiet``;
- a usage line names its arguments as click and git do (``NAME``,
  ``[NAME]``, ``TARGETS...``, ``[ARGS]...``), not typer's ``{name}``;
- the shell-completion options appear once, on ``runtime`` itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

from runtime.cli.session import STATE

if TYPE_CHECKING:
    from typer import _click as click  # typer vendors click: its own classes

C = TypeVar("C", bound="click.Command")

OUTPUTS = ("text", "json", "raw")
_COMPLETION_PARAMS = frozenset({"install_completion", "show_completion"})


# typer vendors click (typer._click): parameters are built with typer's classes, and click's
# errors are told by their class names.


def _set_output(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    if value not in OUTPUTS:
        raise typer.BadParameter(f"'{value}' is not one of: {', '.join(OUTPUTS)}")
    STATE.output = value


def _complete_output(ctx: click.Context, args: list[str], incomplete: str) -> list[str]:
    return [o for o in OUTPUTS if o.startswith(incomplete)]


def _set_log(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """A log option given after the command: the stream is set again with it (the root's
    callback set it from what came before, or the environment)."""
    if value is None:
        return
    assert param.name is not None  # log_level, log_format: both options are named
    setattr(STATE, param.name, value)
    if ctx.parent is not None:  # a command's own copy: the root callback has run
        from runtime.cli.session import start_log

        start_log(STATE.log_level, STATE.log_format)


def _set_quiet(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:  # a command's copy, not given, leaves what came before
        STATE.quiet = True


def global_options(*, root: bool, operation: bool = False) -> list[TyperOption]:
    """``-o/--output``, ``-q/--quiet``, ``--log-level``, ``--log-format``: on ``runtime``
    itself (with the output's default and environment variable), and on every command,
    given there only, so that what comes later on the line wins. ``operation``: a
    provider's direct call, whose arguments may hold the program's own ``-q``."""
    output = TyperOption(
        param_decls=["-o", "--output"],
        metavar="[" + "|".join(OUTPUTS) + "]",
        autocompletion=_complete_output,
        default="text" if root else None,
        envvar="RUNTIME_OUTPUT" if root else None,
        show_envvar=root,
        show_default=root,
        expose_value=False,
        callback=_set_output,
        help="Output format: text; json (exactly one JSON document on stdout); raw (a run's "
        "last step's output exactly, for piping; other commands print text)."
        if root
        else "Output format, as `runtime --output`: text, json or raw.",
    )
    quiet = TyperOption(
        param_decls=["--quiet"] if operation else ["-q", "--quiet"],
        is_flag=True,
        default=False,
        expose_value=False,
        callback=_set_quiet,
        help="For cron: stderr gets only warnings and failures (no progress, no summary); "
        "what steps print stays on stdout; plan, validate and preflight print only what "
        "is wrong. -o json and -o raw print what they always do."
        if root
        else "As `runtime --quiet`: only warnings and failures on stderr.",
    )
    level = TyperOption(
        param_decls=["--log-level", "log_level"],
        metavar="LEVEL",
        expose_value=False,
        callback=_set_log,
        help="Diagnostic events on stderr: off, error, warning, info or debug (stdout is "
        "the same either way).  [env var: RUNTIME_LOG_LEVEL; default: off]",
    )
    fmt = TyperOption(
        param_decls=["--log-format", "log_format"],
        metavar="FORMAT",
        expose_value=False,
        callback=_set_log,
        help="How diagnostic events are written: console (one aligned line each) or json "
        "(one JSON object per line).  [env var: RUNTIME_LOG_FORMAT; default: console]",
    )
    return [output, quiet, level, fmt]


class _Argument(TyperArgument):
    """An argument shown as click shows one: NAME, [NAME], NAME... (typer writes {name})."""

    def make_metavar(self, ctx: click.Context, *, usage: bool = False) -> str:
        var = (self.metavar or self.name or "").upper()
        if usage and not self.required:
            var = f"[{var}]"
        return var + ("..." if self.nargs != 1 else "")


def finish(command: C, *, root: bool = False, operation: bool = False) -> C:
    """Give ``command`` and everything below it the conventions above; returns it.
    ``operation``: ``command`` is a provider's (``runtime github ...``)."""
    if not root:
        command.params = [p for p in command.params if p.name not in _COMPLETION_PARAMS]
    for param in command.params:
        if type(param) is TyperArgument:
            param.__class__ = _Argument  # same state, click's way of writing its name
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            finish(sub)
    elif not any("--output" in getattr(p, "opts", ()) for p in command.params):
        command.params.extend(global_options(root=False, operation=operation))
    return command


def suggest(group: TyperGroup, ctx: click.Context, error: click.ClickException, word: str) -> None:
    """Add "Did you mean ...?" to an unknown-command error, from the commands ``group``
    lists (a lazy group has no ``commands`` dict for typer's own suggestion to read)."""
    from difflib import get_close_matches

    matches = get_close_matches(word, group.list_commands(ctx))
    if matches and "Did you mean" not in error.message:
        names = ", ".join(repr(m) for m in matches)
        error.message = f"{error.message.rstrip('.')}. Did you mean {names}?"


def help_text(error: BaseException) -> str | None:
    """The help a bare group prints (``runtime``, ``runtime capability``), if ``error`` is
    click's "no arguments, show help" error."""
    if type(error).__name__ != "NoArgsIsHelpError" or getattr(error, "ctx", None) is None:
        return None
    return str(error.ctx.get_help())  # type: ignore[attr-defined]
