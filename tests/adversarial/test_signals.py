"""SIGINT and SIGTERM during every kind of step, to the installed ``runtime`` process.

Each case runs ``runtime capability execute`` on a two-step capability (the
step under test, then a files write that must not run), waits until the step
is really under way, sends the signal and checks:

* the exit code: 130 (SIGINT) or 143 (SIGTERM);
* no process of the step is left (``pgrep -f`` on a marker unique to the case),
  including a grandchild the step started in the background;
* the audit log ends with the step's record (``interrupted`` / ``terminated``)
  and the run's ``run.end`` with the same status, and the second step did not run;
* no temporary file or folder is left (the files write's temporary; the empty
  ``GH_CONFIG_DIR`` the gh transport makes under ``TMPDIR``).

The kinds of step: a binary (``sleep``, allowed by a user policy), a binary
that leaves a background grandchild, a files write blocked on the folder's
writer lock (held by the test), a GitHub REST request the loopback double
answers only after 10 s, a GitHub REST request waiting out a ``Retry-After``,
a gh CLI step (a fake ``gh`` on PATH that sleeps with a child), and a files
append of a 32 MiB file (the signal lands in the copy; should the step win
the race, the run must simply be complete). All cases run at once.
``RUNTIME_FULL_CAMPAIGNS=1`` repeats every case five times. A last test makes
one narrow window deterministic: the signal arriving as the temporary file of
a write is created.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RUNTIME_BIN, base_env, capability, require_tool, write
from tests.github_double import GitHubDouble

FULL = os.environ.get("RUNTIME_FULL_CAMPAIGNS") == "1"
REPEAT = 5 if FULL else 1
TOKEN = "ghp_" + "S1gn4l" * 6
FINISHED = "(not interrupted: the step finished first)"
SIGNALS = {signal.SIGINT: (130, "interrupted"), signal.SIGTERM: (143, "terminated")}

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


def pgrep(marker: str) -> list[int]:
    found = subprocess.run(
        ["pgrep", "-f", "sleep " + re.escape(marker)], capture_output=True, text=True
    )
    return [int(pid) for pid in found.stdout.split()]


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

    if case.old and proc.returncode == 0:
        # the large append finished before the signal arrived: then it must be complete
        code, status = 0, "ok"
    if proc.returncode != code:
        problems.append(f"{name}: exit {proc.returncode}, not {code}: {output[-600:]}")
    # orphans: nothing with the marker may survive the run (give init a moment to reap)
    left = pgrep(case.marker)
    if left:
        time.sleep(1.0)
        left = pgrep(case.marker)
    if left:
        problems.append(f"{name}: orphans {left} survived the run")
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    records = audit(case.home)
    tail = [(r["event"], r.get("step"), r.get("status")) for r in records[-2:]]
    if status == "ok":
        if tail != [("step", 2, "ok"), ("run.end", None, "ok")]:
            problems.append(f"{name}: the audit log ends with {tail}")
    elif tail != [("step", 1, status), ("run.end", None, status)]:
        problems.append(f"{name}: the audit log ends with {tail}")
    elif (case.work / "after.txt").exists():
        problems.append(f"{name}: the step after the interrupted one ran")
    if case.old:
        now = (case.work / "BIG.txt").read_bytes()
        if now not in (case.old, case.new):
            problems.append(f"{name}: BIG.txt is neither the old nor the new content")
    leftovers = [p.name for p in case.work.iterdir() if ".runtime-tmp-" in p.name]
    leftovers += [p.name for p in case.tmpdir.iterdir()]
    if leftovers:
        problems.append(f"{name}: temporaries left behind: {leftovers}")
    if status == "ok":
        problems.append(f"{name}: {FINISHED}")
    return problems


def test_signals_campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_tool("pgrep", "to look for orphaned processes")
    require_tool("sleep", "the binary step")

    def marker() -> str:
        return f"{secrets.randbelow(9000) + 1000}.{secrets.randbelow(10**9):09d}"

    def sleeping(count: int) -> Callable[[Case, subprocess.Popen[str]], bool]:
        return lambda case, proc: len(pgrep(case.marker)) >= count

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
                for kind in (
                    "binary sleep",
                    "binary with a background grandchild",
                    "files write (folder lock held)",
                    "github REST (slow answer)",
                    "github REST (waiting out Retry-After)",
                    "gh CLI",
                    "files append (large atomic copy)",
                ):
                    index = len(cases)
                    root = tmp_path / f"case-{index:02}"
                    for sub in ("work", "home", "tmp", "bin"):
                        (root / sub).mkdir(parents=True)
                    write(root / "policy.yaml", "allowed_binaries: [sleep, slowtool]\n")
                    mark = marker()
                    extra: dict[str, str] = {}
                    if kind == "binary sleep":
                        step = f'  - binary: sleep\n    args: ["{mark}"]\n'
                        ready = sleeping(1)
                    elif kind == "binary with a background grandchild":
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
                    case = Case(kind, signum, root, mark, step, extra, ready)
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


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, "Terminated"])
def test_a_signal_as_the_temporary_is_created_leaves_no_temporary(
    cli, work: Path, monkeypatch: pytest.MonkeyPatch, interrupt: object
) -> None:
    """A signal that arrives while ``files write`` creates its temporary file: Python runs the
    handler as soon as that ``os.open`` returns, so the exception comes from the call itself.
    The step ends interrupted/terminated, and the temporary must not stay behind."""
    from runtime.execution import Terminated

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
    from runtime.cli.run_cmds import TextReporter
    from runtime.execution import Terminated

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
