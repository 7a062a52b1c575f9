"""Signals, a killed runtime, a closed stdout and detached daemons, to the installed ``runtime``.

The campaign (``test_signals_campaign``) runs ``runtime capability execute`` on a
two-step capability (the step under test, then a files write that must not run),
waits until the step is really under way, sends the signal and checks:

* the exit code: 128+n (130 for SIGINT, 143 for SIGTERM, 129 SIGHUP, 138 SIGUSR1,
  140 SIGUSR2, 142 SIGALRM);
* no process of the step is left (a scan of ``/proc`` for a marker unique to the
  case), including a grandchild the step started in the background;
* the audit log ends with the step's record (``interrupted`` for SIGINT, else
  ``terminated``) and the run's ``run.end`` with the same status, and the second
  step did not run;
* no temporary file or folder is left (the files write's temporary; the empty
  ``GH_CONFIG_DIR`` the gh transport makes under ``TMPDIR``).

The kinds of step, for SIGINT and SIGTERM: a binary (``sleep``, allowed by a user
policy), a binary that leaves a background grandchild, a files write blocked on
the folder's writer lock (held by the test), a GitHub REST request the loopback
double answers only after 10 s, a GitHub REST request waiting out a
``Retry-After``, a gh CLI step (a fake ``gh`` on PATH that sleeps with a child),
and a files append of a 32 MiB file (the signal lands in the copy; should the
step win the race, the run must simply be complete). SIGHUP, SIGUSR1, SIGUSR2
and SIGALRM go to the two binary kinds. Every signal also goes to both binary
kinds run unconfined (a PATH without bwrap: ``setpriv`` and the subreaper), and
each binary case checks it ran confined or not, as intended. All cases run at
once; ``RUNTIME_FULL_CAMPAIGNS=1`` repeats every case five times.

The tests after it, each through the installed CLI in a child process:

* runtime SIGKILLed during a step, confined (bwrap's ``--die-with-parent``) and
  unconfined (``setpriv --pdeathsig KILL``): the step's program dies too, and
  ``audit tail`` / ``audit show`` (text and JSON) show the run ``abandoned``;
* ``git daemon --detach`` as a step, confined (the PID namespace ends with the
  step) and unconfined (the subreaper kills what double-forked out): no daemon
  survives a run that exited 0;
* a closed stdout while a binary step prints: the run ends like SIGPIPE (141),
  the step's processes are stopped and the run is recorded, without a traceback;
* two narrow windows made deterministic in process: a signal as the temporary
  file of a write is created, and a signal between two steps.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import fake_binary, sized, user_policy
from tests.conftest import (
    RUNTIME_BIN,
    Result,
    admit_python,
    base_env,
    capability,
    check_schema,
    require_tool,
    write,
)
from tests.github_double import GitHubDouble

FULL = os.environ.get("RUNTIME_FULL_CAMPAIGNS") == "1"
REPEAT = 5 if FULL else 1
TOKEN = "ghp_" + "S1gn4l" * 6
FINISHED = "(not interrupted: the step finished first)"
# every signal runtime turns into a recorded end of the run, with its exit code and step status
SIGNALS: dict[int, tuple[int, str]] = {signal.SIGINT: (130, "interrupted")} | {
    s: (128 + s, "terminated")
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)
}
BINARY_KINDS = ("binary sleep", "binary with a background grandchild")
OTHER_KINDS = (
    "files write (folder lock held)",
    "github REST (slow answer)",
    "github REST (waiting out Retry-After)",
    "gh CLI",
    "files append (large atomic copy)",
)
UNCONFINED = " (unconfined)"

VERSION_CASE = 'case "$1" in --version|version) echo "{name} version 2.40.0"; exit 0;; esac\n'


@dataclass
class Case:
    kind: str
    signum: int
    root: Path
    marker: str  # a number unique to this case: `sleep MARKER` is what pgrep looks for
    step: str  # the workflow step under test (YAML)
    extra_env: dict[str, str]
    ready: Callable[[Case, subprocess.Popen[str]], bool] | None = None
    settle: float = 0.3  # seconds between "under way" and the signal
    confined: bool | None = None  # a binary case: whether its program must run under bwrap
    old: bytes = b""  # a file the step rewrites: old content (must stay old or become new)
    new: bytes = b""

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tmpdir(self) -> Path:
        return self.root / "tmp"

    @property
    def bin(self) -> Path:
        return self.root / "bin"


def processes(needle: str) -> dict[int, list[str]]:
    """Live processes (zombies left out) whose command line, joined by spaces, holds ``needle``:
    a scan of /proc, seeing into the steps' PID namespaces too."""
    found: dict[int, list[str]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                raw = fh.read()
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue  # gone meanwhile
        if stat[stat.rfind(b")") + 2 :][:1] in (b"Z", b"X"):
            continue
        argv = raw.decode("utf-8", "replace").split("\0")
        if argv and argv[-1] == "":
            argv.pop()
        if needle in " ".join(argv):
            found[int(entry.name)] = argv
    return found


def pgrep(marker: str) -> list[int]:
    """The processes running ``sleep MARKER`` (or a launcher about to run it)."""
    return sorted(processes("sleep " + marker))


def sleepers(marker: str) -> list[int]:
    """The ``sleep MARKER`` processes themselves (not bwrap or setpriv holding the same words)."""
    return [
        pid
        for pid, argv in processes("sleep " + marker).items()
        if os.path.basename(argv[0]) == "sleep" and argv[1:] == [marker]
    ]


def under_bwrap(pid: int) -> bool:
    """Whether a bwrap process is among ``pid``'s ancestors (the step ran confined)."""
    for _ in range(64):
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
            pid = int(stat[stat.rfind(b")") + 2 :].split()[1])
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        except (OSError, IndexError, ValueError):
            return False
        if os.path.basename(argv0) == b"bwrap":
            return True
        if pid <= 1:
            return False
    return False


def kill_all(pids: Iterable[int]) -> None:
    for pid in list(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_until(condition: Callable[[], object], seconds: float) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` have passed; whether it held."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def new_marker() -> str:
    """A number unique to a case: ``sleep MARKER`` is what the /proc scans look for."""
    return f"{secrets.randbelow(9000) + 1000}.{secrets.randbelow(10**9):09d}"


def path_without_bwrap(folder: Path, *programs: str) -> str:
    """A PATH of one folder holding symlinks to ``programs`` and setpriv, and no bwrap: steps
    started under it run unconfined (``setpriv --pdeathsig KILL``, runtime a subreaper)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in (*programs, "setpriv"):
        found = shutil.which(name)
        assert found is not None, f"{name} is not installed"
        link = folder / name
        if not link.exists():
            link.symlink_to(found)
    assert shutil.which("bwrap", path=str(folder)) is None
    return str(folder)


def require_launcher(confined: bool) -> None:
    if confined:
        require_tool("bwrap", "the confined case")
    else:
        require_tool("setpriv", "the unconfined case (--pdeathsig)")


def audit(home: Path) -> list[dict]:
    path = home / "audit" / "audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def script(path: Path, name: str, marker: str) -> None:
    """A program that answers --version, then sleeps with a background child (same marker)."""
    write(
        path,
        "#!/bin/sh\n"
        + VERSION_CASE.format(name=name)
        + f"sleep {marker} &\nsleep {marker}\nwait\n",
    )
    path.chmod(0o755)


def run_case(case: Case, gh: GitHubDouble) -> list[str]:
    """Start, wait until the step is under way, signal, check. Returns the problems."""
    problems: list[str] = []
    code, status = SIGNALS[case.signum]
    name = f"{case.kind} / {signal.Signals(case.signum).name}"
    write(
        case.work / "cap.md",
        capability(
            "version: v1\nworkflow:\n"
            + case.step
            + "  - provider: files\n    args: [write, after.txt, must-not-run]\n"
        ),
    )
    env = {
        **base_env(case.home),
        "PATH": f"{case.bin}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "TMPDIR": str(case.tmpdir),
        "RUNTIME_POLICY_FILE": str(case.root / "policy.yaml"),
        "GITHUB_API_URL": gh.api_url,
        "GITHUB_GRAPHQL_URL": gh.graphql_url,
        "RUNTIME_GITHUB_TOKEN": TOKEN,
        **case.extra_env,
    }
    lock_fd = None
    if case.kind == "files write (folder lock held)":
        # the writer lock of the folder, as another runtime writer would hold it
        lock_fd = os.open(case.work, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
    proc = subprocess.Popen(
        [str(RUNTIME_BIN), "capability", "execute", "cap.md"],
        cwd=case.work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (case.ready and case.ready(case, proc)):
            if proc.poll() is not None:
                if not case.old:  # (a large append may just have been quicker)
                    problems.append(f"{name}: exited {proc.returncode} before it was signalled")
                break
            if time.monotonic() > deadline:
                problems.append(f"{name}: the step never got under way")
                break
            time.sleep(0.05)
        else:
            time.sleep(case.settle)  # well inside the blocking call
            if case.confined is not None:
                # the launcher the case is about: under bwrap, or not (PATH without bwrap)
                wait_until(lambda: sleepers(case.marker), 30)
                running = sleepers(case.marker)
                if not running or any(under_bwrap(pid) for pid in running) != case.confined:
                    how = "confined" if case.confined else "unconfined"
                    problems.append(f"{name}: the step did not run {how}: {running}")
            proc.send_signal(case.signum)
        try:
            output, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
            problems.append(f"{name}: still running 60 s after the signal")
    finally:
        if lock_fd is not None:
            os.close(lock_fd)
    if problems:
        return [*problems, output[-800:]]

    records = audit(case.home)
    first = [r.get("status") for r in records if r["event"] == "step" and r.get("step") == 1]
    # the large append may win the race: then it must be complete, and the signal either
    # came too late (exit 0) or landed in step 2, which must be recorded as such
    finished_first = bool(case.old) and first == ["ok"]
    if finished_first and proc.returncode in (0, -case.signum):
        # the run was over and recorded; the signal came during the interpreter's exit
        code, status = proc.returncode, "ok"
    if proc.returncode != code:
        problems.append(f"{name}: exit {proc.returncode}, not {code}: {output[-600:]}")
    # orphans: nothing with the marker may survive the run (give init a moment to reap)
    wait_until(lambda: not pgrep(case.marker), 2.0)
    left = pgrep(case.marker)
    if left:
        problems.append(f"{name}: orphans {left} survived the run")
        kill_all(left)
    tail = [(r["event"], r.get("step"), r.get("status")) for r in records[-2:]]
    if tail != [("step", 2 if finished_first else 1, status), ("run.end", None, status)]:
        problems.append(f"{name}: the audit log ends with {tail}")
    elif not finished_first and (case.work / "after.txt").exists():
        problems.append(f"{name}: the step after the interrupted one ran")
    if case.old:
        now = (case.work / "BIG.txt").read_bytes()
        if now not in (case.old, case.new):
            problems.append(f"{name}: BIG.txt is neither the old nor the new content")
    leftovers = [p.name for p in case.work.iterdir() if ".runtime-tmp-" in p.name]
    leftovers += [p.name for p in case.tmpdir.iterdir()]
    if leftovers:
        problems.append(f"{name}: temporaries left behind: {leftovers}")
    if finished_first:
        problems.append(f"{name}: {FINISHED}")
    return problems


def test_signals_campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_tool("sleep", "the binary step")
    require_tool("setpriv", "the unconfined binary cases")

    def sleeping(count: int) -> Callable[[Case, subprocess.Popen[str]], bool]:
        return lambda case, proc: len(sleepers(case.marker)) >= count

    def audit_says_started(case: Case, proc: subprocess.Popen[str]) -> bool:
        return any(r["event"] == "step.start" for r in audit(case.home))

    def requested(path: str) -> Callable[[Case, subprocess.Popen[str]], bool]:
        return lambda case, proc: any(r.path == path for r in gh.requests)

    cases: list[Case] = []
    big = b"0123456789abcdef" * (2 * 1024 * 1024)  # 32 MiB: copied, flushed, renamed
    with GitHubDouble(token=TOKEN) as gh:
        gh.add_org("acme")
        for _ in range(REPEAT):
            for signum in SIGNALS:
                kinds = [*BINARY_KINDS, *(kind + UNCONFINED for kind in BINARY_KINDS)]
                if signum in (signal.SIGINT, signal.SIGTERM):
                    kinds += OTHER_KINDS
                for kind in kinds:
                    index = len(cases)
                    root = tmp_path / f"case-{index:03}"
                    for sub in ("work", "home", "tmp", "bin"):
                        (root / sub).mkdir(parents=True)
                    write(
                        root / "policy.yaml",
                        "allowed_binaries: [sleep, slowtool]\nallow_unconfined: true\n"
                        + admit_python(
                            "slowtool",
                            "gh",
                            also=[shutil.which(p) or p for p in ("sh", "sleep")],
                        ),
                    )
                    mark = new_marker()
                    extra: dict[str, str] = {}
                    confined: bool | None = None
                    if kind.removesuffix(UNCONFINED) in BINARY_KINDS:
                        confined = not kind.endswith(UNCONFINED)
                        if not confined:
                            extra["PATH"] = path_without_bwrap(root / "bin", "sleep")
                    if kind.startswith("binary sleep"):
                        step = f'  - binary: sleep\n    args: ["{mark}"]\n'
                        ready = sleeping(1)
                    elif kind.startswith("binary with a background grandchild"):
                        script(root / "bin" / "slowtool", "slowtool", mark)
                        step = '  - binary: slowtool\n    args: ["go"]\n'
                        ready = sleeping(2)
                    elif kind == "files write (folder lock held)":
                        step = "  - provider: files\n    args: [write, out.txt, blocked]\n"
                        ready = audit_says_started
                    elif kind == "github REST (slow answer)":
                        repo = f"slow-{index}"
                        gh.add_repo("acme", repo)
                        gh.inject_delay(f"^/repos/acme/{repo}$", 10)
                        step = f"  - provider: github\n    args: [repo, view, acme/{repo}]\n"
                        ready = requested(f"/repos/acme/{repo}")
                    elif kind == "github REST (waiting out Retry-After)":
                        repo = f"limited-{index}"
                        gh.add_repo("acme", repo)
                        gh.inject_secondary_rate_limit(f"^/repos/acme/{repo}$", retry_after=30)
                        extra["RUNTIME_GITHUB_MAX_WAIT"] = "120"
                        step = f"  - provider: github\n    args: [repo, view, acme/{repo}]\n"
                        ready = requested(f"/repos/acme/{repo}")
                    elif kind == "gh CLI":
                        script(root / "bin" / "gh", "gh", mark)
                        step = "  - provider: github\n    args: [pr, list, --repo, acme/app]\n"
                        ready = sleeping(2)
                    else:
                        step = "  - provider: files\n    args: [append, BIG.txt, tail]\n"
                        ready = audit_says_started
                    case = Case(kind, signum, root, mark, step, extra, ready, confined=confined)
                    if kind.startswith("files append"):
                        case.old, case.new, case.settle = big, big + b"tail\n", 0.02
                        (root / "work" / "BIG.txt").write_bytes(big)
                    cases.append(case)

        with ThreadPoolExecutor(max_workers=len(cases)) as pool:
            results = list(pool.map(lambda c: run_case(c, gh), cases))

    finished = [p for found in results for p in found if p.endswith(FINISHED)]
    problems = [p for found in results for p in found if not p.endswith(FINISHED)]
    orphans = sum(1 for p in problems if "orphans" in p)
    unrecorded = sum(1 for p in problems if "audit log ends with" in p)
    with capsys.disabled():
        print(
            f"\nsignals: {len(cases) - len(finished)} interruptions, {orphans} orphans, "
            f"{unrecorded} unrecorded"
        )
    assert not problems, "\n".join(problems)


def audit_json(
    cli_proc: Callable[..., Result], extra: dict[str, str], *args: str
) -> dict[str, Any]:
    result = cli_proc("--output", "json", "audit", *args, extra_env=extra)
    assert result.code == 0, result.stdout + result.stderr
    doc: dict[str, Any] = result.json()
    check_schema(doc, "audit")
    return doc


@pytest.mark.parametrize("confined", [True, False], ids=["confined", "unconfined"])
def test_sigkill_of_runtime_takes_the_step_along_and_the_run_shows_abandoned(
    cli_proc: Callable[..., Result],
    work: Path,
    home: Path,
    env: dict[str, str],
    tmp_path: Path,
    confined: bool,
) -> None:
    """runtime SIGKILLed during ``sleep MARKER``: nothing can run in runtime then, so the step's
    program must die by the launcher's own means -- bwrap's ``--die-with-parent`` confined,
    ``setpriv --pdeathsig KILL`` unconfined (a PATH without bwrap, on which preflight and plan
    still work). The run never records its end: ``audit tail`` and ``audit show`` say
    ``running`` while runtime lives and ``abandoned`` once it is gone, in text and JSON."""
    require_tool("sleep", "the binary step")
    require_launcher(confined)
    mark = new_marker()
    extra = {"RUNTIME_POLICY_FILE": str(user_policy(tmp_path / "policy.yaml", ["sleep"]))}
    sleep_path = shutil.which("sleep")
    if not confined:
        extra["PATH"] = path_without_bwrap(tmp_path / "bin", "sleep")
        sleep_path = str(tmp_path / "bin" / "sleep")
    write(
        work / "cap.md",
        capability(
            f'version: v1\nworkflow:\n  - binary: sleep\n    args: ["{mark}"]\n'
            "  - provider: files\n    args: [write, after.txt, must-not-run]\n"
        ),
    )
    # preflight and plan work on this PATH, and say whether steps run confined
    pre = cli_proc("--output", "json", "capability", "preflight", "cap.md", extra_env=extra)
    assert pre.code == 0, pre.stdout + pre.stderr
    check = next(c for c in pre.json()["checks"] if c["id"] == "confinement")
    assert (check["readiness"] == "True") is confined, check["reason"]
    plan = cli_proc("capability", "plan", "cap.md", "--verbose", extra_env=extra)
    assert plan.code == 0, plan.stdout + plan.stderr
    assert f"binary: {sleep_path}\n" in plan.stdout, plan.stdout

    proc = subprocess.Popen(
        [str(RUNTIME_BIN), "capability", "execute", "cap.md"],
        cwd=work,
        env={**env, **extra},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_until(lambda: sleepers(mark), 60), "the step never got under way"
        assert any(under_bwrap(pid) for pid in sleepers(mark)) is confined
        run_id = next(r["run_id"] for r in audit(home) if r["event"] == "run.start")
        doc = audit_json(cli_proc, extra, "tail")
        assert {"run_id": run_id, "state": "running"} in doc["unfinished_runs"], doc
        proc.kill()  # SIGKILL
        proc.wait(timeout=30)
        gone = wait_until(lambda: not processes(mark), 10)
        assert gone, f"the step's program outlived the SIGKILLed runtime: {processes(mark)}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_all(processes(mark))

    assert [r["event"] for r in audit(home)] == ["run.start", "step.start"]
    assert not (work / "after.txt").exists()
    line = f"run {run_id}: abandoned: "
    for args in (("tail",), ("show", run_id)):
        text = cli_proc("audit", *args, extra_env=extra)
        assert text.code == 0 and line in text.stdout, text.stdout + text.stderr
        doc = audit_json(cli_proc, extra, *args)
        assert doc["unfinished_runs"] == [{"run_id": run_id, "state": "abandoned"}], doc


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("confined", [True, False], ids=["confined", "unconfined"])
def test_a_detached_git_daemon_does_not_outlive_its_step(
    cli_proc: Callable[..., Result], work: Path, tmp_path: Path, confined: bool
) -> None:
    """``git daemon --detach`` forks, and the child leaves the step's process group (setsid)
    before the step ends with exit 0. Confined, the step's PID namespace dies with it;
    unconfined, the daemon is re-parented to runtime (a subreaper), which kills it. Either
    way no process holding the step's unique ``--pid-file`` survives the run, the pid the
    daemon wrote is not a live daemon, and its port refuses connections."""
    require_tool("git", "the daemon")
    require_launcher(confined)
    extra = {"RUNTIME_POLICY_FILE": str(tmp_path / "policy.yaml")}
    write(
        tmp_path / "policy.yaml",
        "version: v1\nallowed_subcommands:\n  git: [daemon]\nallow_unconfined: true\n",
    )
    if not confined:
        extra["PATH"] = path_without_bwrap(tmp_path / "bin", "git")
    for attempt in range(sized(2, 10)):
        port = free_port()
        pid_file = work / f"daemon-{attempt}.pid"
        needle = f"--pid-file={pid_file}"
        write(
            work / "cap.md",
            capability(
                "version: v1\nworkflow:\n  - binary: git\n    args: [daemon, --detach, "
                f'--reuseaddr, --listen=127.0.0.1, "--port={port}", "{needle}", '
                "--base-path=., --export-all, .]\n"
            ),
        )
        try:
            result = cli_proc("capability", "execute", "cap.md", extra_env=extra)
            assert result.code == 0, result.stdout + result.stderr
            left = processes(needle)
            assert not left, f"the daemon outlived its step: {left}"
            # written once detached (confined: a pid of the namespace); it may be empty or
            # absent, when the daemon was killed before it wrote it
            written = pid_file.read_text().strip() if pid_file.exists() else ""
            if written.isdigit():
                pid = int(written)
                with contextlib.suppress(OSError):
                    alive = needle in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
                    assert not alive, f"the daemon's pid {pid} is alive"
            with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
                sock.connect(("127.0.0.1", port))
        finally:
            kill_all(processes(needle))


CHATTY = """\
import subprocess, sys, time
subprocess.Popen(["sleep", sys.argv[1]])  # a background child in the step's process group
line = "chatter " * 12 + "\\n"
end = time.monotonic() + 120
while time.monotonic() < end:
    sys.stdout.write(line * 64)
    sys.stdout.flush()
"""


def closed_stdout_run(
    work: Path, home: Path, env: dict[str, str], tmp_path: Path, extra: dict[str, str]
) -> tuple[int, str, list[dict[str, Any]], dict[int, list[str]]]:
    """Run a capability whose binary step prints without end, read its first lines through a
    pipe, close the pipe. Returns (exit code, stderr, audit records, processes left)."""
    require_tool("sleep", "the step's background child")
    mark = new_marker()
    fake_binary(tmp_path / "bin", "chatty", CHATTY)
    policy = user_policy(
        tmp_path / "policy.yaml", ["chatty", "sleep"], also=[shutil.which("sleep") or "sleep"]
    )
    write(
        work / "cap.md",
        capability(
            f'version: v1\nworkflow:\n  - binary: chatty\n    args: ["{mark}"]\n'
            "  - provider: files\n    args: [write, after.txt, must-not-run]\n"
        ),
    )
    stderr_path = tmp_path / "stderr.txt"
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(
            [str(RUNTIME_BIN), "capability", "execute", "cap.md", "--timeout", "120"],
            cwd=work,
            env={
                **env,
                "PATH": f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}",
                "RUNTIME_POLICY_FILE": str(policy),
                **extra,
            },
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    try:
        assert proc.stdout is not None
        seen = b""
        while b"chatter" not in seen:  # the step's output streams: it is under way
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, f"runtime closed its stdout first: {seen[-500:]!r}"
            seen = seen[-100:] + chunk
        assert wait_until(lambda: sleepers(mark), 30), "the background child never started"
        proc.stdout.close()  # the reader goes away (`runtime ... | head`)
        code = proc.wait(timeout=60)
        wait_until(lambda: not processes(mark), 10)
        left = processes(mark)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_all(processes(mark))
    return code, stderr_path.read_text(errors="replace"), audit(home), left


def test_a_closed_stdout_stops_the_step_and_is_recorded(
    work: Path, home: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """The reader of runtime's output goes away while a binary step prints: the step's whole
    process group is stopped, step 1 is recorded terminated by SIGPIPE, run.end says 141,
    and step 2 never runs."""
    _, _, records, left = closed_stdout_run(work, home, env, tmp_path, {})
    assert not left, f"the step's processes survived a closed stdout: {left}"
    step = next(r for r in records if r["event"] == "step" and r["step"] == 1)
    assert step["status"] == "terminated" and "SIGPIPE" in step["error"], step
    end = records[-1]
    assert (end["event"], end["status"], end["exit_code"]) == ("run.end", "terminated", 141)
    assert not (work / "after.txt").exists()


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "PYTHONUNBUFFERED"])
def test_a_closed_stdout_exits_141_without_a_traceback(
    work: Path, home: Path, env: dict[str, str], tmp_path: Path, unbuffered: bool
) -> None:
    """The same run ends like SIGPIPE to the caller: exit 141, nothing on stderr that looks
    like a crash, and the audit log names only the step that ran (each ``step`` record has
    its ``step.start``)."""
    extra = {"PYTHONUNBUFFERED": "1"} if unbuffered else {}
    code, stderr, records, left = closed_stdout_run(work, home, env, tmp_path, extra)
    assert not left, f"the step's processes survived a closed stdout: {left}"
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert code == 141, stderr
    started = [r["step"] for r in records if r["event"] == "step.start"]
    ended = [r["step"] for r in records if r["event"] == "step"]
    assert started == ended == [1], f"step.start {started}, step {ended}"


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, "Terminated"])
def test_a_signal_as_the_temporary_is_created_leaves_no_temporary(
    cli, work: Path, monkeypatch: pytest.MonkeyPatch, interrupt: object
) -> None:
    """A signal that arrives while ``files write`` creates its temporary file: Python runs the
    handler as soon as that ``os.open`` returns, so the exception comes from the call itself.
    The step ends interrupted/terminated, and the temporary must not stay behind."""
    from runtime.errors import Terminated

    error = Terminated if interrupt == "Terminated" else KeyboardInterrupt
    code = 143 if error is Terminated else 130
    real_open = os.open

    def open_then_signal(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        fd = real_open(path, flags, *args, **kwargs)
        if ".runtime-tmp-" in os.fspath(path):
            raise error()  # what the signal handler does when the call returns
        return fd

    write(work / "a.txt", "old\n")
    monkeypatch.setattr(os, "open", open_then_signal)
    result = cli("files", "write", "a.txt", "new")
    monkeypatch.setattr(os, "open", real_open)
    assert result.code == code, result.stdout + result.stderr
    assert (work / "a.txt").read_text() == "old\n"
    left = [p.name for p in work.iterdir() if ".runtime-tmp-" in p.name]
    assert not left, f"the interrupted write left {left} behind"


@pytest.mark.parametrize("interrupt", ["KeyboardInterrupt", "Terminated"])
def test_a_signal_between_steps_is_handled_and_recorded(
    cli, work: Path, home: Path, monkeypatch: pytest.MonkeyPatch, interrupt: str
) -> None:
    """A signal that arrives between two steps -- here while step 2's progress line is printed,
    after its ``step.start`` record -- is outside any step's own handling. The run must still end
    like an interrupted step: exit 130/143 (no traceback, no escaping exception), the audit log
    closed with ``run.end`` of that status and no ``step.start`` left without its ``step``."""
    from runtime.cli.reporters import TextReporter
    from runtime.errors import Terminated

    error = Terminated if interrupt == "Terminated" else KeyboardInterrupt
    code, status = (143, "terminated") if error is Terminated else (130, "interrupted")
    steps = "".join(f"  - provider: files\n    args: [write, f{i}.txt, x]\n" for i in range(1, 4))
    write(work / "cap.md", capability("version: v1\nworkflow:\n" + steps))
    real_started = TextReporter.step_started

    def step_started(self, planned, total):  # type: ignore[no-untyped-def]
        if planned.index == 2:
            raise error()  # what the signal handler does at that moment
        return real_started(self, planned, total)

    monkeypatch.setattr(TextReporter, "step_started", step_started)
    try:
        result = cli("capability", "execute", "cap.md")
    except BaseException as exc:
        pytest.fail(f"{type(exc).__name__} escaped runtime's main(): a traceback, not exit {code}")
    assert result.code == code, result.stdout + result.stderr
    records = audit(home)
    events = [(r["event"], r.get("step")) for r in records]
    started = [r["step"] for r in records if r["event"] == "step.start"]
    ended = [r["step"] for r in records if r["event"] == "step"]
    assert started == ended, f"step.start without its step record: {events}"
    assert records[-1]["event"] == "run.end" and records[-1]["status"] == status, events
    assert not (work / "f3.txt").exists()
