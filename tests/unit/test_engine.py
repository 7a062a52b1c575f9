"""The engine: steps run in order, each announced and recorded, the first failure stops.

``execute_plan`` is driven directly on plans of a small fake provider (registered
in a Registry built here), with a recording reporter and a real audit log in a
temporary folder. What is checked is what a user and the audit log see: the
steps that ran, each step's status, the run's status and exit code, and the
records.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runtime.document.grammar import check_capability
from runtime.document.loader import parse_document
from runtime.errors import Terminated, UsageError
from runtime.execute.audit import AuditError, AuditLog, read_records
from runtime.execute.engine import RunResult, StepResult, execute_plan
from runtime.execute.services import RunServices
from runtime.home.registry import Registry
from runtime.plan.build import PlannedStep, build_plan
from runtime.plan.gate import decide
from runtime.plan.policy_file import load_policy
from runtime.plan.workspace import Workspace
from runtime.provider import (
    BoundCall,
    MissingCapability,
    MissingCredential,
    Operation,
    PolicyRefusal,
    Positional,
    ProviderBase,
    StepEnvironment,
    StepError,
    StepOutcome,
)
from runtime.redact import Redactor

RUN_ID = "20240101T000000Z-0000test"
TIMEOUT = 42.0


def _raise(exc: BaseException) -> Callable[[], StepOutcome]:
    def go() -> StepOutcome:
        raise exc

    return go


# What a step of the fake provider does, by the first part of its WHAT ("fail:2" fails)
BEHAVIOURS: dict[str, Callable[[], StepOutcome]] = {
    "ok": lambda: StepOutcome(ok=True, output="done", data={"done": True}),
    "fail": lambda: StepOutcome(ok=False, error="it did not work", hint="try again", exit_code=3),
    "step-error": _raise(
        StepError("the server broke", hint="retry later", program_exit_code=7, http_status=502)
    ),
    "refuse": _raise(PolicyRefusal("the host is not allowed", hint="ask for it")),
    "no-credential": _raise(MissingCredential("no token for fake.invalid", hint="log in")),
    "no-capability": _raise(MissingCapability("no network here", hint="declare it")),
    "invalid": _raise(UsageError("an invalid setting", hint="fix the setting")),
    "bug": _raise(ValueError("internal-detail-4f1c")),
    "hup": _raise(Terminated(signal.SIGHUP)),
    "term": _raise(Terminated()),
    "ctrl-c": _raise(KeyboardInterrupt()),
}


class FakeProvider(ProviderBase):
    name = "fake"
    summary = "Does what its argument says (a test provider)"
    operations = (
        Operation(
            words=("do",),
            summary="do WHAT",
            transport="local",
            effect="read",
            positionals=(Positional("WHAT"),),
        ),
    )

    def __init__(self, audit_path: Path) -> None:
        self.audit_path = audit_path
        self.calls: list[str] = []
        # the nth call (the nth step run) -> the last audit record as it ran
        self.last_record: dict[int, dict[str, Any]] = {}
        self.environments: list[StepEnvironment] = []

    def execute(self, operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
        what = call.positionals["WHAT"]
        self.calls.append(what)
        self.environments.append(env)
        self.last_record[len(self.calls)] = list(read_records(self.audit_path))[-1]
        env.on_output("stdout", f"running {what}")
        return BEHAVIOURS[what.partition(":")[0]]()


class Recorder:
    """A reporter that remembers what it was told, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def run_started(self, warnings: list[Any]) -> None:
        self.events.append(("run",))

    def step_started(self, planned: PlannedStep, total: int) -> None:
        self.events.append(("started", planned.index, total))

    def step_output(self, planned: PlannedStep, stream: str, text: str) -> None:
        self.events.append(("output", planned.index, stream, text))

    def step_finished(self, result: StepResult, total: int) -> None:
        self.events.append(("finished", result.planned.index, result.status))


