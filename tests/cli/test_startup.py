"""Start-up stays cheap: `runtime --version` and `--help` import only what they need (counts, not times)."""

from __future__ import annotations

import json
import subprocess
import sys

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
    "runtime.plan.policy_file",
    "runtime.plan.build",
    "runtime.execute.engine",
    "runtime.execute.process",
    "packaging",
    # the MCP SDK and what it stands on: `runtime mcp serve` and `preflight --live` only
    "mcp",
    "mcp_types",
    "anyio",
    "pydantic",
    "runtime.cli.mcp_cmd",
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


def test_the_edit_libraries_load_only_when_an_edit_runs() -> None:
    # the files provider's declarations, its edits' included, import none of them
    modules = imported("files", "--help")
    assert "providers.files" in modules
    assert [
        m for m in modules if m.partition(".")[0] in ("ruamel", "tree_sitter", "tree_sitter_hcl")
    ] == []


def test_a_command_imports_only_its_own_module() -> None:
    modules = imported("version")
    assert "runtime.cli.commands" in modules
    assert not {"runtime.cli.run_cmds", "runtime.cli.auth_cmds", "runtime.cli.admin_cmds"} & set(
        modules
    )


# A Ctrl-C that arrives while the command's modules load, made certain: the import of
# runtime.cli is where it lands.
INTERRUPTED_WHILE_LOADING = """
import builtins
real = builtins.__import__
def interrupted(name, *args, **kwargs):
    if name == "runtime.cli":
        raise KeyboardInterrupt
    return real(name, *args, **kwargs)
builtins.__import__ = interrupted
from runtime.console import command
command()
"""


def test_a_ctrl_c_while_the_command_loads_is_an_interruption_not_a_traceback() -> None:
    from importlib.metadata import entry_points

    # the installed `runtime` (and `python -m runtime`) run through the guard
    (script,) = entry_points(group="console_scripts", name="runtime")
    assert script.value == "runtime.console:command"
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_WHILE_LOADING], capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "interrupted\n")
