"""The Auth Engine and the OS keyring: in memory, and a real Secret Service.

Unit tests drive :class:`runtime.home.auth.AuthEngine` with the in-memory backend
from :mod:`tests.memory_keyring` (and with backends that fail).

The integration tests run the real ``runtime`` CLI against a real
gnome-keyring Secret Service on a private D-Bus session bus. The recipe,
verified headless (no X display, no user session, running as any user)::

    export HOME=<tmp>/home XDG_RUNTIME_DIR=<short tmp dir, mode 0700>
    dbus-run-session -- sh -c '
        printf %s "$PASSWORD" |
            gnome-keyring-daemon --unlock --components=secrets --daemonize >/dev/null
        echo "$DBUS_SESSION_BUS_ADDRESS" > <tmp>/bus   # hand the bus to the test
        exec cat >/dev/null                            # live until stdin closes
    '

then every ``runtime`` process gets ``DBUS_SESSION_BUS_ADDRESS=<that
address>`` and ``PYTHON_KEYRING_BACKEND=keyring.backends.SecretService.Keyring``.

What matters, found by trying:

* ``--unlock`` reads the *login* keyring password from stdin until EOF and
  creates the ``login`` collection (the ``default`` alias) with it, unlocked.
  The password must be **non-empty**: with an empty one the daemon starts but
  creates no collection, and the first write asks ``gcr-prompter`` to create
  one, which cannot open a display and is dismissed (keyring raises
  ``InitError: Failed to create the collection: Prompt dismissed``). The
  second test below keeps that broken set-up on purpose.
* ``--components=secrets`` is enough (no ssh/pkcs11 agents); ``--replace`` is
  not needed on a fresh private bus. ``--daemonize`` forks; the fixture
  waits until someone owns ``org.freedesktop.secrets`` on the bus before
  anything talks to it (otherwise D-Bus activation could start a second,
  collection-less daemon from ``org.freedesktop.secrets.service``).
* ``HOME`` decides where ``~/.local/share/keyrings/login.keyring`` is
  written, so it points into the test's temporary folder; ``XDG_RUNTIME_DIR``
  holds the daemon's control socket and is kept short (socket paths are
  limited to 107 bytes).
* When stdin of the session script closes, ``dbus-run-session`` stops the bus
  and gnome-keyring-daemon exits with it. The fixture still checks the
  daemon's pid (asked from the bus) and ends it by pid if it lingers.

The token is looked up again straight from the Secret Service (through
``secretstorage`` on the same bus), so the test proves the token really is in
gnome-keyring, under service ``runtime:github:HOST`` and user ``token``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import keyring.core
import pytest
from keyring.backends import fail

from runtime.errors import ExitCode, MissingCredential
from runtime.home.auth import AuthEngine, KeyringUnavailable
from runtime.plan.workspace import Workspace
from runtime.redact import REDACTED, Redactor
from tests.conftest import Result, keyring_service
from tests.github_double import GitHubDouble
from tests.memory_keyring import BrokenKeyring, MemoryKeyring
from tests.secret_service import (
    SECRET_SERVICE,
    SecretSession,
    _secret_service_pid,
    secret_session,
    start_secret_session,
    stop_secret_session,
    wait_for_bus,
)

DEFAULT_HOST = "github.com"

TOKEN = "rt-keyring-token-5d1c9e0b7a"
OTHER = "rt-env-token-8e2f4a6c13"
GHE = "ghe.example.com"


# ----------------------------------------------------------------------------- unit level


def make_engine(
    tmp_path: Path, backend: object = None, **environ: str
) -> tuple[AuthEngine, Redactor]:
    ws = Workspace(
        environ={"PATH": os.environ.get("PATH", ""), "RUNTIME_HOME": str(tmp_path), **environ},
        cwd=tmp_path,
    )
    redactor = Redactor()
    return AuthEngine(ws, redactor, keyring_backend=backend), redactor


def test_store_lookup_delete_roundtrip(tmp_path: Path) -> None:
    store: dict[tuple[str, str], str] = {}
    engine, redactor = make_engine(tmp_path, MemoryKeyring(store=store))

    empty = engine.lookup("github", GHE)
    assert empty.credential is None
    assert empty.problem is None
    assert empty.tried == (
        "environment variable RUNTIME_GITHUB_TOKEN",
        f"keyring ({keyring_service(GHE)})",
    )

    engine.store("github", GHE, TOKEN)
    assert store == {("runtime:github:ghe.example.com", "token"): TOKEN}

    found = engine.lookup("github", GHE)
    assert found.credential is not None
    assert found.credential.value == TOKEN
    assert found.credential.source == "keyring"
    assert found.credential.host == GHE
    assert TOKEN not in repr(found.credential)
    # every resolved value is registered with the redactor at once
    assert redactor.text(f"echo {TOKEN}") == f"echo {REDACTED}"

    # one host's token is not another host's
    assert engine.lookup("github", DEFAULT_HOST).credential is None

    assert engine.delete("github", GHE) is True
    assert store == {}
    assert engine.lookup("github", GHE).credential is None
    assert engine.delete("github", GHE) is False


def test_one_engine_asks_the_keyring_once_per_entry(tmp_path: Path) -> None:
    # an engine serves one command: a run sees the token it started with, and a locked
    # keyring is not asked (and does not prompt) again for each step
    store = {(keyring_service(GHE), "token"): TOKEN}
    MemoryKeyring.reads.clear()
    engine, _ = make_engine(tmp_path, MemoryKeyring(store=store))
    assert engine.require("github", GHE).value == TOKEN
    store[(keyring_service(GHE), "token")] = OTHER  # changed by another process
    assert engine.require("github", GHE).value == TOKEN
    assert engine.lookup("github", DEFAULT_HOST).credential is None
    assert len(MemoryKeyring.reads) == 2  # one per entry, not one per lookup
    # what the engine itself stores or deletes, it reads again
    engine.store("github", GHE, OTHER)
    assert engine.require("github", GHE).value == OTHER
    engine.delete("github", GHE)
    assert engine.lookup("github", GHE).credential is None


def test_a_failed_keyring_read_is_asked_again(tmp_path: Path) -> None:
    class Flaky(MemoryKeyring):
        failures = 1

        def get_password(self, service: str, username: str) -> str | None:
            if self.failures:
                self.failures -= 1
                raise RuntimeError("the keyring is locked")
            return super().get_password(service, username)

    engine, _ = make_engine(tmp_path, Flaky(store={(keyring_service(GHE), "token"): TOKEN}))
    assert engine.lookup("github", GHE).problem == "the keyring failed (RuntimeError)"
    found = engine.lookup("github", GHE).credential
    assert found is not None and found.value == TOKEN


def test_binary_environment_per_host(tmp_path: Path) -> None:
    engine, _ = make_engine(tmp_path, MemoryKeyring(store={}))
    engine.store("github", DEFAULT_HOST, TOKEN)
    engine.store("github", GHE, OTHER)
    config = str(tmp_path / "gh-config")
    public = engine.program_environment("github", DEFAULT_HOST, config)
    enterprise = engine.program_environment("github", GHE, config)
    assert public["GH_TOKEN"] == TOKEN and "GH_ENTERPRISE_TOKEN" not in public
    assert enterprise["GH_ENTERPRISE_TOKEN"] == OTHER and "GH_TOKEN" not in enterprise
    assert (public["GH_HOST"], enterprise["GH_HOST"]) == (DEFAULT_HOST, GHE)
    assert public["GH_CONFIG_DIR"] == enterprise["GH_CONFIG_DIR"] == config
    assert public["GH_PROMPT_DISABLED"] == "1"


def test_environment_variable_wins_over_keyring(tmp_path: Path) -> None:
    backend = MemoryKeyring(store={})
    engine, redactor = make_engine(tmp_path, backend, RUNTIME_GITHUB_TOKEN=OTHER)
    engine.store("github", GHE, TOKEN)
    found = engine.lookup("github", GHE)
    assert found.credential is not None
    assert found.credential.value == OTHER
    assert found.credential.source == "environment variable RUNTIME_GITHUB_TOKEN"
    assert found.tried == ("environment variable RUNTIME_GITHUB_TOKEN",)
    assert redactor.text(OTHER) == REDACTED


def test_environment_variable_needs_no_keyring_at_all(tmp_path: Path) -> None:
    engine, _ = make_engine(tmp_path, BrokenKeyring(), RUNTIME_GITHUB_TOKEN=OTHER)
    found = engine.lookup("github", DEFAULT_HOST)
    assert found.credential is not None
    assert found.problem is None
    assert engine.require("github", DEFAULT_HOST).value == OTHER


def test_empty_environment_variable_falls_through_to_keyring(tmp_path: Path) -> None:
    engine, _ = make_engine(tmp_path, MemoryKeyring(store={}), RUNTIME_GITHUB_TOKEN="")
    engine.store("github", GHE, TOKEN)
    found = engine.lookup("github", GHE)
    assert found.credential is not None
    assert found.credential.source == "keyring"


def test_raising_backend_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    secret_detail = "dbus said: secret-detail-that-must-not-leak"
    engine, _ = make_engine(tmp_path, BrokenKeyring(RuntimeError(secret_detail)))
    found = engine.lookup("github", GHE)
    assert found.credential is None
    assert found.problem == "the keyring failed (RuntimeError)"
    assert found.tried[-1] == f"keyring ({keyring_service(GHE)})"
    with pytest.raises(MissingCredential) as info:
        engine.require("github", GHE)
    failure = info.value
    assert failure.exit_code == ExitCode.MISSING_CREDENTIAL == 4
    assert "the keyring failed (RuntimeError)" in failure.message
    assert secret_detail not in failure.message
    assert failure.hint is not None
    assert "RUNTIME_GITHUB_TOKEN" in failure.hint
    assert f"runtime auth login github --host {GHE}" in failure.hint
    assert "no usable keyring" in failure.hint


def test_injected_fail_keyring_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    engine, _ = make_engine(tmp_path, fail.Keyring())
    found = engine.lookup("github", DEFAULT_HOST)
    assert found.credential is None
    assert found.problem is not None
    assert "keyring" in found.problem


def test_detected_fail_keyring_says_no_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What keyring picks on a headless server: its ``fail.Keyring``."""
    monkeypatch.setattr(keyring.core, "_keyring_backend", fail.Keyring())
    engine, _ = make_engine(tmp_path)
    found = engine.lookup("github", DEFAULT_HOST)
    assert found.credential is None
    assert found.problem is not None
    assert found.problem.startswith("no keyring backend is available on this machine")
    with pytest.raises(KeyringUnavailable):
        engine.store("github", DEFAULT_HOST, TOKEN)
    with pytest.raises(KeyringUnavailable):
        engine.delete("github", DEFAULT_HOST)
    with pytest.raises(MissingCredential) as info:
        engine.require("github", DEFAULT_HOST)
    assert "no keyring backend is available" in info.value.message
    assert info.value.hint is not None
    assert "export RUNTIME_GITHUB_TOKEN=<token>" in info.value.hint
    assert "`runtime auth login github`" in info.value.hint


