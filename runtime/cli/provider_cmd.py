"""``runtime <provider> ...``: help from the provider's operation table, and direct calls."""

from __future__ import annotations

from typing import Any

import typer

from runtime.cli.render import emit_json, out, out_wrapped, table
from runtime.plan.binding import value_form
from runtime.provider import Operation, Option, Positional, Provider


def provider_app(name: str) -> typer.Typer:
    """A one-command app for ``runtime NAME ...``; the provider itself loads only when called."""
    app = typer.Typer(rich_markup_mode=None)
    _register(app, name)
    return app


def _register(app: typer.Typer, name: str) -> None:
    from runtime.cli.completion import operation_words

    def command(
        args: list[str] = typer.Argument(
            None, help="Operation words and arguments.", autocompletion=operation_words(name)
        ),
    ) -> int:
        return provider_command(name, list(args or []))

    command.__doc__ = f"Run a {name} operation directly; `runtime {name} --help` lists them all."
    app.command(
        name,
        context_settings={
            "ignore_unknown_options": True,
            "allow_extra_args": True,
            "help_option_names": [],
        },
        add_help_option=False,
    )(command)


def describe_positional(positional: Positional) -> str:
    """What a positional takes: its type or choices, its help, its context default."""
    parts = [value_form(positional), positional.help]
    if positional.context_default:
        parts.append(f"default: the context's {positional.context_default}")
    if positional.flags:
        parts.append(f"or with {' / '.join(positional.flags)}")
    return "; ".join(p for p in parts if p)


def describe_option(option: Option) -> str:
    """``state=open|closed|all``, ``per_page=1..100``, ``name=... (required)``, and the
    flags that stand for it: ``limit=1.. (--limit, -L)``."""
    form = value_form(option) or ("..." if option.required else "")
    flags = f" ({', '.join(option.flags)})" if option.flags else ""
    return (
        option.name
        + (f"={form}" if form else "")
        + (" (required)" if option.required else "")
        + flags
    )


_KEY_VALUE_HEADING = "Options (key=value, after the positional arguments):"
# where an operation stands for a command of a CLI (gh's), the flags that CLI spells its
# options with work as well
_OPTIONS_HEADING = "Options (key=value after the positional arguments, or a flag in parentheses):"


def arguments_json(operation: Operation) -> list[dict[str, Any]]:
    return [
        {
            "name": arg.name,
            "kind": "option" if isinstance(arg, Option) else "positional",
            "required": arg.required,
            "type": arg.type,
            "choices": list(arg.choices),
            "range": list(arg.range) if arg.range else None,
            "context_default": arg.context_default if isinstance(arg, Positional) else None,
            "flags": list(arg.flags),
            "help": arg.help,
        }
        for arg in operation.arguments
    ]


def operations_table(provider: Provider, indent: str = "") -> list[str]:
    return table(
        [
            (op.form(), op.transport, "/".join(op.possible_effects()), op.summary)
            for op in provider.operations
        ],
        headers=("OPERATION", "TRANSPORT", "EFFECT", "SUMMARY"),
        indent=indent,
    )


def print_provider_help(provider: Provider) -> None:
    from runtime.cli.session import json_mode

    if json_mode():
        emit_json(
            {
                "ok": True,
                "provider": provider.name,
                "summary": provider.summary,
                "operations": [_operation_json(op) for op in provider.operations],
            }
        )
        return
    out_wrapped(f"runtime {provider.name}: {provider.summary}", hanging="  ")
    out()
    out(f"Usage: runtime {provider.name} OPERATION [ARGS...]")
    out("       In a capability: provider: " + provider.name + ", args: [OPERATION words, ARGS...]")
    out()
    for line in operations_table(provider, indent="  "):
        out(line)
    described = [
        (f"{op.name} {p.form()}", describe_positional(p))
        for op in provider.operations
        for p in op.positionals
    ]
    if any(text for _, text in described):
        out()
        out("Arguments:")
        arguments = [(f"{what}:", text) for what, text in described if text]
        for line in table(arguments, indent="  "):
            out(line)
    with_options = [op for op in provider.operations if op.options]
    if with_options:
        out()
        flagged = any(o.flags for op in with_options for o in op.options or ())
        out(_OPTIONS_HEADING if flagged else _KEY_VALUE_HEADING)
        for op in with_options:
            out_wrapped(
                f"{op.name}: {', '.join(describe_option(o) for o in op.options or ())}", "  "
            )
    if any(op.options is None for op in provider.operations):
        names = ", ".join(op.name for op in provider.operations if op.options is None)
        out_wrapped(f"{names}: any key=value", "  ")
    out()
    out("Examples:")
    for op in provider.operations:
        if op.example:
            out(f"  {op.example}")
    out()
    out_wrapped(
        "The transport column is information: the provider chooses it, a capability never "
        "names it.",
        hanging="",
    )


