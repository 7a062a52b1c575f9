"""Named pipes, devices and sockets where runtime reads a file the user named.

Opening a FIFO waits for a writer, for ever if none comes. Each case runs the installed
``runtime`` under a time limit: a hang fails the test. A capability path or a file of
Home that is not a regular file is refused (exit 2, saying what it is); one met in a
folder walk is skipped, saying so; ``--input key=@FILE`` reads a pipe (a process
substitution, ``<(cmd)``) until its writer closes it, and one without a writer as empty.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import capability, write

LIMIT = 20  # seconds: a hang fails the test instead of blocking the suite
VALID = capability(
    "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n",
    frontmatter="name: ok\n",
)
ECHO = capability(
    "version: v1\ninputs:\n  note:\n    required: true\nworkflow:\n"
    "  - provider: files\n    args: [write, n.txt, '${note}']\n",
    frontmatter="name: echo\n",
)


@pytest.fixture
def fifo(work: Path) -> Path:
    path = work / "fifo.md"
    os.mkfifo(path)
    return path


def test_a_named_pipe_given_as_a_capability_is_refused(cli_proc, fifo: Path) -> None:
    for command in (("capability", "validate"), ("capability", "execute")):
        result = cli_proc(*command, "fifo.md", timeout=LIMIT)
        assert result.code == 2, result.stderr
        assert "fifo.md is a named pipe, not a regular file" in result.stderr, result.stderr


def test_a_socket_given_as_a_capability_is_refused(cli_proc, work: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(work / "sock.md"))
        result = cli_proc("capability", "validate", "sock.md", timeout=LIMIT)
    assert result.code == 2, result.stderr
    assert "sock.md is a socket, not a regular file" in result.stderr, result.stderr


def test_a_named_pipe_in_a_folder_is_skipped_saying_so(cli_proc, work: Path) -> None:
    write(work / "caps" / "ok.md", VALID)
    os.mkfifo(work / "caps" / "fifo.md")
    result = cli_proc("capability", "validate", "caps", timeout=LIMIT)
    assert result.code == 0, result.stdout + result.stderr
    assert "caps/fifo.md skipped: a named pipe, not a regular file" in result.stdout
    assert "1 checked: 1 valid" in result.stdout
    listed = cli_proc("--output", "json", "capability", "validate", "caps", timeout=LIMIT)
    assert listed.json()["skipped"] == ["caps/fifo.md"]


def test_a_named_pipe_among_the_capability_sources_is_not_listed(cli_proc, work: Path) -> None:
    write(work / "capabilities" / "ok.md", VALID)
    os.mkfifo(work / "capabilities" / "fifo.md")
    result = cli_proc("--output", "json", "capability", "list", timeout=LIMIT)
    assert result.code == 0, result.stderr
    assert [c["name"] for c in result.json()["capabilities"]] == ["ok"]


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("config.yaml", ("capability", "list")),
        ("contexts.json", ("context", "list")),
        ("policy.yaml", ("policy", "show")),
    ],
)
def test_a_named_pipe_as_a_file_of_home_is_refused(
    cli_proc, home: Path, name: str, command: tuple[str, ...]
) -> None:
    assert cli_proc("policy", "show").code == 0  # Home exists
    (home / name).unlink(missing_ok=True)
    os.mkfifo(home / name, 0o600)
    result = cli_proc(*command, timeout=LIMIT)
    assert result.code == 2, result.stdout + result.stderr
    assert f"{home / name}" in result.stderr and "a named pipe" in result.stderr, result.stderr


@pytest.fixture
def writer(work: Path) -> Iterator[Path]:
    """A named pipe a writer is waiting on, as a process substitution gives one."""
    path = work / "note.pipe"
    os.mkfifo(path)

    def feed() -> None:
        with open(path, "w") as pipe:  # waits for runtime to open it
            pipe.write("from a pipe")

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    yield path
    if thread.is_alive():  # runtime never opened it: let the writer go
        with open(path, "rb"):
            pass
    thread.join(LIMIT)


def test_an_input_file_may_be_a_pipe(cli_proc, work: Path, writer: Path) -> None:
    write(work / "echo.md", ECHO)
    result = cli_proc(
        "capability", "execute", "echo.md", "--input", "note=@note.pipe", timeout=LIMIT
    )
    assert result.code == 0, result.stdout + result.stderr
    assert (work / "n.txt").read_text() == "from a pipe\n"


def test_an_input_pipe_without_a_writer_reads_as_empty(cli_proc, work: Path) -> None:
    write(work / "echo.md", ECHO)
    os.mkfifo(work / "none.pipe")
    result = cli_proc("capability", "plan", "echo.md", "--input", "note=@none.pipe", timeout=LIMIT)
    # read at once, as empty: and an empty value of a required input is refused
    assert result.code == 2, result.stdout + result.stderr
    assert "required input 'note' is empty" in result.stderr


def test_an_input_file_that_is_a_device_is_refused(cli_proc, work: Path) -> None:
    write(work / "echo.md", ECHO)
    result = cli_proc("capability", "plan", "echo.md", "--input", "note=@/dev/zero", timeout=LIMIT)
    assert result.code == 2, result.stderr
    assert "note=@/dev/zero: cannot read the file: it is a character device" in result.stderr