class Engine:
    """A workspace with the fake provider, and a way to run a workflow of its steps."""

    def __init__(self, tmp_path: Path, environ: dict[str, str] | None = None) -> None:
        self.audit_path = tmp_path / "audit" / "audit.jsonl"
        self.provider = FakeProvider(self.audit_path)
        registry = Registry()
        registry.providers["fake"] = self.provider
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        self.ws = Workspace(
            {
                "PATH": "/usr/bin:/bin",
                "HOME": str(tmp_path),
                "RUNTIME_HOME": str(tmp_path / "home"),
                **(environ or {}),
            },
            work,
        )
        self.ws.__dict__["registry"] = registry
        self.ws.__dict__["policy"] = load_policy(None)
        self.redactor = Redactor()
        self.reporter = Recorder()

    def run(self, *whats: str, audit: AuditLog | None = None) -> RunResult:
        steps = "".join(f"  - provider: fake\n    args: [do, '{w}']\n" for w in whats)
        text = f"# Test\n\n```runtime\nversion: v1\nworkflow:\n{steps}```\n"
        cap, problems = check_capability(parse_document(text.encode(), "cap.md"))
        assert problems == []
        services = RunServices(self.ws, self.redactor)
        plan = build_plan(cap, {}, self.ws, services)
        decide(plan, self.ws, services)
        assert all(s.decision.allowed for s in plan.steps)
        log = audit if audit is not None else AuditLog(self.audit_path, self.redactor)
        try:
            return execute_plan(
                plan, self.ws, services, self.redactor, log, self.reporter, RUN_ID, TIMEOUT
            )
        finally:
            log.close()
            services.close()

    def records(self) -> list[dict[str, Any]]:
        return list(read_records(self.audit_path))

    def trail(self) -> list[tuple[str, Any]]:
        """(event, step) of every record; run.end's step is its status."""
        return [
            (r["event"], r.get("step", r.get("status")))
            for r in self.records()
            if r["event"] in ("step.start", "step", "run.end")
        ]

    def run_end(self) -> dict[str, Any]:
        [end] = [r for r in self.records() if r["event"] == "run.end"]
        return end


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return Engine(tmp_path)


def statuses(run: RunResult) -> list[str]:
    return [r.status for r in run.results]


# -- steps run in order ------------------------------------------------------------------------


def test_steps_run_in_order_each_announced_then_recorded(engine: Engine) -> None:
    run = engine.run("ok:1", "ok:2", "ok:3")
    assert engine.provider.calls == ["ok:1", "ok:2", "ok:3"]
    assert (run.status, run.exit_code, run.run_id) == ("ok", 0, RUN_ID)
    assert statuses(run) == ["ok", "ok", "ok"]
    assert run.failed_step is None
    assert [r.outcome.data for r in run.results if r.outcome] == [{"done": True}] * 3
    assert engine.trail() == [
        ("step.start", 1),
        ("step", 1),
        ("step.start", 2),
        ("step", 2),
        ("step.start", 3),
        ("step", 3),
        ("run.end", "ok"),
    ]
    assert engine.reporter.events == [
        ("started", 1, 3),
        ("output", 1, "stdout", "running ok:1"),
        ("finished", 1, "ok"),
        ("started", 2, 3),
        ("output", 2, "stdout", "running ok:2"),
        ("finished", 2, "ok"),
        ("started", 3, 3),
        ("output", 3, "stdout", "running ok:3"),
        ("finished", 3, "ok"),
    ]


def test_each_step_is_announced_in_the_audit_log_before_it_runs(engine: Engine) -> None:
    engine.run("ok:1", "ok:2")
    for index in (1, 2):
        seen = engine.provider.last_record[index]
        assert (seen["event"], seen["step"], seen["run_id"]) == ("step.start", index, RUN_ID)
        assert seen["target"] == "fake do"


def test_a_steps_record_says_what_ran_and_how_it_ended(engine: Engine) -> None:
    engine.run("ok:1")
    [record] = [r for r in engine.records() if r["event"] == "step"]
    assert record["run_id"] == RUN_ID
    assert record["capability"] == "cap.md"
    assert len(record["sha256"]) == 64
    assert (record["step"], record["target"], record["provider"], record["operation"]) == (
        1,
        "fake do",
        "fake",
        "do",
    )
    assert record["args"] == ["do", "ok:1"]
    assert record["status"] == "ok"
    assert record["decision"]["allowed"] is True
    end = engine.run_end()
    assert (end["status"], end["exit_code"], end["steps"], end["ok"]) == ("ok", 0, 1, 1)


def test_each_step_gets_the_runs_time_limit(engine: Engine) -> None:
    engine.run("ok:1", "ok:2")
    assert [e.timeout for e in engine.provider.environments] == [TIMEOUT, TIMEOUT]


# -- the first failure stops the run -----------------------------------------------------------


