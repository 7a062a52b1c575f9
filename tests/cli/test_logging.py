"""The diagnostic event stream (--log-level, --log-format, RUNTIME_LOG_*), through the real CLI.

Events go to stderr only; stdout is the same with and without them; every event is
redacted before it is rendered; with logging off structlog is never imported.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, Result, capability, write
from tests.github_double import GitHubDouble

STATIONS = ["load", "validate", "resolve", "policy", "preflight", "execute", "record"]
NOTES = (
    "capability",
    "execute",
    str(EXAMPLES / "notes-roundtrip.md"),
    "--input",
    "folder=notes",
    "--input",
    "note=hello",
)


PROGRESS = re.compile(r"^(\[\d+/\d+\] |ok: )")  # the run's own lines on stderr
EVENT = re.compile(r"^(\{|\d{4}-\d\d-\d\dT)")  # a JSON or a console event


def events(stderr: str) -> list[dict[str, Any]]:
    """Every stderr line as a JSON event, besides the run's progress lines (any other
    line fails the test)."""
    return [
        json.loads(line)
        for line in stderr.splitlines()
        if line.strip() and not PROGRESS.match(line)
    ]


def no_events(stderr: str) -> bool:
    """stderr holds no diagnostic event (the progress lines are there as always)."""
    return not any(EVENT.match(line) for line in stderr.splitlines())


def events_in(stderr: str) -> list[dict[str, Any]]:
    """The JSON events on stderr, without the CLI's own error lines after them."""
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def named(found: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in found if e["event"] == name]


def _steady(value: Any) -> Any:
    """A JSON document without what differs from run to run (ids, times)."""
    if isinstance(value, dict):
        return {
            k: _steady(v)
            for k, v in value.items()
            if k not in ("run_id", "duration_ms", "started", "finished")
        }
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


# -- on: JSON and console, stdout unchanged --------------------------------------------------


def fresh(work: Path, name: str) -> Path:
    """A working folder of its own: the notes example writes under it."""
    path = work / name
    path.mkdir()
    return path


def test_json_events_on_stderr_and_stdout_unchanged(
    cli_proc: Callable[..., Result], work: Path
) -> None:
    plain = cli_proc("--output", "json", *NOTES, cwd=fresh(work, "a"))
    logged = cli_proc(
        "--log-level",
        "debug",
        "--log-format",
        "json",
        "--output",
        "json",
        *NOTES,
        cwd=fresh(work, "b"),
    )
    assert plain.code == logged.code == 0, logged.stderr
    assert no_events(plain.stderr)
    assert _steady(json.loads(logged.stdout)) == _steady(json.loads(plain.stdout))
    found = events(logged.stderr)
    for event in found:
        assert list(event)[:4] == ["timestamp", "level", "event", "logger"], event
    entered = named(found, "station.entered")
    assert [e["station"] for e in entered] == STATIONS
    assert all(e["capability"].endswith("notes-roundtrip.md") for e in entered)
    resolved = next(e for e in named(found, "station.finished") if e["station"] == "resolve")
    assert resolved["steps"] == 4
    started, finished = named(found, "step.started"), named(found, "step.finished")
    assert [e["step"] for e in started] == [1, 2, 3, 4]
    assert [(e["step"], e["status"], e["level"]) for e in finished] == [
        (i, "ok", "info") for i in (1, 2, 3, 4)
    ]
    assert all(isinstance(e["duration_ms"], float) for e in finished)
    assert finished[0]["target"] == "files mkdir"


def test_text_output_is_the_same_with_logging(cli_proc: Callable[..., Result], work: Path) -> None:
    def labels(text: str) -> list[str]:  # each step's progress label
        return [line.split(" ...")[0] for line in text.splitlines() if " ..." in line]

    plain = cli_proc(*NOTES, cwd=fresh(work, "a"))
    logged = cli_proc("--log-level", "debug", *NOTES, cwd=fresh(work, "b"))
    assert plain.code == logged.code == 0
    assert logged.stdout == plain.stdout
    assert no_events(plain.stderr) and "station.entered" in logged.stderr
    # progress shares stderr with the events: whole lines, never an event inside one
    assert labels(logged.stderr) == labels(plain.stderr) != []
    for line in logged.stderr.splitlines():
        assert EVENT.match(line) or PROGRESS.match(line), line


