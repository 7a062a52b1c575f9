"""A real Secret Service for tests: gnome-keyring on a private D-Bus session bus.

The recipe and what was found by trying it are in the docstring of
``tests/integration/test_keyring_secret_service.py``; the integration tests that log in
through a real keyring (that file, the ER conformance replay) start one here. Without
dbus-run-session or gnome-keyring-daemon a test skips (fails under
RUNTIME_REQUIRE_INTEGRATION=1), as the other integration tests do.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import require_tool

SECRET_SERVICE = "keyring.backends.SecretService.Keyring"

SESSION_SCRIPT = """\
set -eu
printf '%s' "$RT_KEYRING_PASSWORD" |
    gnome-keyring-daemon --unlock --components=secrets --daemonize >"$RT_STATE/daemon.out"
printf '%s\\n' "$DBUS_SESSION_BUS_ADDRESS" >"$RT_STATE/bus.tmp"
mv "$RT_STATE/bus.tmp" "$RT_STATE/bus"
exec cat >/dev/null
"""


@dataclass
class SecretSession:
    address: str
    log: Path
    daemon_pid: int | None

    def env(self) -> dict[str, str]:
        return {
            "DBUS_SESSION_BUS_ADDRESS": self.address,
            "PYTHON_KEYRING_BACKEND": SECRET_SERVICE,
        }

    def items(self, service: str) -> list[tuple[dict[str, str], str]]:
        """(attributes, secret) of every item stored for ``service``, read from the bus."""
        import secretstorage
        from jeepney.io.blocking import open_dbus_connection

        with contextlib.closing(open_dbus_connection(bus=self.address)) as conn:
            found = []
            for item in secretstorage.search_items(conn, {"service": service}):
                found.append((item.get_attributes(), item.get_secret().decode()))
            return found


def _secret_service_pid(address: str) -> int:
    """Pid of the process owning ``org.freedesktop.secrets`` (waits up to 10 s for it)."""
    from jeepney.bus_messages import message_bus
    from jeepney.io.blocking import open_dbus_connection

    name = "org.freedesktop.secrets"
    with contextlib.closing(open_dbus_connection(bus=address)) as conn:
        deadline = time.monotonic() + 10
        while not conn.send_and_get_reply(message_bus.NameHasOwner(name), timeout=5).body[0]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nobody owns {name} on the private bus")
            time.sleep(0.05)
        reply = conn.send_and_get_reply(message_bus.GetConnectionUnixProcessID(name), timeout=5)
        return int(reply.body[0])


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait is missing


def _tail(path: Path) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace")[-3000:] or "(empty)"
    return "(no log)"


def start_secret_session(base: Path, password: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    require_tool("dbus-run-session", "a private D-Bus session bus for the Secret Service tests")
    require_tool("gnome-keyring-daemon", "a real Secret Service (Debian package gnome-keyring)")
    state = base / "state"
    state.mkdir(parents=True)
    (base / "home").mkdir()
    script = state / "session.sh"
    script.write_text(SESSION_SCRIPT)
    log = state / "session.log"
    runtime_dir = Path(tempfile.mkdtemp(prefix="rtkr-"))  # short: the daemon binds a socket here
    runtime_dir.chmod(0o700)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(base / "home"),
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "LANG": "C.UTF-8",
        "RT_STATE": str(state),
        "RT_KEYRING_PASSWORD": password,
    }
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            ["dbus-run-session", "--", "sh", str(script)],
            stdin=subprocess.PIPE,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    return proc, state, runtime_dir


def stop_secret_session(
    proc: subprocess.Popen[bytes], daemon_pid: int | None, runtime_dir: Path
) -> None:
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    if daemon_pid is not None:
        deadline = time.monotonic() + 5
        while _alive(daemon_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(daemon_pid):  # it should have left with its bus; end it by its own pid
            with contextlib.suppress(ProcessLookupError):
                os.kill(daemon_pid, signal.SIGTERM)
    shutil.rmtree(runtime_dir, ignore_errors=True)


def wait_for_bus(proc: subprocess.Popen[bytes], state: Path, what: str) -> str:
    bus_file = state / "bus"
    deadline = time.monotonic() + 30
    while not bus_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(
                f"could not start {what}: ran `dbus-run-session -- sh session.sh` with\n"
                f"{SESSION_SCRIPT}\n"
                f"exit status {proc.poll()}; output of the session:\n{_tail(state / 'session.log')}"
            )
        time.sleep(0.05)
    return bus_file.read_text().strip()


@contextlib.contextmanager
def secret_session(base: Path) -> Iterator[SecretSession]:
    """A private session bus with an unlocked gnome-keyring login collection, under
    ``base``; ended, its daemon too, when the block ends."""
    proc, state, runtime_dir = start_secret_session(base, "runtime-test-password")
    daemon_pid: int | None = None
    try:
        address = wait_for_bus(proc, state, "gnome-keyring on a private session bus")
        try:
            import secretstorage
            from jeepney.io.blocking import open_dbus_connection

            daemon_pid = _secret_service_pid(address)
            with contextlib.closing(open_dbus_connection(bus=address)) as conn:
                collection = secretstorage.get_default_collection(conn)
                locked = collection.is_locked()
                label = collection.get_label()
        except Exception as exc:
            pytest.fail(
                "gnome-keyring-daemon started but its Secret Service is not usable: "
                f"{type(exc).__name__}: {exc}\n"
                "tried: `printf PASSWORD | gnome-keyring-daemon --unlock --components=secrets "
                "--daemonize` in `dbus-run-session`, HOME and XDG_RUNTIME_DIR in a temp dir;\n"
                f"session output:\n{_tail(state / 'session.log')}"
            )
        if locked:
            pytest.fail(f"the default collection {label!r} is locked after --unlock")
        yield SecretSession(address, state / "session.log", daemon_pid)
    finally:
        stop_secret_session(proc, daemon_pid, runtime_dir)