def test_the_first_failure_stops_the_run_and_later_steps_are_not_run(engine: Engine) -> None:
    run = engine.run("ok:1", "fail:2", "ok:3", "ok:4")
    assert engine.provider.calls == ["ok:1", "fail:2"]
    assert statuses(run) == ["ok", "failed", "not-run", "not-run"]
    assert (run.status, run.exit_code) == ("failed", 1)
    failed = run.failed_step
    assert failed is not None and failed.planned.index == 2
    assert (failed.error, failed.hint) == ("it did not work", "try again")
    assert failed.outcome is not None and failed.outcome.exit_code == 3
    # steps never started are neither announced nor recorded
    assert engine.trail() == [
        ("step.start", 1),
        ("step", 1),
        ("step.start", 2),
        ("step", 2),
        ("run.end", "failed"),
    ]
    end = engine.run_end()
    assert (end["exit_code"], end["steps"], end["ok"]) == (1, 4, 1)
    assert ("started", 3, 4) not in engine.reporter.events


@pytest.mark.parametrize(
    ("what", "status", "exit_code", "error", "hint"),
    [
        ("fail", "failed", 1, "it did not work", "try again"),
        ("step-error", "failed", 1, "the server broke", "retry later"),
        ("refuse", "refused", 3, "the host is not allowed", "ask for it"),
        ("no-credential", "missing-credential", 4, "no token for fake.invalid", "log in"),
        ("no-capability", "missing-capability", 5, "no network here", "declare it"),
        ("invalid", "failed", 1, "an invalid setting", "fix the setting"),
    ],
)
def test_how_a_step_ends_gives_its_status_and_the_runs_exit_code(
    engine: Engine, what: str, status: str, exit_code: int, error: str, hint: str
) -> None:
    run = engine.run("ok:1", what, "ok:3")
    assert statuses(run) == ["ok", status, "not-run"]
    assert (run.status, run.exit_code) == (status, exit_code)
    result = run.results[1]
    assert (result.error, result.hint) == (error, hint)
    [record] = [r for r in engine.records() if r["event"] == "step" and r["step"] == 2]
    assert (record["status"], record["error"]) == (status, error)
    end = engine.run_end()
    assert (end["status"], end["exit_code"], end["ok"]) == (status, exit_code, 1)
    assert engine.provider.calls == ["ok:1", what]


def test_a_step_error_keeps_the_programs_exit_code_and_http_status(engine: Engine) -> None:
    run = engine.run("step-error")
    outcome = run.results[0].outcome
    assert outcome is not None and not outcome.ok
    assert (outcome.exit_code, outcome.http_status) == (7, 502)
    [record] = [r for r in engine.records() if r["event"] == "step"]
    assert (record["exit_code"], record["http_status"]) == (7, 502)


def test_a_bug_in_a_provider_fails_the_step_without_a_traceback(
    engine: Engine, capfd: pytest.CaptureFixture[str]
) -> None:
    run = engine.run("bug", "ok:2")
    assert statuses(run) == ["failed", "not-run"]
    assert (run.status, run.exit_code) == ("failed", 1)
    result = run.results[0]
    assert result.error == "internal error in fake do: ValueError"
    assert result.hint is not None and "RUNTIME_DEBUG=1" in result.hint
    assert "this is a bug" in result.hint
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out
    # what the exception said stays out of the result and the audit log
    assert "internal-detail-4f1c" not in engine.audit_path.read_text()
    assert "internal-detail-4f1c" not in (result.error or "")


def test_runtime_debug_shows_where_a_bug_happened(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    engine = Engine(tmp_path, {"RUNTIME_DEBUG": "1"})
    run = engine.run("bug")
    assert run.exit_code == 1
    err = capfd.readouterr().err
    assert "Traceback" in err and "ValueError" in err


# -- signals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("what", "status", "exit_code", "cause"),
    [
        ("hup", "terminated", 128 + signal.SIGHUP, "terminated by SIGHUP"),
        ("term", "terminated", 128 + signal.SIGTERM, "terminated by SIGTERM"),
        ("ctrl-c", "interrupted", 130, "interrupted by SIGINT"),
    ],
)
def test_a_signal_inside_a_step_is_recorded_and_ends_the_run(
    engine: Engine, what: str, status: str, exit_code: int, cause: str
) -> None:
    run = engine.run("ok:1", what, "ok:3")
    assert engine.provider.calls == ["ok:1", what]
    assert statuses(run) == ["ok", status, "not-run"]
    assert (run.status, run.exit_code) == (status, exit_code)
    assert (run.results[1].error or "").startswith(cause)
    assert engine.trail() == [
        ("step.start", 1),
        ("step", 1),
        ("step.start", 2),
        ("step", 2),
        ("run.end", status),
    ]
    [record] = [r for r in engine.records() if r["event"] == "step" and r["step"] == 2]
    assert record["status"] == status
    assert engine.run_end()["exit_code"] == exit_code


