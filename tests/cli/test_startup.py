"""Start-up stays cheap: `runtime --version` and `--help` import only what they need (counts, not times)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import json, sys
from runtime.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout.write("\\n" + json.dumps(sorted(sys.modules)))
"""

HEAVY = (
    "httpx",
    "keyring",
    "structlog",
    "rich",
    "strictyaml",
    "providers",
    "importlib.metadata",
    "runtime.plan.policy",
    "runtime.plan.build",
    "runtime.execute.engine",
    "runtime.execute.process",
    "packaging",
)


def imported(*args: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [("--version",), ("--help",)])
def test_start_up_imports_nothing_heavy(args: tuple[str, ...]) -> None:
    modules = imported(*args)
    loaded = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert loaded == [], loaded


def test_a_command_imports_only_its_own_module() -> None:
    modules = imported("version")
    assert "runtime.cli.commands" in modules
    assert not {"runtime.cli.run_cmds", "runtime.cli.auth_cmds", "runtime.cli.admin_cmds"} & set(
        modules
    )


# An exit hook registered before main() runs after main's own (hooks run last in, first out).
EXIT_PROBE = """
import atexit, gc, sys
atexit.register(lambda: sys.stderr.write(f"frozen at exit: {gc.get_freeze_count()}\\n"))
if sys.argv[1] == "main":
    from runtime.cli import main
    main(sys.argv[2:])
"""


def frozen_at_exit(home: Path, *args: str) -> tuple[int, int]:
    """The exit code and the number of frozen objects when the probe's exit hook ran."""
    env = {**os.environ, "RUNTIME_HOME": str(home)}
    out = subprocess.run(
        [sys.executable, "-c", EXIT_PROBE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    line = out.stderr.strip().splitlines()[-1]
    assert line.startswith("frozen at exit: "), out.stderr
    return out.returncode, int(line.rsplit(" ", 1)[1])


@pytest.mark.parametrize(
    ("args", "code"), [(("--version",), 0), (("capability", "validate", "no-such.md"), 2)]
)
def test_the_heap_is_frozen_at_exit_so_shutdown_does_not_walk_it(
    tmp_path: Path, args: tuple[str, ...], code: int
) -> None:
    # the interpreter's shutdown collections skip frozen objects (bench/, figure 7d);
    # also after a refusal (exit code 2: the file to validate does not exist)
    assert frozen_at_exit(tmp_path, "nothing") == (0, 0)  # the probe itself freezes nothing
    exit_code, frozen = frozen_at_exit(tmp_path, "main", *args)
    assert exit_code == code
    assert frozen > 1000


def test_calling_main_in_process_leaves_the_heap_unfrozen() -> None:
    # a process that calls main() and goes on (the tests) keeps a normal heap
    import gc

    from runtime.cli import main

    before = gc.get_freeze_count()
    with pytest.raises(SystemExit):
        main(["--version"])
    assert gc.get_freeze_count() == before
