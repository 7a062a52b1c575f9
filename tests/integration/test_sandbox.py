"""runtime.execute.sandbox against the real kernel and the real bwrap.

Each test runs a real program through ``subprocess.run(command(...))`` and
proves one property of the confinement; each fails when the flag giving that
property is taken out of the command line.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from runtime.execute.sandbox import Confinement, command, private_tmp, probe, view
from tests.conftest import require_tool

pytestmark = pytest.mark.integration

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")


@pytest.fixture(scope="module")
def bwrap() -> str:
    require_tool("bwrap", "binary steps are confined with bubblewrap")
    found = shutil.which("bwrap")
    assert found is not None
    return found


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


def folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def spec(
    cwd: Path | str,
    *,
    read_paths: Sequence[Path | str] = (),
    write_paths: Sequence[Path | str] = (),
    protected_paths: Sequence[Path | str] = (),
) -> Confinement:
    return Confinement(
        cwd=str(cwd),
        system_paths=SYSTEM,
        read_paths=tuple(map(str, read_paths)),
        write_paths=tuple(map(str, write_paths)),
        protected_paths=tuple(map(str, protected_paths)),
    )


def env_for(confinement: Confinement, **extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": private_tmp(confinement), **extra}


def run(
    bwrap: str,
    argv: Sequence[str],
    confinement: Confinement,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(bwrap, argv, confinement),
        env=env if env is not None else env_for(confinement),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )


def sleepers(marker: str) -> list[int]:
    """Host pids of ``sleep <marker>`` processes."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args[0].endswith(b"sleep") and marker.encode() in args[1:]:
            found.append(int(entry))
    return found