class Interrupting(Recorder):
    """A reporter during which a signal arrives: ``at`` is (method, step index)."""

    def __init__(self, at: tuple[str, int], exc: BaseException) -> None:
        super().__init__()
        self.at = at
        self.exc = exc

    def step_started(self, planned: PlannedStep, total: int) -> None:
        super().step_started(planned, total)
        if self.at == ("started", planned.index):
            raise self.exc

    def step_finished(self, result: StepResult, total: int) -> None:
        super().step_finished(result, total)
        if self.at == ("finished", result.planned.index):
            raise self.exc


def test_a_signal_after_a_step_was_announced_records_it_as_interrupted(engine: Engine) -> None:
    engine.reporter = Interrupting(("started", 2), KeyboardInterrupt())
    run = engine.run("ok:1", "ok:2", "ok:3")
    assert engine.provider.calls == ["ok:1"]  # step 2 was announced, never started
    assert statuses(run) == ["ok", "interrupted", "not-run"]
    assert (run.status, run.exit_code) == ("interrupted", 130)
    assert engine.trail() == [
        ("step.start", 1),
        ("step", 1),
        ("step.start", 2),
        ("step", 2),
        ("run.end", "interrupted"),
    ]


def test_a_signal_between_steps_keeps_the_finished_steps_record(engine: Engine) -> None:
    engine.reporter = Interrupting(("finished", 1), Terminated(signal.SIGTERM))
    run = engine.run("ok:1", "ok:2")
    assert engine.provider.calls == ["ok:1"]
    assert statuses(run) == ["ok", "not-run"]
    assert (run.status, run.exit_code) == ("terminated", 143)
    assert engine.trail() == [("step.start", 1), ("step", 1), ("run.end", "terminated")]
    end = engine.run_end()
    assert (end["exit_code"], end["ok"]) == (143, 1)


# -- the audit log -----------------------------------------------------------------------------


class FailingAudit(AuditLog):
    """An audit log whose record of ``event`` for ``step`` cannot be written."""

    def __init__(self, path: Path, redactor: Redactor, event: str, step: int) -> None:
        super().__init__(path, redactor)
        self.failing = (event, step)

    def record(self, event: str, **fields: Any) -> None:
        if (event, fields.get("step")) == self.failing:
            raise AuditError(f"cannot write to the audit log {self.path}: No space left on device")
        super().record(event, **fields)


def test_a_step_whose_announcement_cannot_be_written_does_not_run(engine: Engine) -> None:
    audit = FailingAudit(engine.audit_path, engine.redactor, "step.start", 2)
    run = engine.run("ok:1", "ok:2", "ok:3", audit=audit)
    assert engine.provider.calls == ["ok:1"]
    assert statuses(run) == ["ok", "failed", "not-run"]
    assert (run.status, run.exit_code) == ("failed", 1)
    result = run.results[1]
    assert result.error is not None and result.error.endswith("; the step did not run")
    assert "No space left on device" in result.error
    assert result.hint == "make the audit log writable (Runtime Home's audit/ folder)"
    assert ("started", 2, 3) not in engine.reporter.events
    assert ("finished", 2, "failed") in engine.reporter.events
    assert engine.trail() == [("step.start", 1), ("step", 1), ("run.end", "failed")]


def test_no_step_runs_when_the_audit_log_cannot_be_written_at_all(engine: Engine) -> None:
    audit = AuditLog(engine.audit_path, engine.redactor)
    # the log is replaced by something no record can be written to (not even after
    # reopening it, as a writer does when another process has rotated the log)
    engine.audit_path.unlink()
    engine.audit_path.mkdir()
    run = engine.run("ok:1", "ok:2", audit=audit)
    assert engine.provider.calls == []
    assert statuses(run) == ["failed", "not-run"]
    assert run.exit_code == 1
    assert "Is a directory" in (run.results[0].error or "")


def test_a_step_whose_record_cannot_be_written_fails_and_stops_the_run(engine: Engine) -> None:
    audit = FailingAudit(engine.audit_path, engine.redactor, "step", 1)
    run = engine.run("ok:1", "ok:2", audit=audit)
    assert engine.provider.calls == ["ok:1"]  # it ran: the failure says so
    assert statuses(run) == ["failed", "not-run"]
    assert run.exit_code == 1
    assert (run.results[0].error or "").endswith("(the step itself ran)")
    assert engine.trail() == [("step.start", 1), ("run.end", "failed")]
