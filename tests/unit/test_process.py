"""Tests for runtime.execute.process: running one external program safely.

The programs under test are ``/bin/sh -c`` scripts or ``python -c`` snippets;
the module itself never uses a shell.
"""

from __future__ import annotations

import gc
import os
import resource
import shutil
import signal
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Make the repository root importable however pytest is started (ruff's E402
# allows imports after a sys.path change).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runtime.execute import process as process_module
from runtime.execute.process import ProcessResult, ProcessStartError, omission_marker, run_process

SH = "/bin/sh"
PY = sys.executable
ENV = {"PATH": os.defpath, "LC_ALL": "C.UTF-8"}

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX process groups")


def run(
    argv: list[str], *, timeout: float = 10.0, cwd: Path | None = None, **kwargs: Any
) -> ProcessResult:
    return run_process(argv, env=ENV, cwd=cwd or Path.cwd(), timeout=timeout, **kwargs)


def sh(script: str, **kwargs: Any) -> ProcessResult:
    return run([SH, "-c", script], **kwargs)


def py(code: str, **kwargs: Any) -> ProcessResult:
    return run([PY, "-c", code], **kwargs)


def live_members(pgid: int) -> list[int]:
    """Pids of group ``pgid`` that are alive (not zombies), from /proc on Linux."""
    if not Path("/proc/self/stat").exists():
        return []
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            pids.append(int(entry))
    return pids


def assert_group_gone(pgid: int) -> None:
    """No process of the group is left.

    Right after the run no member may be alive; killed grandchildren may stay
    zombies until init reaps them (here it takes up to ~2 s), so the group
    itself is given a few seconds to vanish.
    """
    assert live_members(pgid) == []
    deadline = time.monotonic() + 5.0
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < deadline, f"process group {pgid} still exists"
        time.sleep(0.02)


@pytest.fixture
def default_sigint() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# -- exit codes, capture, environment, directory ------------------------------


def test_exit_code_and_both_streams() -> None:
    result = sh("echo out; echo err >&2; exit 3")
    assert result.exit_code == 3
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"
    assert result.stdout_bytes == 4
    assert result.stderr_bytes == 4
    assert not result.truncated
    assert not result.timed_out


def test_success_and_no_output() -> None:
    result = run(["/bin/true" if Path("/bin/true").exists() else "/usr/bin/true"])
    assert result.exit_code == 0
    assert result.stdout == result.stderr == ""
    assert result.stdout_bytes == result.stderr_bytes == 0


def test_killed_by_signal_is_a_negative_exit_code() -> None:
    result = sh("kill -9 $$")
    assert result.exit_code == -signal.SIGKILL
    assert not result.timed_out


def test_arguments_are_not_interpreted_by_a_shell() -> None:
    tricky = "$(echo pwned); `id` > /dev/null && echo * | cat"
    result = run([PY, "-c", "import sys; print(sys.argv[1])", tricky])
    assert result.stdout == tricky + "\n"


def test_module_never_uses_a_shell() -> None:
    source = Path(process_module.__file__).read_text(encoding="utf-8")
    assert "shell=True" not in source
    assert "os.system" not in source


def test_environment_is_exactly_the_one_given(tmp_path: Path) -> None:
    env_program = shutil.which("env") or "/usr/bin/env"
    env = {"ONLY_THIS": "1", "WITH SPACE": "a b", "UNICODE": "é€"}
    os.environ["RUNTIME_TEST_LEAK"] = "leaked"
    try:
        result = run_process([env_program], env=env, cwd=tmp_path, timeout=10)
    finally:
        del os.environ["RUNTIME_TEST_LEAK"]
    assert result.exit_code == 0
    lines = sorted(result.stdout.splitlines())
    assert lines == sorted(f"{k}={v}" for k, v in env.items())


def test_empty_environment(tmp_path: Path) -> None:
    env_program = shutil.which("env") or "/usr/bin/env"
    result = run_process([env_program], env={}, cwd=tmp_path, timeout=10)
    assert result.exit_code == 0
    assert result.stdout == ""


def test_working_directory(tmp_path: Path) -> None:
    result = py("import os; print(os.getcwd())", cwd=tmp_path)
    assert Path(result.stdout.strip()).resolve() == tmp_path.resolve()


def test_stdin_is_devnull() -> None:
    result = py("import sys; print(repr(sys.stdin.read()))", timeout=5)
    assert result.stdout == "''\n"
    assert not result.timed_out


def test_both_pipes_are_read_concurrently() -> None:
    # Far more than a pipe buffer on stderr first, then on stdout: reading one
    # pipe after the other would deadlock.
    code = (
        "import sys\n"
        "sys.stderr.write('e' * 3_000_000); sys.stderr.flush()\n"
        "sys.stdout.write('o' * 3_000_000); sys.stdout.flush()\n"
        "sys.stderr.write('E' * 3_000_000)\n"
    )
    result = py(code, timeout=20)
    assert result.exit_code == 0
    assert result.stdout_bytes == 3_000_000
    assert result.stderr_bytes == 6_000_000
    assert result.stderr.startswith("e" * 1000)
    assert result.stderr.endswith("E" * 1000)


# -- streaming ----------------------------------------------------------------


def test_streaming_chunks_arrive_in_order() -> None:
    code = (
        "import sys, time\n"
        "for i in range(5):\n"
        "    print('line', i, flush=True)\n"
        "    print('err', i, file=sys.stderr, flush=True)\n"
        "    time.sleep(0.05)\n"
    )
    chunks: list[tuple[str, str]] = []
    result = py(code, on_output=lambda stream, text: chunks.append((stream, text)))
    out = [text for stream, text in chunks if stream == "stdout"]
    err = [text for stream, text in chunks if stream == "stderr"]
    assert "".join(out) == result.stdout == "".join(f"line {i}\n" for i in range(5))
    assert "".join(err) == result.stderr == "".join(f"err {i}\n" for i in range(5))
    assert len(out) > 1  # really streamed, not delivered at the end


def test_streaming_happens_while_the_program_runs() -> None:
    seen: list[float] = []
    start = time.monotonic()
    py(
        "import time; print('first', flush=True); time.sleep(1)",
        on_output=lambda stream, text: seen.append(time.monotonic() - start),
    )
    assert seen and seen[0] < 0.9


def test_utf8_sequence_split_across_writes_is_intact() -> None:
    code = (
        "import sys, time\n"
        "out = sys.stdout.buffer\n"
        "out.write(b'price: \\xe2\\x82'); out.flush(); time.sleep(0.3)\n"
        "out.write(b'\\xac and \\xf0\\x9f'); out.flush(); time.sleep(0.3)\n"
        "out.write(b'\\x98\\x80\\n'); out.flush()\n"
    )
    chunks: list[str] = []
    result = py(code, on_output=lambda stream, text: chunks.append(text))
    assert "".join(chunks) == "price: € and 😀\n"
    assert all("\ufffd" not in c for c in chunks)
    assert result.stdout == "price: € and 😀\n"
    assert result.stdout_bytes == len("price: € and 😀\n".encode())


def test_partial_last_line_is_streamed_at_the_end() -> None:
    chunks: list[str] = []
    result = sh("printf 'a\\nb'", on_output=lambda stream, text: chunks.append(text))
    assert "".join(chunks) == result.stdout == "a\nb"


def test_long_line_without_newline_is_streamed_before_the_end() -> None:
    chunks: list[str] = []
    size = process_module.MAX_PENDING_CHARS * 3
    result = py(
        f"import sys; sys.stdout.write('x' * {size})",
        on_output=lambda stream, text: chunks.append(text),
    )
    assert "".join(chunks) == "x" * size
    assert result.stdout_bytes == size
    assert len(chunks) > 1
    assert all(
        len(c) <= process_module.MAX_PENDING_CHARS + process_module.CHUNK_SIZE for c in chunks
    )


def test_invalid_utf8_is_kept_as_its_byte_while_streaming_and_replaced_when_kept() -> None:
    # streamed: the byte's lone surrogate, which raw output writes back as that byte; the
    # output kept for the record reads it as U+FFFD
    chunks: list[str] = []
    result = py(
        "import sys; sys.stdout.buffer.write(b'a\\xffb\\n')",
        on_output=lambda stream, text: chunks.append(text),
    )
    assert result.stdout == "a\ufffdb\n"
    assert "".join(chunks) == "a\udcffb\n"
    assert "".join(chunks).encode("utf-8", "surrogateescape") == b"a\xffb\n"


# -- redaction ------------------------------------------------------------------


def _redact(text: str) -> str:
    return text.replace("hunter2", "[REDACTED]")


def test_redact_applies_to_streamed_and_kept_text() -> None:
    # The secret is written in two pieces, with a pause between them.
    code = (
        "import sys, time\n"
        "print('password=hun', end='', flush=True); time.sleep(0.3)\n"
        "print('ter2 ok', flush=True)\n"
        "print('hunter2', file=sys.stderr)\n"
    )
    chunks: list[str] = []
    result = py(code, on_output=lambda stream, text: chunks.append(text), redact=_redact)
    streamed = "".join(chunks)
    assert "hunter2" not in streamed
    assert "[REDACTED]" in streamed
    assert result.stdout == "password=[REDACTED] ok\n"
    assert result.stderr == "[REDACTED]\n"
    assert result.stdout_bytes == len("password=hunter2 ok\n")


def test_redact_applies_to_head_and_tail_of_truncated_output() -> None:
    code = (
        "import sys\nsys.stdout.write('hunter2 head\\n' + 'x' * 1_000_000 + '\\ntail hunter2\\n')\n"
    )
    result = py(code, redact=_redact, head_bytes=100, tail_bytes=100)
    assert result.truncated
    assert result.stdout.startswith("[REDACTED] head\n")
    assert result.stdout.endswith("\ntail [REDACTED]\n")
    assert "hunter2" not in result.stdout


# -- bounded output -----------------------------------------------------------


def test_head_and_tail_exact() -> None:
    result = sh("printf 0123456789abcdef", head_bytes=4, tail_bytes=4)
    assert result.truncated
    assert result.stdout == "0123" + omission_marker(8) + "cdef"
    assert result.stdout == "0123\n[... 8 bytes omitted ...]\ncdef"
    assert result.stdout_bytes == 16


def test_output_exactly_at_the_limit_is_not_truncated() -> None:
    result = sh("printf 01234567", head_bytes=4, tail_bytes=4)
    assert not result.truncated
    assert result.stdout == "01234567"


def test_zero_head_or_tail() -> None:
    result = sh("printf 0123456789", head_bytes=0, tail_bytes=3)
    assert result.stdout == omission_marker(7) + "789"
    result = sh("printf 0123456789", head_bytes=3, tail_bytes=0)
    assert result.stdout == "012" + omission_marker(7)


def test_truncation_is_per_stream_and_reported() -> None:
    result = sh("printf 0123456789; printf ab >&2", head_bytes=2, tail_bytes=2)
    assert result.truncated
    assert result.stdout == "01" + omission_marker(6) + "89"
    assert result.stderr == "ab"


def test_cut_does_not_split_a_utf8_character() -> None:
    # "€" is 3 bytes; the head limit falls inside the first one and the tail
    # limit inside the last one: the halves are omitted, not shown as U+FFFD.
    text = "€" * 10
    result = py(f"import sys; sys.stdout.write({text!r})", head_bytes=4, tail_bytes=4)
    assert result.truncated
    assert "\ufffd" not in result.stdout
    assert result.stdout == "€" + omission_marker(24) + "€"
    assert result.stdout_bytes == 30


def test_big_output_keeps_head_and_tail_with_bounded_memory() -> None:
    size = 50 * 1024 * 1024
    script = f"printf BEGIN; head -c {size} /dev/zero | tr '\\0' x; printf END"
    gc.collect()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    try:
        result = sh(script, timeout=60)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    assert result.exit_code == 0
    total = size + len("BEGIN") + len("END")
    assert result.stdout_bytes == total
    assert result.truncated
    head_bytes = tail_bytes = 64 * 1024
    omitted = total - head_bytes - tail_bytes
    assert result.stdout == (
        "BEGIN" + "x" * (head_bytes - 5) + omission_marker(omitted) + "x" * (tail_bytes - 3) + "END"
    )
    assert peak < 2 * 1024 * 1024, f"traced peak {peak} bytes"
    assert (rss_after - rss_before) * scale < 50 * 1024 * 1024


def test_big_output_with_streaming_stays_bounded() -> None:
    size = 20 * 1024 * 1024
    received = 0
    biggest = 0

    def on_output(stream: str, text: str) -> None:
        nonlocal received, biggest
        received += len(text)
        biggest = max(biggest, len(text))

    tracemalloc.start()
    try:
        result = sh(f"head -c {size} /dev/zero | tr '\\0' y", timeout=60, on_output=on_output)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.stdout_bytes == received == size
    assert biggest <= process_module.MAX_PENDING_CHARS + process_module.CHUNK_SIZE
    assert peak < 4 * 1024 * 1024, f"traced peak {peak} bytes"


# -- timeout --------------------------------------------------------------------


def test_timeout_kills_program_and_grandchild() -> None:
    start = time.monotonic()
    result = sh("echo $$; sleep 30 & sleep 30", timeout=0.5)
    elapsed = time.monotonic() - start
    assert result.timed_out
    assert result.exit_code is None
    assert 0.5 <= elapsed < 5
    pgid = int(result.stdout.split()[0])
    assert_group_gone(pgid)


def test_timeout_keeps_output_printed_before() -> None:
    result = sh("echo started; echo warming >&2; sleep 30", timeout=0.5)
    assert result.timed_out
    assert result.stdout == "started\n"
    assert result.stderr == "warming\n"


def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored() -> None:
    start = time.monotonic()
    result = sh("trap '' TERM; echo $$; sleep 30 & sleep 30 & wait", timeout=0.5)
    elapsed = time.monotonic() - start
    assert result.timed_out
    assert result.exit_code is None
    assert elapsed < 0.5 + process_module.TERM_GRACE + 2
    assert_group_gone(int(result.stdout.split()[0]))


def test_program_handling_sigterm_may_finish_its_output() -> None:
    code = (
        "import signal, sys, time\n"
        "def bye(*_):\n"
        "    print('cleaning up', flush=True); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    result = py(code, timeout=1.0)
    assert result.timed_out
    assert result.exit_code is None
    assert result.stdout == "ready\ncleaning up\n"


# -- descendants holding the pipes --------------------------------------------


def test_grandchild_holding_the_pipe_does_not_hang() -> None:
    start = time.monotonic()
    result = sh("echo $$; sleep 30 & echo done", timeout=30)
    elapsed = time.monotonic() - start
    assert elapsed < 5
    assert not result.timed_out
    assert result.exit_code == 0
    pgid_text, done = result.stdout.split()
    assert done == "done"
    assert_group_gone(int(pgid_text))


def test_background_process_left_behind_is_ended() -> None:
    # The background process does not hold the pipes, but stays in the group.
    start = time.monotonic()
    result = sh("echo $$; sleep 30 >/dev/null 2>&1 &", timeout=30)
    assert time.monotonic() - start < 5
    assert result.exit_code == 0
    assert_group_gone(int(result.stdout.split()[0]))


@pytest.fixture
def subreaper() -> Iterator[None]:
    """This process is a child subreaper for the test, as the runtime is for a run."""
    from runtime.execute.launch import become_subreaper

    if not become_subreaper():
        pytest.skip("PR_SET_CHILD_SUBREAPER is Linux only")
    try:
        yield
    finally:
        become_subreaper(False)


def test_as_a_subreaper_a_member_left_behind_is_still_ended(subreaper: None) -> None:
    # its parent (the shell) exits first: it becomes our child, alive, and must be ended
    start = time.monotonic()
    result = sh("echo $$; sleep 30 >/dev/null 2>&1 &", timeout=30, subreaper=True)
    assert time.monotonic() - start < 5
    assert result.exit_code == 0
    assert_group_gone(int(result.stdout.split()[0]))


def test_as_a_subreaper_a_member_ending_after_the_leader_is_reaped(subreaper: None) -> None:
    # a member that ends just after the leader (as a confined program's bubblewrap helper
    # does) is reaped by the run, not left a zombie: the group is gone when it returns
    result = sh("echo $$; (sleep 0.2; exit 0) >/dev/null 2>&1 & exit 0", subreaper=True)
    assert result.exit_code == 0
    pgid = int(result.stdout.split()[0])
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


# -- interruption ----------------------------------------------------------------


@pytest.mark.usefixtures("default_sigint")
def test_keyboard_interrupt_kills_the_group_and_is_reraised() -> None:
    assert threading.current_thread() is threading.main_thread()
    seen: list[str] = []
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sh(
                "echo $$; sleep 30 & sleep 30",
                timeout=30,
                on_output=lambda stream, text: seen.append(text),
            )
    finally:
        timer.cancel()
    assert time.monotonic() - start < 5
    pgid = int("".join(seen).split()[0])
    assert_group_gone(pgid)


@pytest.mark.usefixtures("default_sigint")
def test_keyboard_interrupt_with_sigterm_ignored_still_ends_the_group() -> None:
    seen: list[str] = []
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sh(
                "trap '' TERM; echo $$; sleep 30 & wait",
                timeout=30,
                on_output=lambda stream, text: seen.append(text),
            )
    finally:
        timer.cancel()
    assert time.monotonic() - start < 0.5 + process_module.TERM_GRACE + 2
    assert_group_gone(int("".join(seen).split()[0]))


def test_exception_in_callback_kills_the_group_and_propagates() -> None:
    pgids: list[int] = []

    class Stop(Exception):
        pass

    def on_output(stream: str, text: str) -> None:
        pgids.append(int(text.split()[0]))
        raise Stop

    with pytest.raises(Stop):
        sh("echo $$; sleep 30 & sleep 30", timeout=30, on_output=on_output)
    assert_group_gone(pgids[0])


# -- start failures and misuse ---------------------------------------------------


def test_missing_executable(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-program"
    with pytest.raises(ProcessStartError) as info:
        run_process([str(missing)], env=ENV, cwd=tmp_path, timeout=5)
    assert str(missing) in str(info.value)
    assert "no such file" in str(info.value)


def test_file_that_is_not_executable(tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    with pytest.raises(ProcessStartError) as info:
        run_process([str(script)], env=ENV, cwd=tmp_path, timeout=5)
    assert str(script) in str(info.value)
    assert "permission denied" in str(info.value)


def test_directory_is_not_executable(tmp_path: Path) -> None:
    with pytest.raises(ProcessStartError) as info:
        run_process([str(tmp_path)], env=ENV, cwd=tmp_path, timeout=5)
    assert str(tmp_path) in str(info.value)


def test_missing_working_directory(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    with pytest.raises(ProcessStartError) as info:
        run_process([SH, "-c", "true"], env=ENV, cwd=missing, timeout=5)
    assert "working directory" in str(info.value)
    assert str(missing) in str(info.value)


def test_process_start_error_is_an_exception() -> None:
    assert issubclass(ProcessStartError, Exception)
    assert ProcessStartError("x").message == "x"


def test_relative_or_empty_argv_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        run_process(["sh", "-c", "true"], env=ENV, cwd=tmp_path, timeout=5)
    with pytest.raises(ValueError):
        run_process([], env=ENV, cwd=tmp_path, timeout=5)


def test_timeout_fires_while_output_keeps_flowing() -> None:
    start = time.monotonic()
    result = py("import sys\nwhile True: sys.stdout.write('z' * 4096)", timeout=0.5)
    assert time.monotonic() - start < 5
    assert result.timed_out
    assert result.exit_code is None
    assert result.truncated
    assert result.stdout_bytes > 0


def test_without_pidfd_exit_is_noticed_by_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    result = sh("echo $$; exit 4", timeout=10)
    assert result.exit_code == 4
    start = time.monotonic()
    result = sh("echo $$; sleep 30 & echo done", timeout=30)
    assert time.monotonic() - start < 5
    assert result.exit_code == 0
    assert_group_gone(int(result.stdout.split()[0]))
    result = sh("echo $$; sleep 30 & sleep 30", timeout=0.5)
    assert result.timed_out
    assert_group_gone(int(result.stdout.split()[0]))


def test_without_pidfd_a_closed_pipe_pair_does_not_wait_a_poll_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # once both pipes are at EOF only the exit is awaited: waitpid, not an empty poll(2)
    # that sleeps POLL_INTERVAL (made huge here, so sleeping it would be unmistakable)
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    monkeypatch.setattr(process_module, "POLL_INTERVAL", 120.0)
    start = time.monotonic()
    for _ in range(3):
        result = sh("exec >&- 2>&-; sleep 0.2; exit 3", timeout=60)
        assert result.exit_code == 3
    assert time.monotonic() - start < 30


def test_a_program_that_exited_as_time_ran_out_is_not_reported_as_timed_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first wait returns only once the program has exited and the deadline has
    # passed, without reading its pidfd: the exit must still win over the timeout.
    pump = process_module._Runner.pump
    calls: list[float] = []

    def late_pump(self: Any, timeout: float) -> None:
        if not calls:
            calls.append(timeout)
            os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
            time.sleep(timeout + 0.05)
            return
        pump(self, timeout)

    monkeypatch.setattr(process_module._Runner, "pump", late_pump)
    result = sh("echo done; exit 3", timeout=0.3)
    assert calls, "the patched wait was not used"
    assert not result.timed_out
    assert result.exit_code == 3
    assert result.stdout == "done\n"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
def test_the_program_inherits_no_descriptor_but_its_three_streams(tmp_path: Path) -> None:
    # an inheritable descriptor of ours (as one inherited from a parent shell would be)
    # must not reach the program: only stdin, stdout and stderr do
    fd = os.open(tmp_path / "secret.txt", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.set_inheritable(fd, True)
        listing = sh('for f in /proc/$$/fd/*; do echo "${f##*/}"; done')
    finally:
        os.close(fd)
    assert listing.exit_code == 0, listing.stderr
    # the shell may hold one more descriptor of its own (the script, a dup for the loop)
    names = set(listing.stdout.split())
    assert {"0", "1", "2"} <= names
    assert fd > 2 and str(fd) not in names
