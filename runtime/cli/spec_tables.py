"""The tables the documents copy, generated from the one place each is written.

A provider's spec (``specs/PROVIDER.md``) holds its operation table between
:data:`BEGIN` and :data:`END`, made from the provider's declarations; README.md and
``specs/capability-spec.md`` hold the exit-code table between :data:`EXIT_BEGIN` and
:data:`EXIT_END`, made from :class:`runtime.errors.ExitCode`. ``make specs``
(``python -m runtime.cli.spec_tables``) rewrites what lies between the markers;
``--check`` rewrites nothing and exits 1 naming each document whose table differs (a
test does the same), so a table never says other than its source.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runtime.cli.provider_cmd import describe_option, describe_positional
from runtime.errors import ExitCode
from runtime.provider import Operation, Provider

BEGIN = "<!-- BEGIN operations: generated from the declarations by `make specs` -->"
END = "<!-- END operations -->"
EXIT_BEGIN = "<!-- BEGIN exit-codes: generated from runtime/errors.py by `make specs` -->"
EXIT_END = "<!-- END exit-codes -->"
# the documents that show the exit-code table, under the repository's root
EXIT_CODE_DOCUMENTS = ("README.md", "specs/capability-spec.md")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _target(op: Operation) -> str:
    """What the operation sends or runs: its routes, its GraphQL document, its program."""
    if op.routes:
        return ", ".join(op.routes)
    if op.document:
        return op.document.split("(", 1)[0].split("{", 1)[0].strip() + " (one request)"
    if op.program:
        return f"`{op.program} {' '.join(op.words)}`; its flags pass through"
    if op.transport == "local":
        return "-"
    return f"the {'document' if op.transport == 'graphql' else 'route'} given"


def _arguments(op: Operation) -> str:
    parts = []
    for positional in op.positionals:
        described = describe_positional(positional)
        parts.append(f"`{positional.name}`" + (f": {described}" if described else ""))
    parts.extend(f"`{describe_option(option)}`" for option in op.options or ())
    if op.options is None:
        parts.append("any `key=value`")
    return "; ".join(parts) or "-"


def operations_markdown(provider: Provider) -> str:
    """The provider's operation table, as Markdown."""
    operations: tuple[Operation, ...] = provider.operations
    several = len({op.transport for op in operations}) > 1
    remote = any(op.transport != "local" for op in operations)
    headers = ["operation", "transport", "effect", "route or command", "arguments", "summary"]
    keep = [True, several, True, remote, True, True]
    rows = [
        [
            f"`{op.form()}`",
            op.transport,
            "/".join(op.possible_effects()),
            _target(op),
            _arguments(op),
            op.summary,
        ]
        for op in operations
    ]
    lines = [
        "| " + " | ".join(_cell(c) for c, k in zip(row, keep, strict=True) if k) + " |"
        for row in [headers, ["---"] * len(headers), *rows]
    ]
    return "\n".join(lines)


def exit_codes_markdown() -> str:
    """The exit-code table, as Markdown."""
    rows = [["code", "meaning"], ["---", "---"]]
    rows += [[str(int(code)), code.meaning] for code in ExitCode]
    return "\n".join("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)


def _between(text: str, begin_marker: str, end_marker: str, table: str, what: str) -> str:
    begin, end = text.find(begin_marker), text.find(end_marker)
    if begin < 0 or end < begin:
        raise ValueError(f"{what} has no {begin_marker} ... {end_marker} markers")
    return f"{text[: begin + len(begin_marker)]}\n{table}\n{text[end:]}"


def rewrite(text: str, provider: Provider) -> str:
    """``text`` with the operation table between the markers generated afresh."""
    table = operations_markdown(provider)
    return _between(text, BEGIN, END, table, f"the spec of '{provider.name}'")


def rewrite_exit_codes(text: str, what: str = "the document") -> str:
    """``text`` with the exit-code table between the markers generated afresh."""
    return _between(text, EXIT_BEGIN, EXIT_END, exit_codes_markdown(), what)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.cli.spec_tables")
    parser.add_argument("folder", nargs="?", default="specs", help="the specs folder")
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 if stale")
    options = parser.parse_args(argv)
    from runtime.home.registry import load_registry

    registry = load_registry()
    made: list[tuple[Path, str, str]] = []  # (document, its text, the text it should hold)
    for name in registry.names():
        path = Path(options.folder) / f"{name}.md"
        provider = registry.get(name)
        if provider is None or not path.is_file():
            continue  # a provider of another package documents itself
        text = path.read_text(encoding="utf-8")
        made.append((path, text, rewrite(text, provider)))
    for document in EXIT_CODE_DOCUMENTS:
        path = Path(options.folder).parent / document
        text = path.read_text(encoding="utf-8")
        made.append((path, text, rewrite_exit_codes(text, str(path))))
    stale = []
    for path, text, fresh in made:
        if fresh != text:
            stale.append(str(path))
            if not options.check:
                path.write_text(fresh, encoding="utf-8")
    if stale:
        verb = "is stale (run `make specs`)" if options.check else "rewritten"
        print("\n".join(f"{path}: {verb}" for path in stale), file=sys.stderr)
    return 1 if stale and options.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