def test_unloadable_keyring_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyring.core, "_keyring_backend", None)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "no_such_module_for_runtime_tests.Keyring")
    engine, _ = make_engine(tmp_path)
    found = engine.lookup("github", GHE)
    assert found.credential is None
    assert found.problem == "the keyring could not be loaded (ModuleNotFoundError)"


def test_require_names_login_command_and_variable(tmp_path: Path) -> None:
    engine, _ = make_engine(tmp_path, MemoryKeyring(store={}))
    with pytest.raises(MissingCredential) as info:
        engine.require("github", DEFAULT_HOST)
    failure = info.value
    assert failure.exit_code == 4
    assert failure.message == (
        "no github credential for github.com: looked in environment variable "
        "RUNTIME_GITHUB_TOKEN, keyring (runtime:github:github.com)"
    )
    assert failure.hint is not None
    assert "`runtime auth login github`" in failure.hint  # github.com: no --host
    assert "export RUNTIME_GITHUB_TOKEN=<token>" in failure.hint

    with pytest.raises(MissingCredential) as other:
        engine.require("github", GHE)
    assert other.value.hint is not None
    assert f"`runtime auth login github --host {GHE}`" in other.value.hint


def test_unknown_credential_name(tmp_path: Path) -> None:
    engine, _ = make_engine(tmp_path, MemoryKeyring(store={}))
    found = engine.lookup("gitlab", DEFAULT_HOST)
    assert found.credential is None
    assert found.problem == "unknown credential 'gitlab'"


