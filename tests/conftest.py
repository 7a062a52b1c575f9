"""Shared fixtures: the real CLI entry point, in process and as a subprocess.

``cli`` calls :func:`runtime.cli.main` (what the ``runtime`` console script
calls) with a pinned environment, working directory and Runtime Home.
``cli_proc`` runs the installed ``runtime`` executable in a child process, for
signals, start-up and anything that must not share this interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
RUNTIME_BIN = Path(sys.executable).with_name("runtime")


def _missing(message: str) -> None:
    """Skip the test for a dependency not installed here, or fail under
    RUNTIME_REQUIRE_INTEGRATION=1 (CI), where every one must be."""
    if os.environ.get("RUNTIME_REQUIRE_INTEGRATION") == "1":
        pytest.fail(f"{message} (RUNTIME_REQUIRE_INTEGRATION=1 is set, so this is an error)")
    pytest.skip(message)


def require_tool(name: str, why: str) -> None:
    """Skip (or fail under RUNTIME_REQUIRE_INTEGRATION=1) when a system tool is missing."""
    import shutil

    if shutil.which(name) is None:
        _missing(f"{name} is not installed ({why}); install it or run .ci/run")


def require_graphql_schema(why: str) -> None:
    """Skip (or fail under RUNTIME_REQUIRE_INTEGRATION=1) without GitHub's GraphQL schema,
    an npm test dependency (``tests/npm``)."""
    from tests.github_double import SchemaNotInstalledError, schema_path

    try:
        schema_path()
    except SchemaNotInstalledError as exc:
        _missing(f"{why}: {exc}")


@pytest.fixture
def graphql_schema() -> None:
    """For a test that sends GraphQL to the GitHub double, which checks it against the schema."""
    require_graphql_schema("the GitHub double checks GraphQL queries against GitHub's schema")


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def base_env(home: Path) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home.parent),
        "LANG": "C.UTF-8",
        "RUNTIME_HOME": str(home),
        # the CLI a test starts runs this checkout's code (a second worktree's too, with
        # the first one's venv); in a clone it is what the editable install points at
        "PYTHONPATH": str(REPO),
    }
    return env


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    return base_env(home)


@pytest.fixture
def cli(
    work: Path,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Callable[..., Result]]:
    def run(*args: str, cwd: Path | None = None, extra_env: dict[str, str] | None = None) -> Result:
        from runtime.cli import main

        for key in list(os.environ):
            monkeypatch.delenv(key, raising=False)
        for key, value in {**env, **(extra_env or {})}.items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(cwd or work)
        capsys.readouterr()
        try:
            main(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
        else:  # pragma: no cover - main always exits
            code = 0
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    yield run


@pytest.fixture
def cli_proc(work: Path, env: dict[str, str]) -> Callable[..., Result]:
    def run(
        *args: str,
        cwd: Path | None = None,
        extra_env: dict[str, str] | None = None,
        timeout: float = 60,
        input: str | None = None,
        stdout: Any = subprocess.PIPE,
        stderr: Any = subprocess.PIPE,
        closed: tuple[int, ...] = (),
    ) -> Result:
        """``stdout``, ``stderr``: where they go (a file, a descriptor; else captured);
        ``closed``: standard descriptors the child starts with closed (``>&-``, ``<&-``)."""

        def close() -> None:
            for fd in closed:
                os.close(fd)

        proc = subprocess.run(
            [str(RUNTIME_BIN), *args],
            cwd=cwd or work,
            env={**env, **(extra_env or {})},
            stdout=stdout,
            stderr=stderr,
            text=True,
            timeout=timeout,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            preexec_fn=close if closed else None,
        )
        return Result(proc.returncode, proc.stdout or "", proc.stderr or "")

    return run


def run_checkout(
    env: dict[str, str], cwd: Path, *args: str, prefix: tuple[str, ...] = (), timeout: float = 20
) -> Result:
    """This checkout's runtime (``python -m runtime``, the repository first on the path) in
    a child process started through ``prefix`` (a command such as setpriv), under a time
    limit: a hang fails the test."""
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "runtime", *args],
        env={**env, "PYTHONPATH": str(REPO)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def without_read_override() -> tuple[str, ...]:
    """A prefix for :func:`run_checkout` under which a file's mode binds this user: root
    reads any file, so as root its capabilities to do so are dropped (setpriv)."""
    if os.geteuid() != 0:
        return ()
    require_tool("setpriv", "to read files as root without its override")
    caps = "-dac_override,-dac_read_search"
    return ("setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}")


# Folders a Python program needs to start: fake binaries in tests are Python scripts, and a
# binary step runs confined (it reads only the policy's roots and system_paths).
PYTHON_PATHS = tuple(
    dict.fromkeys(
        os.path.realpath(p)
        for p in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)))
    )
)


# What a Python fake binary executes: its interpreter (``#!sys.executable``, or
# ``#!/usr/bin/env python3``), which a confined step may not execute unless admitted.
PYTHON_EXECUTABLES = tuple(
    dict.fromkeys(
        os.path.realpath(p)
        for p in (sys.executable, "/usr/bin/env", "/usr/bin/python3")
        if os.path.exists(p)
    )
)


def admit_python(*fakes: str, also: Sequence[str] = ()) -> str:
    """The policy's admitted_helpers lines that let fake binaries ``fakes`` (Python scripts)
    execute their interpreter when they run confined, and the programs ``also`` names
    (absolute paths: what a fake runs)."""
    admitted = [*PYTHON_EXECUTABLES, *(os.path.realpath(p) for p in also)]
    helpers = ", ".join(f'"{p}"' for p in dict.fromkeys(admitted))
    return "admitted_helpers:\n" + "".join(f"  {n}: [{helpers}]\n" for n in fakes)


def confinement_lines(
    *writable: Path, fakes: Sequence[str] = ("gh",), also: Sequence[str] = ()
) -> str:
    """Policy lines that let a Python fake binary named one of ``fakes`` run confined (and
    run ``also``) and record into ``writable`` (besides the working directory)."""
    paths = ", ".join(f'"{p}"' for p in PYTHON_PATHS)
    lines = f"system_paths: [{paths}]\n" + admit_python(*fakes, also=also)
    if writable:
        roots = ", ".join(f'"{p}"' for p in (".", *writable))
        lines += f"write_roots: [{roots}]\n"
    return lines


def keyring_service(host: str) -> str:
    """The keyring service the github provider declares for ``host``'s token."""
    from providers.github import CREDENTIALS

    return CREDENTIALS[0].keyring_service.format(host=host)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def capability(body: str, frontmatter: str | None = None, title: str = "Test") -> str:
    """A capability file around a runtime block body."""
    head = f"---\n{frontmatter}---\n\n" if frontmatter is not None else ""
    return f"{head}# {title}\n\nProse.\n\n```runtime\n{body}```\n"


def schema(name: str) -> dict[str, Any]:
    return json.loads((REPO / "specs" / "schemas" / f"{name}.schema.json").read_text())


def check_schema(doc: Any, name: str) -> None:
    import jsonschema

    jsonschema.validate(doc, schema(name))
