"""Dynamic shell completion: capability names, declared inputs, operation words, contexts.

Each function is a typer ``autocompletion`` callback. They must be quick and
must never fail loudly: a broken completion is an empty list, not a traceback
in the user's shell.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from typer import _click as click  # typer vendors click: its own classes

    from runtime.plan.workspace import Workspace


def _workspace() -> Workspace:
    from runtime.plan.workspace import Workspace

    return Workspace(environ=dict(os.environ), cwd=Path.cwd())


def capability_names(ctx: typer.Context, incomplete: str) -> list[str]:
    try:
        from runtime.document.catalog import list_sources

        names = sorted({e.name for e in list_sources(_workspace().sources).entries})
    except Exception:
        return []
    return [n for n in names if n.startswith(incomplete)]


VALUE_OPTIONS = ("--input", "-i", "--timeout", "--runner-capability", "--format", "--output", "-o")


def _positionals(args: list[str]) -> tuple[list[str], list[str]]:
    """Words that are not options or option values, and the values given to --input."""
    words: list[str] = []
    inputs: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in VALUE_OPTIONS:
            skip = True
            if arg in ("--input", "-i") and i + 1 < len(args):
                inputs.append(args[i + 1])
            continue
        if not arg.startswith("-"):
            words.append(arg)
    return words, inputs


def _line_words() -> list[str]:
    """The command line being completed, as the shell handed it over (program name dropped)."""
    import shlex

    if "COMP_WORDS" in os.environ:  # bash
        words = shlex.split(os.environ["COMP_WORDS"])
    else:  # zsh, fish, powershell (typer's scripts)
        words = shlex.split(os.environ.get("_TYPER_COMPLETE_ARGS", ""))
    return words[1:]


def input_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """``name=`` for each input the capability named earlier on the line declares."""
    try:
        # the line itself, not ctx.params: an --input still waiting for its value stops
        # click's resilient parsing before the capability argument is stored
        words, given_values = _positionals(_line_words())
        target = words[2] if len(words) >= 3 else None
        if not target:
            return []
        from runtime.pipeline import Mode, capability_run, load, walk

        cap = walk(capability_run(_workspace(), str(target), Mode.INSPECT), until=load).capability
        assert cap is not None
        given = {v.partition("=")[0] for v in given_values}
        names = [f"{n}=" for n in cap.inputs if n not in given]
    except Exception:
        return []
    return [n for n in names if n.startswith(incomplete)]


def operation_words(provider_name: str) -> Callable[[typer.Context, str], list[str]]:
    """Completion of the words of ``runtime PROVIDER ...`` from the provider's operation table."""

    def complete(ctx: typer.Context, incomplete: str) -> list[str]:
        try:
            from runtime.home.registry import load_registry

            provider = load_registry().get(provider_name)
            if provider is None:
                return []
            typed = list((ctx.params or {}).get("args") or [])
            words: set[str] = set()
            for op in provider.operations:
                if tuple(op.words[: len(typed)]) == tuple(typed) and len(op.words) > len(typed):
                    words.add(op.words[len(typed)])
            if not typed:
                words.update({"--help"})
        except Exception:
            return []
        return sorted(w for w in words if w.startswith(incomplete))

    return complete


def context_names(ctx: typer.Context, incomplete: str) -> list[str]:
    try:
        from runtime.home.contexts import ContextStore

        names = ContextStore(_workspace().home).names()
    except Exception:
        return []
    return [n for n in names if n.startswith(incomplete)]


# the shells whose completion --install-completion writes: typer's installer for PowerShell
# sets the user's execution policy to Unrestricted, a change no completion should make
INSTALLED_SHELLS = ("bash", "zsh", "fish")


def install_completion(ctx: click.Context, param: click.Parameter, value: object) -> object:
    """``--install-completion [SHELL]``: typer's, for the shell named (else the one
    detected), said by its name (typer prints its enum, ``Shells.zsh``); PowerShell's is
    refused (exit 2) with the way to add it by hand."""
    if not value or ctx.resilient_parsing:
        return value
    import sys

    # typer's own installer and shell detection, which its callback uses (no public name)
    from typer._completion_shared import _get_shell_name, install

    named = value if isinstance(value, str) else None
    shell = getattr(named, "value", named) or _get_shell_name()
    if shell in ("powershell", "pwsh"):
        raise typer.BadParameter(
            "runtime does not install PowerShell completion (typer's installer would set "
            "your execution policy to Unrestricted); `runtime --show-completion pwsh` prints "
            "the script: add it to your $PROFILE",
            param_hint="'--install-completion'",
        )
    if shell not in INSTALLED_SHELLS:
        raise typer.BadParameter(
            f"cannot tell which shell this is ({shell or 'none detected'}): name it, one of "
            + ", ".join(INSTALLED_SHELLS),
            param_hint="'--install-completion'",
        )
    _, path = install(shell=shell)
    sys.stdout.write(f"{shell} completion installed in {path}\n")
    sys.stdout.write("Completion will take effect once you restart the terminal\n")
    raise typer.Exit(0)