# ------------------------------------------------------------------ a real Secret Service


@pytest.fixture
def secret_service(tmp_path: Path) -> Iterator[SecretSession]:
    """A private session bus with an unlocked gnome-keyring login collection."""
    with secret_session(tmp_path / "keyring") as session:
        yield session


@pytest.fixture
def rest_double() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN, tls=False) as gh:
        yield gh


def no_token(result: Result, *tokens: str) -> None:
    for token in tokens or (TOKEN,):
        assert token not in result.stdout, result.stdout
        assert token not in result.stderr, result.stderr


def files_containing(root: Path, needle: str) -> list[Path]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            hits.append(path)
    return hits


@pytest.mark.integration
def test_login_status_step_logout_through_gnome_keyring(
    cli_proc: Callable[..., Result],
    secret_service: SecretSession,
    rest_double: GitHubDouble,
    home: Path,
) -> None:
    gh = rest_double
    host = gh.host
    service = keyring_service(host)
    env = {**secret_service.env(), "GITHUB_API_URL": gh.api_url}

    login = cli_proc("auth", "login", "github", "--host", host, extra_env=env, input=TOKEN)
    assert login.code == 0, login.stdout + login.stderr
    assert f"logged in to {host} as octocat; the token is in the keyring" in login.stdout
    no_token(login)
    # the token really is in gnome-keyring, under the documented service and user
    stored = secret_service.items(service)
    assert [(attrs.get("username"), secret) for attrs, secret in stored] == [("token", TOKEN)]
    # ... and nowhere in Runtime Home
    assert files_containing(home, TOKEN) == []

    status = cli_proc("auth", "status", "github", "--host", host, extra_env=env)
    assert status.code == 0, status.stdout + status.stderr
    assert status.stdout.splitlines() == [f"{host}: keyring"]
    no_token(status)

    status_json = cli_proc("-o", "json", "auth", "status", "github", "--host", host, extra_env=env)
    assert status_json.code == 0, status_json.stderr
    (row,) = status_json.json()["hosts"]
    assert row["source"] == "keyring"
    assert row["problem"] is None
    no_token(status_json)

    live = cli_proc("auth", "status", "github", "--host", host, "--live", extra_env=env)
    assert live.code == 0, live.stdout + live.stderr
    assert "logged in as octocat" in live.stdout
    no_token(live)

    gh.reset_counters()
    step = cli_proc("github", "user", "get", extra_env=env)
    assert step.code == 0, step.stdout + step.stderr
    assert "login: octocat" in step.stdout
    no_token(step)
    user_requests = [r for r in gh.requests if r.path == "/user"]
    assert user_requests, gh.requests
    assert all(r.headers.get("authorization", "").endswith(TOKEN) for r in user_requests)

    logout = cli_proc("auth", "logout", "github", "--host", host, extra_env=env)
    assert logout.code == 0, logout.stdout + logout.stderr
    assert logout.stdout.strip() == f"removed the {host} token from the keyring"
    assert secret_service.items(service) == []

    after = cli_proc("github", "user", "get", extra_env=env)
    assert after.code == 4, after.stdout + after.stderr
    combined = after.stdout + after.stderr
    assert f"runtime auth login github --host {host}" in combined
    assert "RUNTIME_GITHUB_TOKEN" in combined

    again = cli_proc("auth", "logout", "github", "--host", host, extra_env=env)
    assert again.code == 0, again.stdout + again.stderr
    assert again.stdout.strip() == f"no {host} token was in the keyring"
    assert files_containing(home, TOKEN) == []