def _operation_json(op: Operation) -> dict[str, Any]:
    return {
        "words": list(op.words),
        "form": op.form(),
        "transport": op.transport,
        "effect": op.effect,
        "effects": list(op.possible_effects()),
        "credential": op.credential,
        "summary": op.summary,
        "example": op.example,
        "arguments": arguments_json(op),
    }


def print_operation_help(provider: Provider, op: Operation) -> None:
    """``runtime github repo list --help``: one operation, as the provider declares it."""
    from runtime.cli.session import json_mode

    if json_mode():
        emit_json({"ok": True, "provider": provider.name, "operation": _operation_json(op)})
        return
    out_wrapped(f"runtime {provider.name} {op.name}: {op.summary}", hanging="  ")
    out()
    out(f"Usage: runtime {provider.name} {op.form()}")
    words = ", ".join([*op.words, "..."])
    out(f"       In a capability: provider: {provider.name}, args: [{words}]")
    out()
    facts = [("Effect:", "/".join(op.possible_effects())), ("Transport:", op.transport)]
    if op.credential:
        facts.append(("Credential:", op.credential))
    for line in table(facts, indent="  "):
        out(line)
    described = [(p.form(), describe_positional(p)) for p in op.positionals]
    if any(text for _, text in described):
        out()
        out("Arguments:")
        for line in table([(what, text) for what, text in described if text], indent="  "):
            out(line)
    if op.options:
        out()
        out(_OPTIONS_HEADING if any(o.flags for o in op.options) else _KEY_VALUE_HEADING)
        for option in op.options:
            line = describe_option(option) + (f": {option.help}" if option.help else "")
            out_wrapped(line, "  ", hanging="    ")
    elif op.options is None:
        out()
        out("Options: any key=value, after the positional arguments")
    if op.passthrough:
        out()
        where = f" (`{op.program} {op.name} --help` lists them)" if op.program else ""
        out_wrapped(
            f"Flags: passed to {op.program or 'the program'} as written{where}", hanging="  "
        )
    if op.example:
        out()
        out("Example:")
        out(f"  {op.example}")


def _help_asked(args: list[str]) -> bool:
    return "--help" in args or "-h" in args


def _refuse_unknown_words(provider: Provider, args: list[str]) -> None:
    """``runtime files reed --help``: words that begin no operation are a misspelling, refused
    with a "did you mean" as the call itself and a misspelled command's --help are (exit 2);
    no words, or the start of some (``runtime github repo --help``), get the provider's help."""
    from runtime.errors import UsageError
    from runtime.plan.binding import did_you_mean, similar_operations

    words: list[str] = []
    for arg in args:
        if arg.startswith("-") or arg == "help":
            break
        words.append(arg)
    # an operation without words takes any words as its arguments
    if not words or any(
        not op.words or tuple(words) == op.words[: len(words)] for op in provider.operations
    ):
        return
    raise UsageError(
        f"'{' '.join(words[:2])}' is not an operation of '{provider.name}'",
        hint=did_you_mean(similar_operations(provider.operations, words))
        + f"run `runtime {provider.name} --help` for the operations",
    )


def provider_command(name: str, args: list[str]) -> int:
    from runtime.cli.session import workspace
    from runtime.errors import UsageError

    ws = workspace()
    provider = ws.registry.get(name)
    if provider is None:
        why = ws.registry.broken.get(name, "not registered")
        raise UsageError(f"provider '{name}' could not be loaded: {why}")
    if not args or args[0] in ("--help", "-h", "help"):
        print_provider_help(provider)
        return 0
    if _help_asked(args):
        # `runtime github repo list --help`, as gh answers `gh repo list --help`: the
        # operation's own help, or the provider's when the words name none
        from runtime.plan.binding import match_operation

        op = match_operation(provider.operations, args)
        if op is None or not op.words:
            _refuse_unknown_words(provider, args)
            print_provider_help(provider)
        else:
            print_operation_help(provider, op)
        return 0
    from runtime.cli.run_cmds import run_direct

    return run_direct(ws, provider, args)
