"""Crash consistency: SIGKILL ``runtime files write`` / ``append`` at random moments.

Each trial starts the installed ``runtime`` as a child process on a large
file, waits until the step has started (its progress line on stderr), sleeps
a random 0-300 ms and kills it with SIGKILL. Three kinds of trial:

* ``append`` of a line to a large file (the copy of the old content is the
  long part);
* ``write`` of ~120 KB (the most one argv word can carry) over a large file;
* ``write`` of large content through a capability, ``--input content=@FILE``
  with ``${content}`` repeated in the arg (an input file is limited to 1 MiB).

Afterwards the target must hold exactly the old or the new content (sha256),
never a mix. Then the next successful run on that file (``files append``, in
process) must leave no ``.NAME.runtime-tmp-*`` file behind. Trials run in two
folders at once. ``RUNTIME_FULL_CAMPAIGNS=1``: 300 kills on 32 MB files.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RUNTIME_BIN, capability, write

FULL = os.environ.get("RUNTIME_FULL_CAMPAIGNS") == "1"
KILLS = 300 if FULL else 40
BIG_BYTES = (32 if FULL else 8) * 1024 * 1024
CHUNK_REPEAT = 32 if FULL else 8  # ${content} repeated: ~0.9 MiB each
ARGV_CONTENT = 120_000  # under Linux's 128 KiB limit of one argv word
TEMP_MARK = ".runtime-tmp-"
FOLDERS = 2


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def text_blob(size: int, seed: int) -> bytes:
    """``size`` bytes of printable text (base64 of seeded random bytes, in lines)."""
    rng = random.Random(seed)
    raw = rng.randbytes(size * 3 // 4 + 3)
    return base64.encodebytes(raw)[:size]


def as_written(content: bytes) -> bytes:
    """What `files write` leaves of CONTENT: it ends with one newline (specs/files.md)."""
    return content if not content or content.endswith(b"\n") else content + b"\n"


@dataclass
class Trial:
    folder: Path
    kind: str
    killed: bool = False
    completed: bool = False
    torn: str | None = None
    problem: str | None = None
    strays: int = 0
    old_kept: bool = False


class Started:
    """Reads a child's output (stderr merged into stdout); ``event`` is set once the step's
    progress line appears."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.buffer = bytearray()
        self.event = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self.buffer += chunk
            if b" ..." in self.buffer:
                self.event.set()
        self.event.set()


