"""Shared helpers of the adversarial campaigns.

* :data:`FULL`: ``RUNTIME_FULL_CAMPAIGNS=1`` selects the full campaign sizes.
* ``figure``: prints a campaign's one figure line to the terminal, past
  pytest's output capture, so it shows in a plain ``pytest -q`` run.
* :func:`fake_binary`: a small executable Python script (the venv's
  interpreter in its shebang), for binaries that record what they receive.
* :func:`user_policy`: a user policy file for ``RUNTIME_POLICY_FILE``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.conftest import confinement_lines

FULL = os.environ.get("RUNTIME_FULL_CAMPAIGNS") == "1"


def sized(default: int, full: int) -> int:
    """The campaign size: ``full`` under RUNTIME_FULL_CAMPAIGNS=1, else ``default``."""
    return full if FULL else default


@pytest.fixture
def figure(capsys: pytest.CaptureFixture[str]) -> Callable[[str], None]:
    def show(line: str) -> None:
        with capsys.disabled():
            sys.stdout.write(f"\n{line}\n")
            sys.stdout.flush()

    return show


def fake_binary(folder: Path, name: str, body: str) -> Path:
    """An executable ``folder/name`` running ``body`` (Python) with this interpreter."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!{sys.executable} -IS\n{body}", encoding="utf-8")
    path.chmod(0o755)
    return path


# A binary that appends one JSON line {"argv": [...], "env": {...}} to $DUMP_FILE's
# target. The target is baked in (the child environment is the policy's allow-list,
# so a variable would not reach it).
DUMP_SCRIPT = """\
import json, os, sys
with open({target!r}, "a", encoding="utf-8", errors="surrogateescape") as fh:
    fh.write(json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ)}}) + "\\n")
"""


def dump_binary(folder: Path, name: str, target: Path) -> Path:
    """A binary that records its argv and environment (one JSON line per call) in ``target``."""
    return fake_binary(folder, name, DUMP_SCRIPT.format(target=str(target)))


def user_policy(
    path: Path,
    allowed: Sequence[str] = (),
    extra: str = "",
    writable: Sequence[Path] = (),
    also: Sequence[str] = (),
) -> Path:
    """A user policy allowing ``allowed`` binaries (on top of the shipped default), under which
    Python fake binaries (of those names, gh or git) run confined, may run ``also``
    (absolute paths) and record into ``writable``. It allows running unconfined too, for the cases that run on a PATH
    without bwrap: a confined case is not changed by it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    names = ", ".join(f'"{n}"' for n in allowed)
    fakes = dict.fromkeys([*allowed, "gh", "git"])
    confinement = confinement_lines(*writable, fakes=list(fakes), also=also)
    path.write_text(
        f"version: v1\nallowed_binaries: [{names}]\nallow_unconfined: true\n{confinement}{extra}",
        encoding="utf-8",
    )
    return path
