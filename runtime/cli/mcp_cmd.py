"""``runtime mcp serve``: runtime as an MCP server over stdio, for AI assistants.

The command checks what it can before it serves (the SDK is installed, Runtime
Home and the policy load) and hands the rest to :mod:`runtime.cli.mcp_server`,
which alone imports the SDK.
"""

from __future__ import annotations

import typer

from runtime.cli.session import ensure_home, workspace

mcp_app = typer.Typer(
    rich_markup_mode=None,
    help="Serve runtime to AI assistants over the Model Context Protocol.",
    no_args_is_help=True,
)


@mcp_app.callback()
def _mcp_group() -> None:
    """Serve runtime to AI assistants over the Model Context Protocol (a group, so that
    `serve` stays a subcommand)."""


@mcp_app.command("serve")
def serve_cmd() -> None:
    """Serve MCP over stdin and stdout until the client closes stdin.

    Tools: each catalog capability the policy's agents section offers, validate and plan
    for capability text the assistant wrote (execute too where the policy says so), and
    operation for one provider operation. Resources: the specs. Every call is validated,
    decided by the policy, preflighted and recorded in the audit log, as on the command
    line (origin mcp). Nothing but the protocol is written on stdout."""
    import os
    from pathlib import Path

    from runtime.errors import UsageError

    try:
        from runtime.cli.mcp_server import serve
    except ImportError as exc:
        raise UsageError(
            f"runtime mcp serve needs the MCP SDK, which is not installed (no module "
            f"{exc.name or 'mcp'!r})",
            hint="install runtime with its mcp extra: pip install 'runtime-engine[mcp]'",
        ) from None
    from runtime.cli.mcp_calls import Session

    ws = workspace()
    ensure_home(ws)
    ws.policy  # noqa: B018 - a broken policy is refused before serving, at its position
    raise typer.Exit(serve(Session(environ=dict(os.environ), cwd=Path.cwd())))