def run_trial(
    folder: Path,
    kind: str,
    env: dict[str, str],
    rng: random.Random,
    chunks: list[Path],
    window: float,
) -> Trial:
    trial = Trial(folder, kind)
    target = folder / "BIG.txt"
    old = target.read_bytes()
    if kind == "append":
        line = f"appended {rng.random()}"
        args = ["files", "append", "BIG.txt", line]
        new = old + line.encode() + b"\n"
    elif kind == "write-argv":
        content = text_blob(ARGV_CONTENT, rng.randrange(1 << 30)).decode()
        args = ["files", "write", "BIG.txt", content]
        new = as_written(content.encode())
    else:
        chunk = chunks[rng.randrange(len(chunks))]
        args = [
            "capability",
            "execute",
            str(folder.parent / "write-big.md"),
            "--input",
            f"content=@{chunk}",
        ]
        new = as_written(chunk.read_bytes() * CHUNK_REPEAT)
    proc = subprocess.Popen(
        [str(RUNTIME_BIN), *args],
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    started = Started(proc)
    try:
        if not started.event.wait(120):
            trial.problem = f"{kind}: the step never started"
        elif proc.poll() is None:
            time.sleep(rng.uniform(0.0, window))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
    finally:
        if proc.poll() is None and trial.problem:
            proc.kill()
        proc.wait(120)
        started.thread.join(10)
    trial.killed = proc.returncode == -signal.SIGKILL
    trial.completed = proc.returncode == 0
    if not trial.killed and not trial.completed:
        output = bytes(started.buffer[-600:]).decode(errors="replace")
        trial.problem = f"{kind}: exit {proc.returncode} without a kill: {output}"
    now = sha(target.read_bytes())
    if now not in (sha(old), sha(new)):
        trial.torn = (
            f"{kind} in {folder.name}: {len(target.read_bytes())} bytes, neither old nor new"
        )
    elif trial.completed and now != sha(new):
        trial.torn = f"{kind} in {folder.name}: exit 0 but the old content is still there"
    trial.old_kept = now == sha(old) != sha(new)
    trial.strays = sum(TEMP_MARK in name for name in os.listdir(folder))
    return trial


def test_crash_consistency_campaign(
    cli, work: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    base = text_blob(BIG_BYTES, 1)
    folders = []
    for i in range(FOLDERS):
        folder = work / f"folder-{i}"
        folder.mkdir()
        (folder / "BIG.txt").write_bytes(base)
        folders.append(folder)
    chunks = []
    for i in range(2):
        chunk = work / f"chunk-{i}.txt"
        chunk.write_bytes(text_blob(900_000, 10 + i))
        chunks.append(chunk)
    write(
        work / "write-big.md",
        capability(
            "version: v1\ninputs:\n  content:\n    required: true\nworkflow:\n"
            "  - provider: files\n"
            f'    args: [write, BIG.txt, "{"${content}" * CHUNK_REPEAT}"]\n'
        ),
    )
    assert cli("files", "write", "warmup.txt", "Home is bootstrapped", cwd=work).code == 0
    kinds = ["append", "write-argv"] * 5 + ["append", "write-capability"]
    # The kill comes a random 0-300 ms after the step started, within about one and a half
    # times what such a step takes here (measured on the runs in between), so that most kills
    # land inside the step rather than in the interpreter's exit.
    step_ms = {"append": 60.0, "write-argv": 10.0, "write-capability": 80.0}

    kills = torn = stray_left = strays_seen = trials = kept_old = 0
    torn_messages: list[str] = []
    problems: list[str] = []
    with ThreadPoolExecutor(max_workers=FOLDERS) as pool:
        while kills < KILLS and trials < 3 * KILLS:
            batch = [
                pool.submit(
                    run_trial,
                    folder,
                    kinds[(trials + i) % len(kinds)],
                    env,
                    random.Random(rng.random()),
                    chunks,
                    min(0.3, 1.5 * step_ms[kinds[(trials + i) % len(kinds)]] / 1000),
                )
                for i, folder in enumerate(folders)
            ]
            trials += len(batch)
            for future in batch:
                trial = future.result()
                kills += trial.killed
                strays_seen += trial.strays
                if trial.torn:
                    torn += 1
                    torn_messages.append(trial.torn)
                if trial.problem:
                    problems.append(trial.problem)
                # the next successful run on that file sweeps what the killed one left behind
                result = cli(
                    "files",
                    "append",
                    "BIG.txt",
                    f"recovered after trial {trials}",
                    cwd=trial.folder,
                )
                if result.code != 0:
                    problems.append(f"the run after a kill failed: {result.stdout}{result.stderr}")
                took = re.search(r" ok (\d+) ms", result.stderr)  # progress is on stderr
                if took:  # an append copies the whole file, like the large writes
                    for kind in ("append", "write-capability"):
                        step_ms[kind] = 0.5 * step_ms[kind] + 0.5 * float(took.group(1))
                kept_old += trial.killed and trial.old_kept
                left = [n for n in os.listdir(trial.folder) if TEMP_MARK in n]
                stray_left += len(left)
                if left:
                    problems.append(f"stray temporaries after the next run: {left}")

    print(f"kills that kept the old content: {kept_old}; temporaries left by kills: {strays_seen}")
    with capsys.disabled():
        print(f"\ncrash: {kills} kills, {torn} torn files, {stray_left} stray temporaries")
    assert not torn_messages, torn_messages
    assert not problems, problems
    assert kills >= KILLS, f"only {kills} of {trials} trials were killed while running"
    # evidence that kills landed inside the step, not only around it
    assert kept_old + strays_seen > 0, "no kill interrupted a write: the timing window missed"


def test_a_torn_audit_record_does_not_swallow_the_next_runs_records(
    cli, work: Path, home: Path
) -> None:
    """A SIGKILL in the middle of writing a large audit record (a step's args hold the whole
    CONTENT of a write) leaves a line without its newline. The next run's first record must
    not be glued onto it: every record of the next run stays readable."""
    assert cli("files", "write", "a.txt", "one").code == 0
    log = home / "audit" / "audit.jsonl"
    with open(log, "ab") as fh:  # what a killed writer leaves: part of a record, no newline
        fh.write(b'{"args": ["write", "BIG.txt", "aaaaaaaa')
    assert cli("files", "write", "a.txt", "two").code == 0
    readable = []
    for line in log.read_text().splitlines():
        try:
            readable.append(json.loads(line))
        except ValueError:
            continue
    last_run = readable[-1]["run_id"]
    events = [r["event"] for r in readable if r.get("run_id") == last_run]
    assert events == ["run.start", "step.start", "step", "run.end"], events
