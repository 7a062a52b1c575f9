"""Standard streams of a run: results on stdout, progress and status on stderr, and
`--output raw` printing the last step's result exactly, for piping. Bytes are compared as
the installed `runtime` wrote them (no newline translation)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import RUNTIME_BIN, capability, write


@dataclass
class Streams:
    code: int
    stdout: bytes
    stderr: bytes


def run(work: Path, env: dict[str, str], *args: str) -> Streams:
    proc = subprocess.run(
        [str(RUNTIME_BIN), *args],
        cwd=work,
        env=env,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    return Streams(proc.returncode, proc.stdout, proc.stderr)


def test_files_read_prints_the_content_on_stdout_and_progress_on_stderr(
    work: Path, env: dict[str, str]
) -> None:
    content = "alpha\n    beta\n\ngamma\n"
    write(work / "a.txt", content)
    result = run(work, env, "files", "read", "a.txt")
    assert result.code == 0, result.stderr
    assert result.stdout == content.encode()
    assert b"[1/1] files read a.txt ... ok" in result.stderr
    assert b"ok: 1/1 steps succeeded (run " in result.stderr


def test_output_raw_prints_the_exact_bytes_and_nothing_else(
    work: Path, env: dict[str, str]
) -> None:
    content = "tab\there\r\n  indented\n\n\u2713 no newline at the end"
    (work / "a.txt").write_bytes(content.encode())
    result = run(work, env, "--output", "raw", "files", "read", "a.txt")
    assert result.code == 0, result.stderr
    assert result.stdout == content.encode()
    assert result.stderr == b""
    piped = run(work, {**env, "RUNTIME_OUTPUT": "raw"}, "files", "read", "a.txt")
    assert piped.stdout == content.encode()


def test_raw_execute_prints_only_the_last_steps_result(work: Path, env: dict[str, str]) -> None:
    write(
        work / "provider.md",
        capability(
            "version: v1\ninputs:\n  text:\n    required: true\nworkflow:\n"
            "  - provider: files\n    args: [write, n.txt, '${text}']\n"
            "  - provider: files\n    args: [list, .]\n"
            "  - provider: files\n    args: [read, n.txt]\n"
        ),
    )
    result = run(work, env, "-o", "raw", "capability", "execute", "provider.md", "-i", "text=hi")
    assert result.code == 0, result.stderr
    assert result.stdout == b"hi\n"
    assert result.stderr == b""
    write(
        work / "binary.md",
        capability(
            "version: v1\nworkflow:\n"
            "  - binary: echo\n    args: [noise]\n"
            "  - binary: cat\n    args: [n.txt, n.txt]\n"
        ),
    )
    result = run(work, env, "-o", "raw", "capability", "execute", "binary.md")
    assert result.code == 0, result.stderr
    assert result.stdout == b"hi\nhi\n"
    assert result.stderr == b""


def test_raw_failure_prints_nothing_on_stdout_and_says_why_on_stderr(
    work: Path, env: dict[str, str]
) -> None:
    result = run(work, env, "-o", "raw", "files", "read", "missing.txt")
    assert result.code == 1
    assert result.stdout == b""
    assert b"no such file: 'missing.txt'" in result.stderr
    assert b"failed: step 1 (files read) failed (run " in result.stderr
    refused = run(work, env, "-o", "raw", "files", "read", "/etc/hostname")
    assert refused.code == 3 and refused.stdout == b""
    assert b"outside the read root" in refused.stderr


def test_write_and_append_both_end_their_content_with_one_newline(
    work: Path, env: dict[str, str]
) -> None:
    def call(*args: str) -> None:
        result = run(work, env, "files", *args)
        assert result.code == 0, result.stderr

    call("write", "a.txt", "hello")
    assert (work / "a.txt").read_bytes() == b"hello\n"
    call("append", "a.txt", "world")
    assert (work / "a.txt").read_bytes() == b"hello\nworld\n"
    call("write", "b.txt", "line\n")  # already ends with one: not doubled
    call("append", "b.txt", "more\n")
    assert (work / "b.txt").read_bytes() == b"line\nmore\n"
    call("write", "c.txt", "")  # empty content: an empty file
    call("append", "c.txt", "")
    assert (work / "c.txt").read_bytes() == b""
    assert run(work, env, "-o", "raw", "files", "read", "a.txt").stdout == b"hello\nworld\n"


def test_output_raw_passes_a_programs_bytes_exactly(work: Path, env: dict[str, str]) -> None:
    # an image, an archive: bytes that are not UTF-8 (they became U+FFFD on their way)
    blob = bytes(range(256)) * 40 + b"\xe9\xff\xc3"  # ends inside a UTF-8 sequence
    (work / "blob.bin").write_bytes(blob)
    raw = run(work, env, "--output", "raw", "command", "run", "cat", "blob.bin")
    assert raw.code == 0, raw.stderr
    assert raw.stdout == blob
    # text output shows such a byte as its escape, never raw
    (work / "latin1.txt").write_bytes(b"h\xe9llo\n")
    text = run(work, env, "command", "run", "cat", "latin1.txt")
    assert text.code == 0, text.stderr
    assert text.stdout == b"h\\udce9llo\n"
