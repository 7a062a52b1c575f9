"""Tests for the files provider: operations and path confinement.

They call :func:`providers.files.ops.execute` and ``inspect`` directly with a
real :class:`runtime.plan.policy.Policy` whose roots point into ``tmp_path``.
"""

from __future__ import annotations

import copy
import functools
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from runtime.home.layout import home_key

# Make the repository root importable however pytest is started.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from providers.files import OPERATIONS
from providers.files import ops as files_ops
from providers.files.atomic import TempNames
from providers.files.confine import Confined, UnusablePath, confine, open_parent
from runtime.errors import PolicyRefusal
from runtime.execute.services import RunServices
from runtime.plan.policy import Policy
from runtime.plan.policy_file import load_policy
from runtime.plan.workspace import Workspace
from runtime.provider import BoundCall, StepEnvironment, StepError, StepOutcome
from runtime.redact import Redactor

OPS = {op.words[0]: op for op in OPERATIONS}


# -- fixtures and helpers -----------------------------------------------------------


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


@pytest.fixture
def root(base: Path) -> Path:
    r = base / "root"
    r.mkdir()
    return r


@pytest.fixture
def outside(base: Path) -> Path:
    o = base / "outside"
    o.mkdir()
    (o / "secret.txt").write_text("top secret", encoding="utf-8")
    return o


@functools.cache
def _default_policy() -> Policy:
    return load_policy(None)


def make_policy(read: list[Path], write: list[Path] | None = None) -> Policy:
    policy = copy.deepcopy(_default_policy())
    policy.read_roots = ([str(r) for r in read], "test")
    policy.write_roots = ([str(r) for r in (read if write is None else write)], "test")
    return policy


def runtime_home(root: Path) -> Path:
    """The Runtime Home of these direct calls: beside the root, inside the test's folder."""
    return root.parent / "runtime-home"


def make_env(
    root: Path,
    *,
    cwd: Path | None = None,
    write: list[Path] | None = None,
    read: list[Path] | None = None,
) -> StepEnvironment:
    ws = Workspace(environ={"RUNTIME_HOME": str(runtime_home(root))}, cwd=cwd or root)
    ws.__dict__["policy"] = make_policy(read or [root], write)  # the run's policy, pinned
    return StepEnvironment(run=RunServices(ws, Redactor()), timeout=10)


def bound(word: str, *args: str) -> BoundCall:
    names = [p.name for p in OPS[word].positionals]
    return BoundCall(
        positionals=dict(zip(names, args, strict=False)),
        options=[],
        passthrough=[],
        args=list(args),
    )


def run(env: StepEnvironment, word: str, *args: str) -> StepOutcome:
    return files_ops.execute(OPS[word], bound(word, *args), env)


def refused(env: StepEnvironment, word: str, *args: str) -> PolicyRefusal:
    with pytest.raises(PolicyRefusal) as info:
        run(env, word, *args)
    return info.value


def failed(env: StepEnvironment, word: str, *args: str) -> StepError:
    with pytest.raises(StepError) as info:
        run(env, word, *args)
    return info.value


def inspect(
    root: Path, word: str, *args: str, cwd: Path | None = None, write: list[Path] | None = None
) -> Any:
    env = make_env(root, cwd=cwd, write=write)
    return files_ops.inspect(OPS[word], bound(word, *args), env.run)


def temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".runtime-tmp-" in p.name)


# -- read -------------------------------------------------------------------------


def test_read_returns_text(root: Path) -> None:
    (root / "notes.txt").write_text("héllo\nworld", encoding="utf-8")
    out = run(make_env(root), "read", "notes.txt")
    assert out.ok
    assert out.output == "héllo\nworld"
    assert out.data == {
        "path": "notes.txt",
        "content": "héllo\nworld",
        "bytes": len("héllo\nworld".encode()),
    }


def test_read_empty_file(root: Path) -> None:
    (root / "empty").write_bytes(b"")
    assert run(make_env(root), "read", "empty").output == ""


def test_read_binary_is_refused_cleanly(root: Path) -> None:
    (root / "blob.bin").write_bytes(b"abc\xff\xfe\x00def")
    err = failed(make_env(root), "read", "blob.bin")
    assert "not UTF-8 text" in err.message
    assert "9 bytes" in err.message
    assert "offset 3" in err.message