def test_console_format(cli_proc: Callable[..., Result]) -> None:
    result = cli_proc("--log-level", "info", "--log-format", "console", *NOTES)
    assert result.code == 0
    lines = result.stderr.splitlines()
    assert lines and not any(line.startswith("{") for line in lines)
    finished = [line for line in lines if "step.finished" in line]
    assert len(finished) == 4
    assert "[info" in finished[0] and "status=ok" in finished[0] and "step=1" in finished[0]
    # info: no debug events
    assert "station.entered" not in result.stderr


def test_environment_variables_and_the_option_wins(cli_proc: Callable[..., Result]) -> None:
    env = {"RUNTIME_LOG_LEVEL": "INFO", "RUNTIME_LOG_FORMAT": "json"}
    result = cli_proc(*NOTES, extra_env=env)
    assert result.code == 0
    found = events(result.stderr)
    assert {e["event"] for e in found} == {"step.started", "step.finished"}
    assert no_events(cli_proc("--log-level", "off", *NOTES, extra_env=env).stderr)
    console = cli_proc("--log-format", "console", *NOTES, extra_env=env)
    assert "step.finished" in console.stderr and not console.stderr.startswith("{")
    # an empty variable is unset
    assert no_events(cli_proc(*NOTES, extra_env={"RUNTIME_LOG_LEVEL": ""}).stderr)


def test_a_failed_step_and_a_refusal_are_warnings(
    cli_proc: Callable[..., Result], work: Path
) -> None:
    write(
        work / "cap.md",
        capability('version: v1\nworkflow:\n  - binary: "false"\n    args: []\n'),
    )
    result = cli_proc(
        "--log-level", "warning", "--log-format", "json", "capability", "execute", "cap.md"
    )
    assert result.code == 1
    found = events_in(result.stderr)
    [failed] = named(found, "step.finished")
    assert failed["level"] == "warning" and failed["status"] == "failed" and failed["error"]

    write(
        work / "rm.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n    args: [mkdir, d]\n"
            "  - provider: files\n    args: [delete, d]\n"
        ),
    )
    result = cli_proc(
        "--log-level", "warning", "--log-format", "json", "capability", "execute", "rm.md"
    )
    assert result.code == 3, result.stderr
    found = events_in(result.stderr)
    [refused] = named(found, "step.refused")
    assert refused["step"] == 2 and refused["rule"] and refused["target"] == "files delete"
    [failed] = named(found, "station.failed")
    assert failed["station"] == "policy" and failed["exit_code"] == 3


# -- invalid values ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "shown"),
    [
        (("--log-level", "loud"), {}, "--log-level 'loud'"),
        (("--log-format", "xml"), {}, "--log-format 'xml'"),
        ((), {"RUNTIME_LOG_LEVEL": "verbose"}, "RUNTIME_LOG_LEVEL='verbose'"),
        ((), {"RUNTIME_LOG_FORMAT": "yaml"}, "RUNTIME_LOG_FORMAT='yaml'"),
    ],
)
def test_an_invalid_value_is_a_usage_error(
    cli_proc: Callable[..., Result], args: tuple[str, ...], env: dict[str, str], shown: str
) -> None:
    result = cli_proc(*args, "policy", "show", extra_env=env)
    assert result.code == 2
    assert shown in result.stderr
    choices = "console, json" if "FORMAT" in shown.upper() else "off, error, warning, info, debug"
    assert choices in result.stderr
    assert result.stdout == ""
    as_json = cli_proc("--output", "json", *args, "policy", "show", extra_env=env)
    assert as_json.code == 2
    assert shown in json.loads(as_json.stdout)["error"]["message"]


# -- redaction --------------------------------------------------------------------------------

