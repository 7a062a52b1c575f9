"""Concurrency: many ``runtime`` processes at once on one fresh, never bootstrapped Runtime Home.

Started together (so that Home's bootstrap races):

* ``runtime capability execute`` processes, each in a folder of its own,
  running a capability of several files steps, a ``binary: "true"`` step and
  an append of its own line to one shared log file;
* ``runtime files append`` processes adding their line to the same log;
* ``runtime auth status`` processes reading the keyring (keyring's ``fail``
  backend, and the in-memory test backend of :mod:`tests.memory_keyring`).

Afterwards: every audit line is whole JSON, every run has its ``run.start``,
all its ``step`` records and its ``run.end``; every log line is there exactly
once; Home's ``version`` and ``manifest.json`` match the installed specs
(sha256 of each file) and Home holds nothing else but its ``.lock`` and the
audit log. ``RUNTIME_FULL_CAMPAIGNS=1``: 64 capability processes.

Run twice: on a Home that does not exist yet, and on one whose only file is a
``config.yaml`` that makes the audit log rotate every 16 KiB (keeping every
rotated file), so that the processes rotate it under each other: no record may
be torn or lost across the rotations either.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

import runtime.plan.policy_file as policy_module
from runtime import __version__
from runtime.home.layout import _shipped_files
from runtime.home.resources import default_policy_file
from tests.conftest import REPO, RUNTIME_BIN, capability, write
from tests.memory_keyring import SELECTOR

FULL = os.environ.get("RUNTIME_FULL_CAMPAIGNS") == "1"
CAPABILITY_PROCESSES = 64 if FULL else 16
SIDE_PROCESSES = 16 if FULL else 4  # of each: files append, auth status
TEMP_MARK = ".runtime-tmp-"

WORKFLOW = """version: v1
inputs:
  id:
    required: true
  log:
    required: true
workflow:
  - provider: files
    args: [mkdir, d]
  - provider: files
    args: [write, d/a.txt, "first ${id}\\n"]
  - provider: files
    args: [append, d/a.txt, "second ${id}"]
  - provider: files
    args: [read, d/a.txt]
  - provider: files
    args: [list, d]
  - binary: "true"
    args: []
  - provider: files
    args: [append, "${log}", "capability ${id}"]
  - provider: files
    args: [write, d/done.txt, "${id} done"]