def test_read_too_large(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files_ops, "MAX_READ_BYTES", 10)
    (root / "big.txt").write_text("x" * 11, encoding="utf-8")
    (root / "fits.txt").write_text("x" * 10, encoding="utf-8")
    err = failed(make_env(root), "read", "big.txt")
    assert "11 bytes" in err.message
    assert "limit of 10 bytes" in err.message
    assert run(make_env(root), "read", "fits.txt").output == "x" * 10


def test_read_default_limit_is_16_mib() -> None:
    assert files_ops.MAX_READ_BYTES == 16 * 1024 * 1024


def test_read_directory_is_an_error(root: Path) -> None:
    (root / "docs").mkdir()
    err = failed(make_env(root), "read", "docs")
    assert "is a folder" in err.message
    assert err.hint and "files list" in err.hint
    assert "is a folder" in failed(make_env(root), "read", ".").message


def test_read_missing_file(root: Path) -> None:
    assert "no such file" in failed(make_env(root), "read", "nope.txt").message
    assert "no such file" in failed(make_env(root), "read", "no/such/dir.txt").message


def test_read_fifo_is_not_a_regular_file(root: Path) -> None:
    os.mkfifo(root / "pipe")
    message = failed(make_env(root), "read", "pipe").message
    assert message.startswith("'pipe' is a named pipe, not a regular file ("), message


def test_read_socket_is_not_a_regular_file(root: Path) -> None:
    # opening a socket fails (ENXIO: "No such device or address"); said as for a pipe
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(root / "sock"))
        message = failed(make_env(root), "read", "sock").message
    assert message.startswith("'sock' is a socket, not a regular file ("), message


def test_read_relative_to_cwd(root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "a.txt").write_text("A", encoding="utf-8")
    (root / "b.txt").write_text("B", encoding="utf-8")
    env = make_env(root, cwd=root / "sub")
    assert run(env, "read", "a.txt").output == "A"
    assert run(env, "read", "../b.txt").output == "B"
    assert run(env, "read", str(root / "b.txt")).output == "B"


# -- write ------------------------------------------------------------------------


def test_write_ends_the_content_with_one_newline(root: Path) -> None:
    out = run(make_env(root), "write", "out.txt", "héllo")
    assert out.ok
    assert (root / "out.txt").read_bytes() == "héllo\n".encode()
    assert out.output == "wrote 7 bytes to out.txt"
    assert out.data == {"path": "out.txt", "bytes": 7}
    run(make_env(root), "write", "out.txt", "two\r\nlines\n")  # not doubled
    assert (root / "out.txt").read_bytes() == b"two\r\nlines\n"


def test_write_empty_content(root: Path) -> None:
    run(make_env(root), "write", "empty.txt", "")
    assert (root / "empty.txt").read_bytes() == b""