REGISTERED = "rt-registered-token-" + "4" * 12  # not token-shaped: only registration redacts it
TOKEN_SHAPED = "ghp_" + "A1b2C3d4" * 5
PASSWORD = "hunter2pass"


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_secrets_in_events_are_redacted(cli_proc: Callable[..., Result], fmt: str) -> None:
    # the run is refused with a message quoting the variable: the station.failed event's
    # message holds the registered token, a ghp_ token and a URL's password
    value = f"https://alice:{PASSWORD}@example.com/{REGISTERED}/{TOKEN_SHAPED}"
    env = {"RUNTIME_GITHUB_TOKEN": REGISTERED, "RUNTIME_GITHUB_TIMEOUT": value}
    args = ("--log-level", "debug", "--log-format", fmt, "github", "repo", "view", "acme/app")
    result = cli_proc(*args, extra_env=env)
    assert result.code == 2
    [failed] = [line for line in result.stderr.splitlines() if "station.failed" in line]
    assert "RUNTIME_GITHUB_TIMEOUT=" in failed
    assert "https://[REDACTED]@example.com/[REDACTED]/[REDACTED]" in failed
    for secret in (REGISTERED, TOKEN_SHAPED, PASSWORD):
        assert secret not in result.stderr + result.stdout


def test_secret_inputs_in_events_are_redacted(cli_proc: Callable[..., Result], work: Path) -> None:
    # a secret-named input is registered; a refusal quoting it (a path that does not exist)
    # is the station.failed event's message
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  api_token:\n    required: true\n  note:\n    required: true\n"
            'workflow:\n  - provider: files\n    args: [read, "x-${api_token}-${note}"]\n'
        ),
    )
    result = cli_proc(
        "--log-level",
        "warning",
        "--log-format",
        "json",
        "capability",
        "execute",
        "cap.md",
        "--input",
        f"api_token={REGISTERED}",
        "--input",
        f"note={TOKEN_SHAPED}",
    )
    assert result.code == 5
    [failed] = named(events_in(result.stderr), "station.failed")
    assert failed["station"] == "preflight" and "x-[REDACTED]-[REDACTED]" in failed["message"]
    logged = "".join(line for line in result.stderr.splitlines() if line.startswith("{"))
    assert REGISTERED not in logged and TOKEN_SHAPED not in logged


# -- off ------------------------------------------------------------------------------------

PROBE = """
import json, sys
from runtime.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout.write("\\n" + json.dumps(sorted(sys.modules)))
"""


def modules(cwd: Path, env: dict[str, str], *args: str) -> tuple[list[str], str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=cwd, env=env
    )
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.parametrize("level", [None, "off"])
def test_off_imports_no_structlog_and_adds_nothing(
    work: Path, env: dict[str, str], level: str | None
) -> None:
    extra = {} if level is None else {"RUNTIME_LOG_LEVEL": level}
    loaded, stderr = modules(work, {**env, **extra}, *NOTES)
    assert "runtime.execute.engine" in loaded  # it did run
    assert not [m for m in loaded if m == "structlog" or m.startswith("structlog.")]
    assert no_events(stderr)
    on, _ = modules(work, env, "--log-level", "debug", *NOTES)
    assert "structlog" in on


# -- the GitHub client ------------------------------------------------------------------------

GH_TOKEN = "rt-logging-token-" + "7" * 20  # not token-shaped: only registration redacts it


@pytest.fixture
def double() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=GH_TOKEN) as gh:
        gh.add_org("acme")
        gh.add_repo("acme", "app")
        yield gh


def test_github_requests_and_retries(cli_proc: Callable[..., Result], double: GitHubDouble) -> None:
    double.inject(r"^/repos/acme/app$", status=502, count=1)
    result = cli_proc(
        "--log-level",
        "debug",
        "--log-format",
        "json",
        "github",
        "repo",
        "view",
        "acme/app",
        extra_env=double.runtime_env(),
    )
    assert result.code == 0, result.stderr
    found = events(result.stderr)
    requests = named(found, "http.request")
    assert [(e["method"], e["route"], e["status"], e["attempt"]) for e in requests] == [
        ("GET", "/repos/acme/app", 502, 1),
        ("GET", "/repos/acme/app", 200, 2),
    ]
    assert all(e["logger"] == "providers.github" for e in requests)
    [retry] = named(found, "http.retry")
    assert retry["status"] == 502 and retry["attempt"] == 1 and retry["wait_s"] == 0.5
    assert GH_TOKEN not in result.stderr
