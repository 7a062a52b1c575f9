"""The ``runtime`` console script and ``python -m runtime``: :func:`runtime.cli.command`,
loaded under a guard.

Loading the command's modules (typer, click) takes a moment before :mod:`runtime.cli`
can catch anything: a Ctrl-C in it ends the command as one at any later moment does
(``interrupted`` on stderr, exit 130), not with a traceback. Part of the CLI layer.
"""

from __future__ import annotations

import sys

from runtime.errors import Interrupted


def command() -> None:
    try:
        from runtime.cli import command as run
    except KeyboardInterrupt:
        interrupted = Interrupted()
        sys.stderr.write(f"{interrupted.message}\n")
        raise SystemExit(int(interrupted.exit_code)) from None
    run()