"""
STEPS = WORKFLOW.count("  - ")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


ROTATING_CONFIG = "audit_max_bytes: 16384\naudit_keep: 100\n"


@pytest.mark.parametrize("rotating", [False, True], ids=["fresh-home", "rotating-log"])
def test_concurrency_campaign(
    tmp_path: Path,
    home: Path,
    env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    rotating: bool,
) -> None:
    assert not home.exists()
    if rotating:
        write(home / "config.yaml", ROTATING_CONFIG)
    shared = tmp_path / "shared"
    shared.mkdir()
    log = shared / "log.txt"
    policy = write(
        tmp_path / "policy.yaml",
        f'read_roots: [".", "{shared}"]\nwrite_roots: [".", "{shared}"]\n',
    )
    cap = write(tmp_path / "caps" / "many-steps.md", capability(WORKFLOW))
    base = {**env, "RUNTIME_POLICY_FILE": str(policy), "RUNTIME_GITHUB_TOKEN": ""}

    launches: list[tuple[str, str, subprocess.Popen[str]]] = []

    def launch(kind: str, ident: str, args: list[str], cwd: Path, extra: dict[str, str]) -> None:
        proc = subprocess.Popen(
            [str(RUNTIME_BIN), *args],
            cwd=cwd,
            env={**base, **extra},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        launches.append((kind, ident, proc))

    folders = []
    for i in range(CAPABILITY_PROCESSES):
        folder = tmp_path / f"w{i:03}"
        folder.mkdir()
        folders.append(folder)
    plan: list[tuple[str, str, list[str], Path, dict[str, str]]] = []
    for i, folder in enumerate(folders):
        ident = f"c{i:03}"
        args = [
            "capability",
            "execute",
            str(cap),
            "--input",
            f"id={ident}",
            "--input",
            f"log={log}",
        ]
        plan.append(("capability", ident, args, folder, {}))
        if i < SIDE_PROCESSES:
            plan.append(
                ("append", f"a{i:03}", ["files", "append", str(log), f"direct a{i:03}"], folder, {})
            )
            backend = SELECTOR if i % 2 else "keyring.backends.fail.Keyring"
            extra = {"PYTHON_KEYRING_BACKEND": backend, "PYTHONPATH": str(REPO)}
            plan.append(("auth", f"k{i:03}", ["auth", "status"], folder, extra))
    for kind, ident, args, cwd, extra in plan:
        launch(kind, ident, args, cwd, extra)

    problems: list[str] = []
    for kind, ident, proc in launches:
        try:
            output, _ = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
            problems.append(f"{kind} {ident}: did not finish in 600 s")
        if proc.returncode != 0:
            problems.append(f"{kind} {ident}: exit {proc.returncode}: {output[-600:]}")
        elif kind == "auth" and "github.com: no credential" not in output:
            problems.append(f"{kind} {ident}: unexpected status: {output}")

    # -- the audit log: whole lines, every record of every run ----------------------------
    rotated = sorted(
        (home / "audit").glob("audit.jsonl.*"), key=lambda p: -int(p.name.rsplit(".", 1)[1])
    )
    if rotating and len(rotated) < 3:
        problems.append(f"the log rotated {len(rotated)} times, not at least 3")
    lines = [
        line
        for path in [*rotated, home / "audit" / "audit.jsonl"]
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    records, torn = [], 0
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            torn += 1
            problems.append(f"torn audit line: {line[:200]!r}")
    runs: dict[str, list[dict]] = collections.defaultdict(list)
    for record in records:
        runs[record.get("run_id", "?")].append(record)
    expected_steps = {"capability": STEPS, "append": 1}
    by_kind = collections.Counter()
    lost = 0
    for run_id, items in runs.items():
        events = collections.Counter(r["event"] for r in items)
        kind = (
            "capability" if items[0].get("capability", "").endswith("many-steps.md") else "append"
        )
        by_kind[kind] += 1
        want = expected_steps[kind]
        for event, count in (
            ("run.start", 1),
            ("step.start", want),
            ("step", want),
            ("run.end", 1),
        ):
            if events[event] != count:
                lost += abs(count - events[event])
                problems.append(
                    f"run {run_id} ({kind}): {events[event]} {event} records, not {count}"
                )
        steps = sorted(r["step"] for r in items if r["event"] == "step")
        if steps != list(range(1, want + 1)) or any(
            r["status"] != "ok" for r in items if r["event"] == "step"
        ):
            problems.append(f"run {run_id}: steps {steps} not all ok")
    for kind, count in (("capability", CAPABILITY_PROCESSES), ("append", SIDE_PROCESSES)):
        if by_kind[kind] != count:
            lost += abs(count - by_kind[kind])
            problems.append(f"{by_kind[kind]} {kind} runs in the audit log, not {count}")
    step_records = sum(1 for r in records if r["event"] == "step")
    if step_records != CAPABILITY_PROCESSES * STEPS + SIDE_PROCESSES:
        problems.append(f"{step_records} step records")

    # -- the shared log: every line exactly once -------------------------------------------
    want_lines = collections.Counter(
        [f"capability c{i:03}" for i in range(CAPABILITY_PROCESSES)]
        + [f"direct a{i:03}" for i in range(SIDE_PROCESSES)]
    )
    got_lines = collections.Counter(log.read_text(encoding="utf-8").split("\n")[:-1])
    if got_lines != want_lines:
        lost += sum((want_lines - got_lines).values())
        problems.append(
            f"shared log: missing {sorted((want_lines - got_lines).elements())[:10]}, "
            f"extra {sorted((got_lines - want_lines).elements())[:10]}"
        )
    for i, folder in enumerate(folders):
        content = (folder / "d" / "a.txt").read_text(encoding="utf-8")
        if content != f"first c{i:03}\nsecond c{i:03}\n":
            problems.append(f"{folder.name}/d/a.txt: {content!r}")

    # -- Home: version, manifest, specs, and nothing stray ----------------------------------
    if (home / "version").read_text(encoding="utf-8").strip() != __version__:
        problems.append(f"Home version: {(home / 'version').read_text()!r}")
    manifest = json.loads((home / "manifest.json").read_text(encoding="utf-8"))
    shipped = {
        rel: hashlib.sha256(p.read_bytes()).hexdigest() for rel, p in _shipped_files().items()
    }
    if manifest.get("version") != __version__ or manifest.get("files") != shipped:
        problems.append("manifest.json does not match the installed specs")
    for rel, digest in manifest.get("files", {}).items():
        if not (home / rel).is_file() or sha256(home / rel) != digest:
            problems.append(f"Home {rel} does not match its manifest sha256")
        if (REPO / rel).is_file() and sha256(REPO / rel) != digest:
            problems.append(f"{rel} in the manifest differs from the repository's specs/")
    # temporaries.key: made once by the first files write, the key of temporaries' names
    allowed = {
        ".lock",
        "version",
        "manifest.json",
        "temporaries.key",
        "audit/audit.jsonl",
        *(f"audit/{p.name}" for p in rotated),
        *(["config.yaml"] if rotating else []),
        *manifest.get("files", {}),
    }
    cache = getattr(policy_module, "DEFAULT_CACHE", None)  # the parsed default policy, if cached
    if cache is not None and (home / cache).exists():
        allowed.add(cache)
        cached = json.loads((home / cache).read_text(encoding="utf-8"))
        if cached.get("sha256") != sha256(default_policy_file()):
            problems.append(f"Home {cache} is not the installed default policy's")
    for path in home.rglob("*"):
        rel = path.relative_to(home).as_posix()
        if path.is_file() and rel not in allowed:
            problems.append(f"stray file in Home: {rel}")
    for folder in [shared, *folders]:
        strays = [n for n in os.listdir(folder) if TEMP_MARK in n]
        strays += (
            [n for n in os.listdir(folder / "d") if TEMP_MARK in n] if folder != shared else []
        )
        if strays:
            problems.append(f"stray temporaries in {folder.name}: {strays}")

    with capsys.disabled():
        print(
            f"\nconcurrency: {len(launches)} processes, {len(lines)} audit records, "
            f"{torn} torn, {lost} lost" + (f" across {len(rotated)} rotations" if rotating else "")
        )
    assert not problems, "\n".join(problems[:40])
