"""Files runtime leaves behind, and only those, are removed (issue 18 D).

* ``files write`` / ``append`` name their temporaries
  ``.NAME.runtime-tmp-PID-RANDOM-TAG``, TAG keyed with Runtime Home's
  ``temporaries.key``; a sweep removes only names whose TAG checks out, so a
  user's file named like one is never deleted.
* A Home refresh killed with SIGKILL leaves ``.NAME.PID.tmp``; the next
  ``runtime bootstrap`` removes it, but only that shape, for names runtime
  writes, in the places it owns, and only when PID is gone.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import REPO, Result, capability, write


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".runtime-tmp-" in p.name)


def home_files(home: Path) -> dict[str, tuple[int, int]]:
    """Every file in Home except the audit log, with its inode and modification time."""
    return {
        p.relative_to(home).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in home.rglob("*")
        if p.is_file() and p.parent.name != "audit"
    }


# -- temporaries of files write ------------------------------------------------------------


def test_a_users_file_named_like_a_temporary_is_never_swept(
    cli: Callable[..., Result], work: Path, home: Path
) -> None:
    dead = dead_pid()
    mine = [
        f".x.txt.runtime-tmp-{dead}-abc123",  # the shape of an earlier version's names
        f".x.txt.runtime-tmp-{dead}-0123456789ab-0123456789abcdef",  # today's shape
        f".notes.runtime-tmp-{dead}-deadbeef0000-{'0' * 16}",
    ]
    for name in mine:
        (work / name).write_text("my own file", encoding="utf-8")
    assert cli("files", "write", "x.txt", "one").code == 0
    assert cli("files", "append", "x.txt", "two").code == 0
    write(
        work / "cap.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [write, y.txt, z]\n"),
    )
    assert cli("capability", "execute", "cap.md").code == 0
    assert temporaries(work) == sorted(mine)
    for name in mine:
        assert (work / name).read_text() == "my own file"


def test_a_temporary_runtime_left_is_swept_by_the_next_write(
    cli: Callable[..., Result], work: Path, home: Path
) -> None:
    from providers.files.atomic import TempNames
    from runtime.home.layout import home_key

    assert cli("files", "write", "x.txt", "one").code == 0  # Home and its key exist
    key = home / "temporaries.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    names = TempNames(lambda: home_key(home, "temporaries"))
    dead = dead_pid()
    left = [names.new("x.txt", pid=dead), names.new("other.txt", pid=dead)]
    running = names.new("x.txt", pid=os.getppid())  # a writer that is still alive
    for name in (*left, running):
        (work / name).write_text("partial", encoding="utf-8")
    assert cli("files", "write", "x.txt", "two").code == 0
    assert temporaries(work) == [running]
    assert (work / "x.txt").read_text() == "two\n"


def test_naming_a_temporary_writes_nothing_more_in_home(
    cli: Callable[..., Result], work: Path, home: Path
) -> None:
    """Figure 5 of bench/ measures this path: the key is made once, then only read."""
    assert cli("files", "write", "x.txt", "one").code == 0
    before = home_files(home)
    for i in range(3):
        assert cli("files", "write", "x.txt", f"again {i}").code == 0
        assert cli("files", "append", "x.txt", "more").code == 0
    assert home_files(home) == before


# -- temporaries of a Home refresh ---------------------------------------------------------


def test_bootstrap_removes_what_a_killed_refresh_left(
    cli: Callable[..., Result], home: Path, env: dict[str, str]
) -> None:
    """A real SIGKILL: a child refreshes Home and dies at its first rename."""
    child = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from runtime.home import layout as home\n"
        "os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)\n"
        "home.refresh(home.Home(Path(sys.argv[1])), verify=True)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", child, str(home)],
        env={**env, "PYTHONPATH": str(REPO)},
        stderr=subprocess.PIPE,
    )
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, stderr
    left = [p for p in home.rglob("*.tmp") if p.name.endswith(f".{proc.pid}.tmp")]
    assert len(left) == 1, list(home.rglob("*"))

    result = cli("bootstrap")
    assert result.code == 0, result.stderr
    assert not left[0].exists()
    assert not [p for p in home.rglob("*") if p.name.endswith(".tmp")]


def test_bootstrap_removes_only_runtimes_own_temporaries(
    cli: Callable[..., Result], home: Path
) -> None:
    assert cli("bootstrap").code == 0
    dead, alive = dead_pid(), os.getppid()
    removed = [
        f".version.{dead}.tmp",
        f".manifest.json.{dead}.tmp",
        f".contexts.json.{dead}.tmp",
        f".contexts.{dead}.tmp",  # what an earlier version named contexts.json's temporary
        f".temporaries.key.{dead}.tmp",
        f"specs/.capability-spec.md.{dead}.tmp",
        f"specs/schemas/.error.schema.json.{dead}.tmp",
    ]
    kept = [
        f".version.{alive}.tmp",  # its writer is alive
        f".version.{dead}.tmp.bak",
        f".version.{dead}x.tmp",
        ".version..tmp",
        f".policy.yaml.{dead}.tmp",  # runtime never writes policy.yaml
        f".config.yaml.{dead}.tmp",
        f"capabilities/.mine.md.{dead}.tmp",  # the user's folders
        f"audit/.audit.jsonl.{dead}.tmp",
        f"specs/.my-notes.md.{dead}.tmp",  # in specs/, but not a file runtime ships
        f"specs/.capability-spec.md.{dead}.temp",
        f"elsewhere/.version.{dead}.tmp",
    ]
    for rel in (*removed, *kept):
        write(home / rel, "x")
    (home / f".capability-spec.md.{dead}.tmp").mkdir()  # a folder is never removed
    result = cli("bootstrap")
    assert result.code == 0, result.stderr
    for rel in removed:
        assert not (home / rel).exists(), rel
    for rel in kept:
        assert (home / rel).read_text() == "x", rel
    assert (home / f".capability-spec.md.{dead}.tmp").is_dir()