def wait_until_gone(marker: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := sleepers(marker)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique ``sleep`` duration; any sleeper still carrying it is killed afterwards."""
    value = f"300.{secrets.randbelow(10**9):09d}"
    yield value
    for pid in sleepers(value):
        os.kill(pid, signal.SIGKILL)


def test_write_root_is_writable_read_root_read_only_and_the_rest_absent(
    bwrap: str, root: Path
) -> None:
    work, data, secret = folder(root / "work"), folder(root / "data"), folder(root / "secret")
    (data / "in.txt").write_text("readable\n")
    (secret / "key").write_text("hidden\n")
    confinement = spec(work, read_paths=(data,), write_paths=(work,))

    assert run(bwrap, ["/usr/bin/touch", str(work / "new")], confinement).returncode == 0
    assert (work / "new").exists()

    assert run(bwrap, ["/usr/bin/cat", str(data / "in.txt")], confinement).stdout == "readable\n"
    denied = run(bwrap, ["/usr/bin/touch", str(data / "new")], confinement)
    assert denied.returncode != 0
    assert "Read-only file system" in denied.stderr
    assert not (data / "new").exists()

    absent = run(bwrap, ["/usr/bin/ls", str(secret)], confinement)
    assert absent.returncode != 0
    assert "No such file or directory" in absent.stderr


def test_outside_the_write_roots_and_the_private_tmp_nothing_is_writable(
    bwrap: str, root: Path
) -> None:
    """bwrap's own root and the folders it makes on the way to a root (under the private
    /tmp too) are read-only: a write there fails instead of vanishing with the step."""
    work = folder(root / "deep" / "work")
    confinement = spec(work, write_paths=(work,))
    assert private_tmp(confinement) == "/tmp" and str(work).startswith("/tmp/")
    beside, top = work.parent / "beside", Path("/" + "runtime-sandbox-" + secrets.token_hex(4))
    for target in (beside, top, work.parent.parent / "x", Path("/usr-like")):
        denied = run(bwrap, ["/usr/bin/mkdir", str(target)], confinement)
        assert denied.returncode != 0, target
        assert "Read-only file system" in denied.stderr, denied.stderr
    assert not beside.exists() and not top.exists()
    for target in (work / "made", Path("/tmp/scratch"), Path("/dev/shm/scratch")):
        made = run(bwrap, ["/usr/bin/mkdir", str(target)], confinement)
        assert made.returncode == 0, (target, made.stderr)
    assert (work / "made").is_dir()

    assert view(confinement, str(work / "x")) == "write"
    assert view(confinement, "/usr/share") == "read"
    assert view(confinement, "/tmp/scratch") == "tmp"
    for path in (beside, top, work.parent.parent / "x"):
        assert view(confinement, str(path)) == "absent", path


def test_nested_roots_give_the_union_of_what_is_granted(bwrap: str, root: Path) -> None:
    reads = folder(root / "reads")
    inner_write = folder(reads / "out")
    writes = folder(root / "writes")
    inner_read = folder(writes / "in")
    confinement = spec(root, read_paths=(reads, inner_read), write_paths=(writes, inner_write))

    for target in (inner_write / "a", inner_read / "b", writes / "c"):
        result = run(bwrap, ["/usr/bin/touch", str(target)], confinement)
        assert result.returncode == 0, result.stderr
    denied = run(bwrap, ["/usr/bin/touch", str(reads / "d")], confinement)
    assert "Read-only file system" in denied.stderr


def test_protected_path_under_a_write_root_stays_read_only(bwrap: str, root: Path) -> None:
    work = folder(root / "work")
    home = folder(work / "home")
    (home / "policy.yaml").write_text("version: 1\n")
    missing, outside = work / "not-there", folder(root / "outside")
    confinement = spec(work, write_paths=(work,), protected_paths=(home, missing, outside))
    assert str(outside) not in command(bwrap, ["/usr/bin/true"], confinement)

    assert run(bwrap, ["/usr/bin/touch", str(work / "sibling")], confinement).returncode == 0
    assert (work / "sibling").exists()
    read = run(bwrap, ["/usr/bin/cat", str(home / "policy.yaml")], confinement)
    assert read.stdout == "version: 1\n"
    for target in (home / "new", home / "policy.yaml"):
        denied = run(bwrap, ["/usr/bin/touch", str(target)], confinement)
        assert "Read-only file system" in denied.stderr
    assert not (home / "new").exists()


def test_extra_files_are_readable_alone_and_do_not_narrow_a_write_root(
    bwrap: str, root: Path
) -> None:
    work, elsewhere = folder(root / "work"), folder(root / "elsewhere")
    (elsewhere / "ca.pem").write_text("certificate\n")
    (elsewhere / "other").write_text("hidden\n")
    (work / "tool").write_text("own file\n")
    confinement = Confinement(
        cwd=str(work),
        system_paths=SYSTEM,
        write_paths=(str(work),),
        extra_read_files=(str(elsewhere / "ca.pem"), str(work / "tool")),
    )

    assert run(bwrap, ["/usr/bin/cat", str(elsewhere / "ca.pem")], confinement).stdout == (
        "certificate\n"
    )
    assert run(bwrap, ["/usr/bin/cat", str(elsewhere / "other")], confinement).returncode != 0
    denied = run(bwrap, ["/usr/bin/touch", str(elsewhere / "ca.pem")], confinement)
    assert "Read-only file system" in denied.stderr
    assert run(bwrap, ["/usr/bin/touch", str(work / "tool")], confinement).returncode == 0


def test_dev_is_minimal(bwrap: str, root: Path) -> None:
    confinement = spec(root, read_paths=(root,))
    listing = run(bwrap, ["/usr/bin/sh", "-c", "echo x > /dev/null && ls -A /dev"], confinement)
    assert listing.returncode == 0, listing.stderr
    minimal = {"core", "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin"}
    minimal |= {"stdout", "tty", "urandom", "zero", "console"}
    assert set(listing.stdout.split()) <= minimal


def test_private_tmp_is_an_empty_writable_tmpfs_hiding_the_host_tmp(bwrap: str, root: Path) -> None:
    work = folder(root / "work")
    confinement = spec(work, write_paths=(work,))
    tmp = private_tmp(confinement)
    assert tmp == "/tmp"
    fd, host_marker = tempfile.mkstemp(dir="/tmp", prefix="runtime-sandbox-marker-")
    os.close(fd)
    try:
        script = (
            'f=$(mktemp) && echo written > "$f" && cat "$f" && echo "$f"'
            ' && ls -A "$TMPDIR" && echo --- && cat /proc/self/mountinfo'
        )
        result = run(bwrap, ["/usr/bin/sh", "-c", script], confinement)
    finally:
        os.unlink(host_marker)
    assert result.returncode == 0, result.stderr
    head, mountinfo = result.stdout.split("---\n")
    written, made, *listing = head.splitlines()
    assert written == "written"
    assert os.path.dirname(made) == tmp
    assert not os.path.exists(made)  # on the private tmpfs, not on the host's /tmp
    # Empty but for the file just made and the mount points bwrap created for roots below it.
    skeleton = {Path(work).relative_to(tmp).parts[0]} if str(work).startswith(tmp + "/") else set()
    assert set(listing) == skeleton | {os.path.basename(made)}
    assert os.path.basename(host_marker) not in listing
    mounts = [
        line.split(" - ")[1].split()[0] for line in mountinfo.splitlines() if line.split()[4] == tmp
    ]
    assert mounts and mounts[-1] == "tmpfs"


def test_a_system_folder_under_tmp_shows_through_the_private_tmp(bwrap: str) -> None:
    # a virtual environment under /tmp (a clone in /tmp/fresh) named in system_paths: the
    # step can read it, read-only, while the rest of /tmp is the private tmpfs
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="runtime-sandbox-venv-") as venv:
        (Path(venv) / "marker").write_text("seen\n")
        work = folder(Path(venv) / "work")
        confinement = replace(spec(work), system_paths=(*SYSTEM, venv))
        assert private_tmp(confinement) == "/tmp"
        script = f"cat {venv}/marker; touch {venv}/new 2>/dev/null || echo read-only"
        result = run(bwrap, ["/usr/bin/sh", "-c", script], confinement)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["seen", "read-only"]


def test_private_tmp_moves_when_a_root_covers_tmp(bwrap: str, root: Path) -> None:
    assert private_tmp(Confinement(cwd="/", write_paths=("/tmp",))) == "/run/runtime-tmp"
    covered = Confinement(cwd="/", read_paths=("/tmp", "/run"))
    assert private_tmp(covered) == "/var/tmp/runtime-tmp"

    confinement = spec(root, read_paths=("/tmp",))
    assert private_tmp(confinement) == "/run/runtime-tmp"
    result = run(bwrap, ["/usr/bin/mktemp"], confinement)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("/run/runtime-tmp/tmp.")


@pytest.mark.parametrize("path", ["/", "/proc", "/proc/1", "/dev", "relative"])
def test_command_refuses_paths_that_uncover_host_views(path: str) -> None:
    with pytest.raises(ValueError):
        command("/usr/bin/bwrap", ["/usr/bin/true"], Confinement(cwd="/", read_paths=(path,)))


def test_command_line_order_is_the_documented_one(root: Path) -> None:
    deep_read, shallow_read = folder(root / "r" / "deep"), root / "r"
    deep_write, shallow_write = folder(root / "w" / "deep"), root / "w"
    extra = root / "extra.pem"
    extra.write_text("x")
    confinement = Confinement(
        cwd=str(root),
        system_paths=("/usr", "/bin"),
        read_paths=(str(deep_read), str(shallow_read)),
        write_paths=(str(deep_write), str(shallow_write)),
        extra_read_files=(str(extra),),
        protected_paths=(str(deep_write),),
    )
    argv = command("/usr/bin/bwrap", ["/usr/bin/true"], confinement)
    head = ["/usr/bin/bwrap", "--unshare-all", "--die-with-parent"]
    assert argv[:5] == [*head, "--cap-drop", "ALL"]
    assert "--share-net" not in argv
    assert argv[-6:] == ["--remount-ro", "/", "--chdir", str(root), "--", "/usr/bin/true"]

    def at(*words: str) -> int:
        return next(i for i in range(len(argv)) if argv[i : i + len(words)] == list(words))

    order = [
        at("--ro-bind-try", "/usr", "/usr"),
        at("--dev", "/dev"),
        at("--proc", "/proc"),
        at("--tmpfs", "/tmp"),
        at("--ro-bind-try", str(shallow_read), str(shallow_read)),
        at("--ro-bind-try", str(deep_read), str(deep_read)),
        at("--bind-try", str(shallow_write), str(shallow_write)),
        at("--bind-try", str(deep_write), str(deep_write)),
        at("--ro-bind-try", str(extra), str(extra)),
        at("--ro-bind", str(deep_write), str(deep_write)),
    ]
    assert order == sorted(order)
    if os.path.islink("/bin"):
        assert at("--symlink", os.readlink("/bin"), "/bin") < at("--dev", "/dev")


def test_proc_shows_only_the_sandbox_processes(bwrap: str, root: Path) -> None:
    confinement = spec(root, read_paths=(root,))
    listing = run(bwrap, ["/usr/bin/ls", "/proc"], confinement)
    assert listing.returncode == 0, listing.stderr
    pids = [entry for entry in listing.stdout.split() if entry.isdigit()]
    assert pids  # a /proc is mounted...
    assert len(pids) <= 4  # ...showing bwrap and ls, not the host
    assert str(os.getpid()) not in pids

    environ = run(bwrap, ["/usr/bin/cat", f"/proc/{os.getpid()}/environ"], confinement)
    assert environ.returncode != 0
    assert environ.stdout == ""


def test_a_double_forked_background_process_dies_with_the_step(
    bwrap: str, root: Path, marker: str
) -> None:
    confinement = spec(root, read_paths=(root,))
    # No pipes: a surviving daemon would hold them open and make run() wait.
    subprocess.run(
        command(bwrap, ["/usr/bin/sh", "-c", f"(/usr/bin/sleep {marker} &) ; exit 0"], confinement),
        env=env_for(confinement),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=10,
        check=True,
    )
    assert wait_until_gone(marker, 1.0) == []


def test_the_step_dies_with_a_killed_parent(bwrap: str, root: Path, marker: str) -> None:
    confinement = spec(root, read_paths=(root,))
    argv = command(bwrap, ["/usr/bin/sleep", marker], confinement)
    intermediate = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import json, subprocess, sys, time\n"
            "subprocess.Popen(json.loads(sys.argv[1]), stdin=subprocess.DEVNULL)\n"
            "time.sleep(300)\n",
            json.dumps(argv),
        ],
        env=env_for(confinement),
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 5
        while not sleepers(marker) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sleepers(marker), "the confined sleep never started"
    finally:
        intermediate.kill()
        intermediate.wait()
    assert wait_until_gone(marker, 2.0) == []


def test_every_sandbox_has_an_empty_network_namespace(bwrap: str, root: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        argv = ["/usr/bin/bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"]
        unconfined = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        assert unconfined.stdout == "connected\n", unconfined.stderr  # the listener is there

        isolated = run(bwrap, argv, spec(root, read_paths=(root,)))
        assert isolated.returncode != 0
        assert "connected" not in isolated.stdout


def test_capabilities_are_dropped(bwrap: str, root: Path) -> None:
    confinement = spec(root, read_paths=(root,))
    status = run(bwrap, ["/usr/bin/cat", "/proc/self/status"], confinement).stdout
    fields = dict(line.split(":\t", 1) for line in status.splitlines())
    assert fields["CapEff"].strip() == "0" * 16
    assert fields["CapBnd"].strip() == "0" * 16


class _Stop(Exception):
    pass


def test_a_run_stopped_at_once_leaves_nothing_running(bwrap: str, root: Path) -> None:
    """Stopped within milliseconds of its start (a signal to the runtime), a confined program
    is still ended: it stays in the process group the runtime ends, also in the moment
    before bwrap has set up --die-with-parent inside (its init ignores SIGTERM from outside,
    SIGKILL follows). With --new-session it escaped in about one try of five."""
    from runtime.execute.process import run_process

    marker = f"300.{os.getpid()}7"
    argv = command(bwrap, ["/usr/bin/sleep", marker], spec(root, read_paths=(root,)))

    def stop(signum: int, frame: object) -> None:
        raise _Stop()

    previous = signal.signal(signal.SIGALRM, stop)
    try:
        for attempt in range(16):
            signal.setitimer(signal.ITIMER_REAL, 0.0005 + attempt / 1600)
            with contextlib.suppress(_Stop):
                run_process(argv, env={"PATH": "/usr/bin"}, cwd=root, timeout=5)
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    deadline = time.monotonic() + 5  # a program killed with its parent may take a moment
    while sleepers(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = sleepers(marker)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not left


def test_working_directory_and_environment_pass_through(bwrap: str, root: Path) -> None:
    work, other = folder(root / "work"), folder(root / "other")
    confinement = spec(work, read_paths=(other,), write_paths=(work,))

    pwd = run(bwrap, ["/usr/bin/pwd"], confinement, cwd=other)
    assert pwd.stdout == f"{work}\n"

    env = env_for(confinement, RUNTIME_SANDBOX_CHECK="a b $HOME `x`")
    shown = run(bwrap, ["/usr/bin/env", "-0"], confinement, env=env)
    assert shown.returncode == 0, shown.stderr
    # bwrap itself sets PWD to the directory it changed to, as a shell would.
    seen = dict(item.split("=", 1) for item in shown.stdout.split("\0") if item)
    assert seen == {**env, "PWD": str(work)}


def test_probe_finds_a_working_bwrap_once(bwrap: str) -> None:
    path_env = os.path.dirname(bwrap)
    found = probe(path_env)
    assert found.ok, found.reason
    assert found.bwrap is not None and os.path.isabs(found.bwrap)
    assert probe(path_env) is found  # cached for the process


def test_probe_without_bwrap_says_what_to_install(tmp_path: Path) -> None:
    found = probe(str(folder(tmp_path / "empty")))
    assert not found.ok
    assert found.bwrap is None
    assert "install the Debian package bubblewrap" in found.reason


def fake_bwrap(folder_: Path, body: str) -> str:
    path = folder(folder_) / "bwrap"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(folder_)


def test_probe_reports_namespaces_refused(tmp_path: Path) -> None:
    path_env = fake_bwrap(
        tmp_path / "bin",
        "echo 'bwrap: No permissions to create new namespace' >&2\necho second >&2\nexit 1",
    )
    found = probe(path_env)
    assert not found.ok
    assert found.bwrap == str(tmp_path / "bin" / "bwrap")
    assert "cannot create namespaces here: bwrap: No permissions to create new namespace;" in (
        found.reason
    )
    assert "second" not in found.reason
    assert "user.max_user_namespaces" in found.reason


def test_probe_gives_up_on_a_hanging_bwrap(tmp_path: Path) -> None:
    path_env = fake_bwrap(tmp_path / "bin", "exec /usr/bin/sleep 30")
    started = time.monotonic()
    found = probe(path_env)
    assert time.monotonic() - started < 5
    assert not found.ok
    assert "did not run a trivial confined command" in found.reason
