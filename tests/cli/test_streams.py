"""Closed, full and vanished standard streams, as cron jobs and pipelines give them.

Through the installed ``runtime`` with real descriptors: a closed one (``>&-``), a full
device (``/dev/full``), a pipe whose reader is gone. Each is an ordinary outcome with
its documented exit code and no traceback; when the command itself failed, its own
exit code wins.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import capability, write

DENIED = capability(
    "version: v1\nworkflow:\n  - provider: files\n    args: [delete, a.txt]\n",
    frontmatter="name: denied\n",
)
WRITES = capability(
    "version: v1\nworkflow:\n  - provider: files\n    args: [write, out.txt, done]\n",
    frontmatter="name: writes\n",
)


def no_crash(stderr: str) -> None:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert "Exception ignored" not in stderr, stderr


@pytest.fixture
def full() -> Iterator[Any]:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as stream:
        yield stream


@pytest.fixture
def gone_reader() -> Iterator[int]:
    """The write end of a pipe whose reader went away (`runtime ... | head` after head exits)."""
    read, write_end = os.pipe()
    os.close(read)
    yield write_end
    os.close(write_end)


@pytest.mark.parametrize(
    "args", [("--version",), ("--help",), ("capability", "--help"), ("github", "--help")]
)
def test_a_closed_stdout_is_an_output_error_without_a_traceback(
    cli_proc, args: tuple[str, ...]
) -> None:
    result = cli_proc(*args, closed=(1,))
    no_crash(result.stderr)
    assert result.code == 74, result.stderr
    assert "standard output" in result.stderr and "closed" in result.stderr, result.stderr


def test_a_run_with_stdout_closed_does_its_work(cli_proc, work: Path) -> None:
    """The steps run; the JSON document is lost, which exit 74 says."""
    write(work / "writes.md", WRITES)
    result = cli_proc("--output", "json", "capability", "execute", "writes.md", closed=(1,))
    no_crash(result.stderr)
    assert result.code == 74, result.stderr  # the JSON document was lost
    assert (work / "out.txt").read_text() == "done\n"


def test_a_closed_stdin_reads_as_empty(cli_proc) -> None:
    """`auth login` with stdin closed: no token was given, as with `< /dev/null` (exit 4)."""
    result = cli_proc("auth", "login", "github", closed=(0,))
    no_crash(result.stderr)
    assert result.code == 4, result.stderr
    assert "no token given" in result.stderr


def test_a_full_stdout_is_an_output_error(cli_proc, work: Path, full: Any) -> None:
    write(work / "caps" / "ok.md", WRITES)
    result = cli_proc("capability", "validate", "caps", stdout=full)
    no_crash(result.stderr)
    assert result.code == 74, result.stderr
    assert "standard output" in result.stderr
    assert "No space left on device" in result.stderr, result.stderr


def test_a_failure_keeps_its_exit_code_when_stdout_is_full(cli_proc, work: Path, full: Any) -> None:
    write(work / "bad.md", capability("version: v1\nworkflow: []\n"))
    result = cli_proc("--output", "json", "capability", "validate", "bad.md", stdout=full)
    no_crash(result.stderr)
    assert result.code == 2, result.stderr


def test_a_run_goes_on_when_stdout_is_full(cli_proc, work: Path, full: Any) -> None:
    """The output is lost, not the work: the steps run and are recorded; exit 74 says the
    output was lost."""
    write(work / "writes.md", WRITES)
    result = cli_proc("capability", "execute", "writes.md", stdout=full)
    no_crash(result.stderr)
    assert result.code == 74, result.stderr
    assert (work / "out.txt").read_text() == "done\n"


def test_a_closed_stderr_keeps_the_refusals_exit_code(cli_proc, work: Path) -> None:
    write(work / "denied.md", DENIED)
    result = cli_proc("capability", "execute", "denied.md", closed=(2,))
    assert result.code == 3


def test_a_full_stderr_keeps_the_refusals_exit_code(cli_proc, work: Path, full: Any) -> None:
    write(work / "denied.md", DENIED)
    assert cli_proc("capability", "execute", "denied.md", stderr=full).code == 3


def test_a_gone_reader_ends_like_sigpipe(cli_proc, work: Path, gone_reader: int) -> None:
    """`runtime capability validate caps | head` once head is gone: 141, as for a run, and
    nothing on stderr (as a program killed by SIGPIPE says nothing)."""
    write(work / "caps" / "ok.md", WRITES)
    result = cli_proc("capability", "validate", "caps", stdout=gone_reader)
    assert result.code == 141, result.stderr
    assert result.stderr == ""


def test_a_gone_reader_does_not_hide_a_failure(cli_proc, work: Path, gone_reader: int) -> None:
    write(work / "bad.md", capability("version: v1\nworkflow: []\n"))
    result = cli_proc("capability", "validate", "bad.md", stdout=gone_reader)
    assert result.code == 2, result.stderr


def test_a_run_stopped_by_a_gone_reader_says_nothing_of_it(
    cli_proc, work: Path, gone_reader: int
) -> None:
    """`runtime capability execute two-reads.md | head -1`: the first step's output finds
    no reader, the run stops before step 2 with 141, and says no more, as a program ended
    by SIGPIPE; the audit log has the run, terminated."""
    write(work / "big.txt", "line\n" * 1000)
    step = "  - provider: files\n    args: [read, big.txt]\n"
    write(work / "two.md", capability("version: v1\nworkflow:\n" + step * 2))
    result = cli_proc("capability", "execute", "two.md", stdout=gone_reader)
    assert result.code == 141, result.stderr
    assert result.stderr.splitlines() == [result.stderr.splitlines()[0]], result.stderr
    assert result.stderr.startswith("[1/2] files read big.txt ... ok ")
    ends = [r for r in _audit(cli_proc) if r["event"] == "run.end"]
    assert [(r["status"], r["exit_code"], r["ok"]) for r in ends] == [("terminated", 141, 1)]


def _audit(cli_proc: Any) -> list[dict[str, Any]]:
    import json

    return json.loads(cli_proc("-o", "json", "audit", "tail", "-n", "100").stdout)["records"]


# a file that fills a pipe many times over: the reader leaves long before its end
BIG = "".join(f"line {i}\n" for i in range(200_000))


@pytest.mark.parametrize("mode", [(), ("-o", "raw"), ("-q",)])
@pytest.mark.parametrize(
    "call",
    [
        ("files", "read", "big.txt"),  # written when the step ends
        ("command", "run", "cat", "big.txt"),  # streamed from a program as it runs
    ],
)
def test_a_reader_that_leaves_after_a_line_gets_no_summary(
    work: Path, env: dict[str, str], tmp_path: Path, mode: tuple[str, ...], call: tuple[str, ...]
) -> None:
    """`runtime files read big.txt | head -1`, with a real pipe closed after its first line:
    exit 141 and no "terminated: 1/1 steps succeeded", nor any error, on stderr."""
    import subprocess

    from tests.conftest import RUNTIME_BIN

    write(work / "big.txt", BIG)
    with open(tmp_path / "stderr", "w+") as stderr:
        proc = subprocess.Popen(
            [str(RUNTIME_BIN), *mode, *call],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"line 0\n"
        proc.stdout.close()  # head -1 is done
        assert proc.wait(timeout=60) == 141
        stderr.seek(0)
        said = stderr.read()
    no_crash(said)
    for word in ("terminated", "succeeded", "error", "SIGPIPE", "run "):
        assert word not in said, said
    if mode:  # raw and quiet say only warnings and failures: none
        assert said == ""
    else:  # the step's progress line, ended: the shell's prompt is not left after it
        label = "files read" if call[0] == "files" else "cat"
        assert said.startswith(f"[1/1] {label} big.txt ...") and said.endswith("\n"), said