def test_write_replaces_and_keeps_mode(root: Path) -> None:
    target = root / "conf.txt"
    target.write_text("old content that is longer", encoding="utf-8")
    target.chmod(0o640)
    run(make_env(root), "write", "conf.txt", "new")
    assert target.read_text(encoding="utf-8") == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_write_new_file_mode_follows_umask(root: Path) -> None:
    old = os.umask(0o027)
    try:
        run(make_env(root), "write", "new.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((root / "new.txt").stat().st_mode) == 0o640


def test_write_leaves_no_temp_files(root: Path) -> None:
    run(make_env(root), "write", "a.txt", "1")
    run(make_env(root), "write", "a.txt", "2")
    assert temp_files(root) == []


def test_write_missing_parent(root: Path) -> None:
    err = failed(make_env(root), "write", "missing/dir/f.txt", "x")
    assert "parent folder" in err.message
    assert "does not exist" in err.message
    assert str(root / "missing") in err.message
    assert err.hint == "create it first with `files mkdir`"
    assert not (root / "missing").exists()


def test_write_over_folder_is_an_error(root: Path) -> None:
    (root / "d").mkdir()
    assert "is a folder" in failed(make_env(root), "write", "d", "x").message
    assert "is a folder" in failed(make_env(root), "write", ".", "x").message


def test_write_through_a_file_component_is_an_error(root: Path) -> None:
    (root / "f.txt").write_text("x", encoding="utf-8")
    err = failed(make_env(root), "write", "f.txt/g.txt", "x")
    assert "not a folder" in err.message


def test_write_replaces_hard_link_entry_only(root: Path) -> None:
    original = root / "a.txt"
    original.write_text("shared", encoding="utf-8")
    os.link(original, root / "b.txt")
    run(make_env(root), "write", "b.txt", "mine")
    assert (root / "b.txt").read_text(encoding="utf-8") == "mine\n"
    assert original.read_text(encoding="utf-8") == "shared"


# -- append -----------------------------------------------------------------------


def test_append_adds_newline_and_creates_file(root: Path) -> None:
    env = make_env(root)
    out = run(env, "append", "log.txt", "one")
    assert "created" in out.output
    run(env, "append", "log.txt", "two")
    run(env, "append", "log.txt", "three\n")  # not doubled
    assert (root / "log.txt").read_bytes() == b"one\ntwo\nthree\n"
    out = run(env, "append", "log.txt", "")  # nothing to add, as write leaves "" empty
    assert out.output == "appended 0 bytes to log.txt"
    assert (root / "log.txt").read_bytes() == b"one\ntwo\nthree\n"
    assert temp_files(root) == []


def test_append_keeps_existing_content_and_mode(root: Path) -> None:
    target = root / "log.txt"
    target.write_bytes(b"no newline at end")
    target.chmod(0o600)
    run(make_env(root), "append", "log.txt", "more")
    assert target.read_bytes() == b"no newline at endmore\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_append_missing_parent(root: Path) -> None:
    err = failed(make_env(root), "append", "nope/log.txt", "x")
    assert "parent folder" in err.message
    assert err.hint == "create it first with `files mkdir`"


def test_append_replaces_the_file_atomically(root: Path) -> None:
    target = root / "log.txt"
    target.write_text("a\n", encoding="utf-8")
    before = target.stat().st_ino
    run(make_env(root), "append", "log.txt", "b")
    # A new inode renamed into place: readers see the old or the new file.
    assert target.stat().st_ino != before
    assert target.read_text(encoding="utf-8") == "a\nb\n"


def test_failed_write_leaves_old_content_and_no_temp(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = root / "log.txt"
    target.write_text("old\n", encoding="utf-8")

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(files_ops.os, "fsync", broken_fsync)
    for word in ("append", "write"):
        err = failed(make_env(root), word, "log.txt", "new")
        assert "Input/output error" in err.message
        assert target.read_text(encoding="utf-8") == "old\n"
        assert temp_files(root) == []


def test_concurrent_appends_are_serialized(root: Path) -> None:
    env = make_env(root)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(15):
                run(env, "append", "log.txt", f"w{n}-{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    lines = (root / "log.txt").read_text(encoding="utf-8").splitlines()
    assert sorted(lines) == sorted(f"w{n}-{i}" for n in range(4) for i in range(15))
    assert temp_files(root) == []


# -- list -------------------------------------------------------------------------


def test_list_entries_sorted_with_types_and_sizes(root: Path) -> None:
    (root / "b.txt").write_bytes(b"12345")
    (root / "a-dir").mkdir()
    (root / "c-link").symlink_to("b.txt")
    os.mkfifo(root / "d-pipe")
    (root / "A.txt").write_bytes(b"")
    out = run(make_env(root), "list", ".")
    entries = out.data["entries"]
    assert [e["name"] for e in entries] == ["A.txt", "a-dir", "b.txt", "c-link", "d-pipe"]
    assert [e["type"] for e in entries] == ["file", "dir", "file", "symlink", "other"]
    sizes = {e["name"]: e["size"] for e in entries}
    assert sizes["b.txt"] == 5
    assert sizes["A.txt"] == 0
    assert sizes["a-dir"] is None
    assert sizes["c-link"] == len("b.txt")
    assert out.data["path"] == "."
    lines = out.output.splitlines()
    assert lines[0].split() == ["TYPE", "SIZE", "NAME"]
    assert lines[1].split() == ["file", "0", "A.txt"]
    assert lines[2].split() == ["dir", "-", "a-dir"]
    # Aligned columns: every name starts at the same column.
    assert len({line.index(e["name"]) for line, e in zip(lines[1:], entries, strict=True)}) == 1


def test_list_subfolder_and_empty(root: Path) -> None:
    (root / "sub").mkdir()
    out = run(make_env(root), "list", "sub")
    assert out.data == {"path": "sub", "entries": []}
    assert out.output == "sub is empty"


def test_list_errors(root: Path) -> None:
    (root / "f.txt").write_text("x", encoding="utf-8")
    assert "not a folder" in failed(make_env(root), "list", "f.txt").message
    assert "no such folder" in failed(make_env(root), "list", "nope").message
    assert "no such folder" in failed(make_env(root), "list", "nope/deeper").message


def test_list_symlinked_folder_inside_root(root: Path) -> None:
    (root / "real").mkdir()
    (root / "real" / "x").write_text("x", encoding="utf-8")
    (root / "alias").symlink_to("real", target_is_directory=True)
    out = run(make_env(root), "list", "alias")
    assert [e["name"] for e in out.data["entries"]] == ["x"]


# -- mkdir ------------------------------------------------------------------------


def test_mkdir_creates_and_is_idempotent(root: Path) -> None:
    env = make_env(root)
    first = run(env, "mkdir", "docs")
    assert first.output == "created docs"
    assert (root / "docs").is_dir()
    second = run(env, "mkdir", "docs")
    assert second.ok
    assert second.output == "docs already exists"
    third = run(env, "mkdir", "docs")
    assert (third.ok, third.output, third.data) == (second.ok, second.output, second.data)
    assert run(env, "mkdir", ".").output == ". already exists"


def test_mkdir_conflict_with_a_file(root: Path) -> None:
    (root / "docs").write_text("x", encoding="utf-8")
    err = failed(make_env(root), "mkdir", "docs")
    assert "already exists and is not a folder" in err.message


def test_mkdir_needs_parent(root: Path) -> None:
    err = failed(make_env(root), "mkdir", "a/b")
    assert "parent folder" in err.message
    assert err.hint == "create it first with `files mkdir`"
    assert not (root / "a").exists()


# -- delete -----------------------------------------------------------------------


def test_delete_file(root: Path) -> None:
    (root / "old.txt").write_text("x", encoding="utf-8")
    out = run(make_env(root), "delete", "old.txt")
    assert out.output == "deleted old.txt"
    assert not (root / "old.txt").exists()


def test_delete_errors(root: Path) -> None:
    (root / "d").mkdir()
    assert "removes files only" in failed(make_env(root), "delete", "d").message
    assert (root / "d").is_dir()
    assert "no such file" in failed(make_env(root), "delete", "nope").message
    assert "is a folder" in failed(make_env(root), "delete", ".").message


# -- confinement: '..' and absolute paths --------------------------------------------


@pytest.mark.parametrize("path", ["../x", "sub/../../x", "sub/../..", "..", "sub/../../root2/x"])
@pytest.mark.parametrize("word", ["read", "write", "append", "list", "mkdir", "delete"])
def test_dotdot_escapes_are_refused(root: Path, path: str, word: str) -> None:
    (root / "sub").mkdir()
    args = [path, "content"] if word in ("write", "append") else [path]
    refusal = refused(make_env(root), word, *args)
    access = "read" if word in ("read", "list") else "write"
    assert refusal.message.startswith(f"refused: {path!r} resolves to ")
    assert f"outside the {access} root {root}" in refusal.message
    assert refusal.hint and f"{access}_roots" in refusal.hint
    assert not (root.parent / "x").exists()


def test_dotdot_that_stays_inside_is_allowed(root: Path) -> None:
    (root / "sub").mkdir()
    run(make_env(root), "write", "sub/../inside.txt", "ok")
    assert (root / "inside.txt").read_text(encoding="utf-8") == "ok\n"


def test_absolute_path_outside_is_refused(root: Path, outside: Path) -> None:
    refusal = refused(make_env(root), "read", str(outside / "secret.txt"))
    assert f"resolves to {outside / 'secret.txt'}" in refusal.message
    assert str(root) in refusal.message
    refusal = refused(make_env(root), "write", "/etc/passwd-runtime-test", "x")
    assert str(root) in refusal.message


def test_refusal_names_every_root(root: Path, base: Path) -> None:
    other = base / "other"
    other.mkdir()
    refusal = refused(make_env(root, read=[root, other]), "read", "/etc/hostname")
    assert f"the read roots {root}, {other}" in refusal.message


def test_read_and_write_roots_are_separate(root: Path) -> None:
    (root / "ro").mkdir()
    (root / "rw").mkdir()
    (root / "ro" / "f.txt").write_text("r", encoding="utf-8")
    env = make_env(root, write=[root / "rw"])
    assert run(env, "read", "ro/f.txt").output == "r"
    refusal = refused(env, "write", "ro/f.txt", "x")
    assert f"outside the write root {root / 'rw'}" in refusal.message
    run(env, "write", "rw/f.txt", "w")
    assert run(env, "list", "rw").data["entries"][0]["name"] == "f.txt"


# -- confinement: symbolic links ---------------------------------------------------


def test_symlink_file_to_outside_is_refused(root: Path, outside: Path) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    env = make_env(root)
    for word, args in [
        ("read", ["link.txt"]),
        ("write", ["link.txt", "x"]),
        ("append", ["link.txt", "x"]),
        ("delete", ["link.txt"]),
    ]:
        refusal = refused(env, word, *args)
        assert f"resolves to {outside / 'secret.txt'}" in refusal.message
        assert str(root) in refusal.message
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "top secret"


def test_dangling_symlink_to_outside_is_refused(root: Path, outside: Path) -> None:
    (root / "new.txt").symlink_to(outside / "created.txt")
    refusal = refused(make_env(root), "write", "new.txt", "x")
    assert str(root) in refusal.message
    assert not (outside / "created.txt").exists()


def test_symlink_folder_component_to_outside_is_refused(root: Path, outside: Path) -> None:
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    env = make_env(root)
    assert str(root) in refused(env, "read", "linkdir/secret.txt").message
    assert str(root) in refused(env, "list", "linkdir").message
    assert str(root) in refused(env, "write", "linkdir/new.txt", "x").message
    assert str(root) in refused(env, "mkdir", "linkdir/sub").message
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symlink_chain(root: Path, outside: Path) -> None:
    (root / "target.txt").write_text("end", encoding="utf-8")
    (root / "c").symlink_to("target.txt")
    (root / "b").symlink_to("c")
    (root / "a").symlink_to(root / "b")
    env = make_env(root)
    assert run(env, "read", "a").output == "end"
    (root / "z").symlink_to(outside / "secret.txt")
    (root / "y").symlink_to("z")
    (root / "x").symlink_to("y")
    refusal = refused(env, "read", "x")
    assert f"resolves to {outside / 'secret.txt'}" in refusal.message
    assert str(root) in refusal.message


def test_symlink_loop_is_refused_cleanly(root: Path) -> None:
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    (root / "self").symlink_to("self")
    env = make_env(root)
    for word, args in [
        ("read", ["loop1"]),
        ("write", ["self", "x"]),
        ("list", ["loop2/deeper"]),
        ("mkdir", ["self"]),
    ]:
        refusal = refused(env, word, *args)
        assert "symbolic link loop" in refusal.message
        assert str(root) in refusal.message


def test_symlink_inside_root_is_followed(root: Path) -> None:
    (root / "real").mkdir()
    (root / "real" / "f.txt").write_text("data", encoding="utf-8")
    (root / "link.txt").symlink_to("real/f.txt")
    (root / "dirlink").symlink_to("real", target_is_directory=True)
    env = make_env(root)
    assert run(env, "read", "link.txt").output == "data"
    assert run(env, "read", "dirlink/f.txt").output == "data"
    run(env, "write", "link.txt", "new")
    # The target was replaced; the link itself stays a link to it.
    assert (root / "link.txt").is_symlink()
    assert (root / "real" / "f.txt").read_text(encoding="utf-8") == "new\n"
    run(env, "append", "dirlink/f.txt", "more")
    assert (root / "real" / "f.txt").read_text(encoding="utf-8") == "new\nmore\n"


def test_root_given_through_a_symlink(base: Path) -> None:
    real = base / "real-root"
    real.mkdir()
    alias = base / "alias-root"
    alias.symlink_to(real, target_is_directory=True)
    env = make_env(alias)  # Policy.roots() resolves the root to its real path
    run(env, "write", str(alias / "f.txt"), "x")
    assert (real / "f.txt").read_text(encoding="utf-8") == "x\n"


# -- race safety: a component swapped after the check -----------------------------------


def test_component_swapped_for_symlink_after_check(root: Path, outside: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    confined = confine("a/b/f.txt", [root], root, "write")
    assert confined.root == root
    assert confined.parts == ("a", "b")
    assert confined.name == "f.txt"
    (root / "a").rename(root / "a-moved")
    (root / "a").symlink_to(outside, target_is_directory=True)
    (outside / "b").mkdir()
    with pytest.raises(PolicyRefusal) as info:
        open_parent(confined)
    assert "became a symbolic link" in info.value.message
    assert str(root) in info.value.message


def test_swap_between_inspect_and_execute(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "dir").mkdir()
    checked = confine("dir/f.txt", [root], root, "write")
    (root / "dir").rename(root / "dir-moved")
    (root / "dir").symlink_to(outside, target_is_directory=True)
    # execute() re-checks; pretend the swap happened right after that check.
    monkeypatch.setattr(files_ops, "confine", lambda *a: checked)
    refusal = refused(make_env(root), "write", "dir/f.txt", "pwned")
    assert str(root) in refusal.message
    assert not (outside / "f.txt").exists()


def test_final_name_swapped_for_symlink_after_check(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "f.txt").write_text("mine", encoding="utf-8")
    checked = confine("f.txt", [root], root, "read")
    (root / "f.txt").unlink()
    (root / "f.txt").symlink_to(outside / "secret.txt")
    monkeypatch.setattr(files_ops, "confine", lambda *a: checked)
    env = make_env(root)
    for word, args in [
        ("read", ["f.txt"]),
        ("append", ["f.txt", "x"]),
        ("write", ["f.txt", "x"]),
        ("delete", ["f.txt"]),
    ]:
        refusal = refused(env, word, *args)
        assert "became a symbolic link" in refusal.message
        assert str(root) in refusal.message
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "top secret"
    assert (root / "f.txt").is_symlink()


def test_open_parent_of_root_target(root: Path) -> None:
    confined = confine(".", [root], root, "read")
    assert isinstance(confined, Confined)
    assert confined.is_root and confined.parts == ()
    fd = open_parent(confined)
    try:
        assert os.path.samestat(os.fstat(fd), os.stat(root))
    finally:
        os.close(fd)


# -- hard links -------------------------------------------------------------------------


def test_hard_link_refused_for_read_and_append(root: Path, outside: Path) -> None:
    try:
        os.link(outside / "secret.txt", root / "hard.txt")
    except OSError:
        pytest.skip("hard links not supported here")
    env = make_env(root)
    refusal = refused(env, "read", "hard.txt")
    assert "2 hard links" in refusal.message
    assert str(root) in refusal.message
    refusal = refused(env, "append", "hard.txt", "x")
    assert "hard links" in refusal.message
    assert str(root) in refusal.message
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "top secret"
    # write replaces the entry: the outside file keeps its content.
    run(env, "write", "hard.txt", "replaced")
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "top secret"
    assert (root / "hard.txt").read_text(encoding="utf-8") == "replaced\n"


# -- malformed paths ---------------------------------------------------------------------


def test_nul_byte_in_path(root: Path) -> None:
    for word, args in [("read", ["a\0b"]), ("write", ["x\0", "c"]), ("list", ["\0"])]:
        refusal = refused(make_env(root), word, *args)
        assert "NUL byte" in refusal.message
        assert str(root) in refusal.message


def test_empty_path(root: Path) -> None:
    refusal = refused(make_env(root), "read", "")
    assert "empty" in refusal.message
    assert str(root) in refusal.message


def test_very_long_paths_fail_cleanly(root: Path) -> None:
    # no policy refusal: the system could not take them (plan says so first, exit 2)
    env = make_env(root)
    error = failed(env, "write", "n" * 300, "x")
    assert isinstance(error, UnusablePath) and "has a name of 300 bytes" in error.message
    assert "NAME_MAX" in error.message
    error = failed(env, "read", "/".join(["d" * 200] * 30))
    assert isinstance(error, UnusablePath) and "PATH_MAX" in error.message
    error = failed(env, "mkdir", "a/" * 2100)
    assert isinstance(error, UnusablePath) and "PATH_MAX" in error.message
    assert list(root.iterdir()) == []


def test_unknown_operation_is_a_step_error(root: Path) -> None:
    op = OPS["read"]
    fake = type(op)(words=("chmod",), summary="", transport="local", effect="write")
    with pytest.raises(StepError):
        files_ops.execute(fake, bound("read", "x"), make_env(root))


# -- stale temporary files ---------------------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temp_files_are_swept(root: Path) -> None:
    dead = _dead_pid()
    names = TempNames(lambda: home_key(runtime_home(root), "temporaries"))
    stale = root / names.new("f.txt", pid=dead)
    live = root / names.new("f.txt", pid=os.getppid())
    other = root / names.new("g.txt", pid=dead)
    for p in (stale, live, other):
        p.write_text("partial", encoding="utf-8")
    run(make_env(root), "write", "f.txt", "x")
    assert not stale.exists()
    assert live.exists()  # its writer may still be running
    assert not other.exists()  # another target's, left by a dead process: swept too
    run(make_env(root), "append", "g.txt", "y")
    assert temp_files(root) == [live.name]


def test_the_sweep_never_deletes_a_file_runtime_did_not_name(root: Path, base: Path) -> None:
    """Only names tagged with this Home's key are runtime's: look-alikes stay."""
    dead = _dead_pid()
    genuine = TempNames(lambda: home_key(runtime_home(root), "temporaries")).new("f.txt", pid=dead)
    tag = genuine.rsplit("-", 1)[1]
    foreign = TempNames(lambda: home_key(base / "another-home", "temporaries")).new(
        "f.txt", pid=dead
    )
    lookalikes = [
        f".f.txt.runtime-tmp-{dead}-abc123",  # the old format
        f".f.txt.runtime-tmp-{dead}-0123456789ab-0123456789abcdef",  # the shape, a wrong tag
        genuine.replace(f"-{dead}-", f"-{dead}0-"),  # a tag copied onto another name
        f".g.txt.runtime-tmp-{dead}-{genuine.rsplit('-', 2)[1]}-{tag}",
        foreign,  # made with another Home's key
        f"{genuine}.bak",
        genuine[1:],  # not hidden
    ]
    for name in lookalikes:
        (root / name).write_text("the user's own", encoding="utf-8")
    (root / genuine).write_text("partial", encoding="utf-8")
    run(make_env(root), "write", "f.txt", "x")
    assert temp_files(root) == sorted(n for n in lookalikes if ".runtime-tmp-" in n)
    for name in lookalikes:
        assert (root / name).read_text() == "the user's own"
    key = runtime_home(root) / "temporaries.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


# -- inspect ----------------------------------------------------------------------------


def test_inspect_allowed_lists_resolved_paths(root: Path) -> None:
    (root / "real.txt").write_text("x", encoding="utf-8")
    (root / "link.txt").symlink_to("real.txt")
    result = inspect(root, "read", "link.txt")
    assert result.decision is None
    assert result.paths == [(str(root / "real.txt"), "read")]
    result = inspect(root, "write", "new.txt", "x")
    assert result.paths == [(str(root / "new.txt"), "write")]
    assert not (root / "new.txt").exists()  # no side effects


def test_inspect_refusal_names_the_policy_key(root: Path, outside: Path) -> None:
    result = inspect(root, "write", "../outside/x.txt", "c")
    assert result.decision is not None
    assert not result.decision.allowed
    assert result.decision.rule == "write_roots (test)"
    assert str(root) in result.decision.reason
    assert not (outside / "x.txt").exists()
    result = inspect(root, "list", str(outside))
    assert result.decision.rule == "read_roots (test)"
    assert result.paths == []


def test_inspect_uses_write_roots_for_mkdir_and_delete(root: Path) -> None:
    (root / "rw").mkdir()
    for word in ("mkdir", "delete"):
        result = inspect(root, word, "elsewhere", write=[root / "rw"])
        assert result.decision is not None
        assert result.decision.rule == "write_roots (test)"
        assert f"outside the write root {root / 'rw'}" in result.decision.reason