@pytest.mark.integration
def test_bad_token_is_not_stored_in_gnome_keyring(
    cli_proc: Callable[..., Result],
    secret_service: SecretSession,
    rest_double: GitHubDouble,
) -> None:
    host = rest_double.host
    env = {**secret_service.env(), "GITHUB_API_URL": rest_double.api_url}
    bad = "rt-wrong-token-0a1b2c3d4e"
    login = cli_proc("auth", "login", "github", "--host", host, extra_env=env, input=bad)
    assert login.code == 4, login.stdout + login.stderr
    assert f"the token was not accepted by {host}" in login.stderr
    no_token(login, bad, TOKEN)
    assert secret_service.items(keyring_service(host)) == []


@pytest.mark.integration
def test_secret_service_without_a_collection_is_a_clear_problem(
    cli_proc: Callable[..., Result], tmp_path: Path, rest_double: GitHubDouble
) -> None:
    """gnome-keyring unlocked with an *empty* password creates no login collection.

    Anything that needs the default collection then makes the daemon ask
    gcr-prompter, which has no display and is dismissed: keyring raises
    InitError. runtime must say so, not crash: status notes it, login and
    steps exit 4, logout exits 2, each naming the keyring's failure.
    """
    proc, state, runtime_dir = start_secret_session(tmp_path / "keyring", "")
    daemon_pid: int | None = None
    try:
        address = wait_for_bus(proc, state, "gnome-keyring (empty password)")
        daemon_pid = _secret_service_pid(address)
        env = {
            "DBUS_SESSION_BUS_ADDRESS": address,
            "PYTHON_KEYRING_BACKEND": SECRET_SERVICE,
            "GITHUB_API_URL": rest_double.api_url,
        }
        host = rest_double.host
        status = cli_proc("auth", "status", "github", "--host", host, extra_env=env)
        assert status.code == 0, status.stdout + status.stderr
        assert status.stdout.splitlines() == [
            f"{host}: no credential",
            "  note: the keyring failed (InitError); use RUNTIME_GITHUB_TOKEN instead",
        ]

        login = cli_proc("auth", "login", "github", "--host", host, extra_env=env, input=TOKEN)
        assert login.code == 4, login.stdout + login.stderr
        assert "error: the keyring refused the token (InitError)" in login.stderr
        assert "export RUNTIME_GITHUB_TOKEN=<token> instead" in login.stderr
        no_token(login)

        step = cli_proc("github", "user", "get", extra_env=env)
        assert step.code == 4, step.stdout + step.stderr
        assert "the keyring failed (InitError)" in step.stderr
        assert "export RUNTIME_GITHUB_TOKEN=<token> (no usable keyring here)" in step.stderr

        logout = cli_proc("auth", "logout", "github", "--host", host, extra_env=env)
        assert logout.code == 2, logout.stdout + logout.stderr  # not 70, an internal error
        assert "cannot reach the keyring: the keyring failed (InitError)" in logout.stderr
    finally:
        stop_secret_session(proc, daemon_pid, runtime_dir)
