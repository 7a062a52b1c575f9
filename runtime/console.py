"""The ``runtime`` console script and ``python -m runtime``: :func:`runtime.cli.command`,
loaded under a guard.

Loading the command's modules (typer, click) takes a moment before :mod:`runtime.cli`
can catch anything: a Ctrl-C in it ends the command as one at any later moment does
(``interrupted`` on stderr, exit 130), not with a traceback. Part of the CLI layer.

``runtime agent hook ...``, the shell-hook guard an assistant runs before every shell
command, is dispatched here, before the command line is loaded: typer alone costs
more than the guard's whole decision (ARCHITECTURE.md, "Measured choices"). The same
command through typer (``runtime -o json agent hook claude``) runs the same code.
"""

from __future__ import annotations

import sys


def command() -> None:
    if sys.argv[1:3] == ["agent", "hook"]:
        from runtime.agent.hook import main as hook

        try:
            code = hook(sys.argv[3:])
        except KeyboardInterrupt:
            code = 130
        raise SystemExit(code)
    try:
        from runtime.cli import command as run
    except KeyboardInterrupt:
        from runtime.errors import Interrupted

        interrupted = Interrupted()
        sys.stderr.write(f"{interrupted.message}\n")
        raise SystemExit(int(interrupted.exit_code)) from None
    run()
