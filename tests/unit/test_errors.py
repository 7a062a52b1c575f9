"""One hierarchy of failures, each with its exit code; one table of exit codes, copied nowhere
by hand: the documents' tables are generated from it and the schemas agree with it."""

from __future__ import annotations

import json
import signal
from typing import Any, ClassVar

import pytest

import runtime.errors as errors
import runtime.provider as provider
from runtime.cli.spec_tables import (
    EXIT_BEGIN,
    EXIT_CODE_DOCUMENTS,
    EXIT_END,
    exit_codes_markdown,
    rewrite_exit_codes,
)
from runtime.errors import (
    ExitCode,
    Failure,
    InternalError,
    Interrupted,
    MissingCapability,
    MissingCredential,
    PolicyRefusal,
    RuntimeFailure,
    StepError,
    Terminated,
    UsageError,
)
from tests.conftest import REPO


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


HIERARCHY = [Failure, *(c for c in _subclasses(Failure) if c.__module__ == "runtime.errors")]
CODES = {int(code) for code in ExitCode}


def test_every_failure_class_has_its_exit_code_and_code() -> None:
    for cls in HIERARCHY:
        assert cls.exit_code in CODES, cls
        assert isinstance(cls.exit_code, ExitCode), cls
        assert cls.code and cls.code == cls.code.lower(), cls
    # each class says its own code (JSON's error.code tells them apart), but the Exception
    # branch of the root, which is the root's
    own = [cls for cls in HIERARCHY if "code" in vars(cls)]
    assert len({cls.code for cls in own}) == len(own)
    assert set(HIERARCHY) - set(own) == {RuntimeFailure}


def test_the_mapping_is_total() -> None:
    """Every exit code but success is some failure's, and the classes give no other."""
    assert {int(cls.exit_code) for cls in HIERARCHY} == CODES - {ExitCode.OK}


def test_every_failure_is_an_exception_but_a_signal() -> None:
    for cls in HIERARCHY:
        assert issubclass(cls, Failure)
        signal_class = issubclass(cls, Terminated)
        assert issubclass(cls, Exception) is (not signal_class and cls is not Failure), cls
    with pytest.raises(Terminated):
        try:
            raise Terminated(signal.SIGTERM)
        except Exception:  # an ordinary handler does not swallow a signal
            pytest.fail("Terminated was caught as an Exception")


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        (Terminated(), 143),
        (Terminated(signal.SIGHUP), 129),
        (Terminated(signal.SIGPIPE), 141),
        (Interrupted(), 130),
        (StepError("x", program_exit_code=3), 1),
        (UsageError("x"), 2),
        (errors.NotFound("x"), 2),
        (PolicyRefusal("x"), 3),
        (MissingCredential("x"), 4),
        (MissingCapability("x"), 5),
        (InternalError("x"), 70),
        (errors.OutputError("x"), 74),
    ],
)
def test_an_instance_exits_with_its_class_code(failure: Failure, code: int) -> None:
    assert failure.exit_code == code


def test_providers_get_the_same_classes() -> None:
    for name in ("StepError", "PolicyRefusal", "MissingCredential", "MissingCapability"):
        assert getattr(provider, name) is getattr(errors, name)


def test_the_step_statuses_are_the_schemas() -> None:
    """A step ends ok, not run, or with the status of the failure it ended with."""
    schema = json.loads((REPO / "specs" / "schemas" / "execute.schema.json").read_text())
    step_statuses = set(schema["$defs"]["step"]["properties"]["status"]["enum"])
    run_statuses = set(schema["properties"]["status"]["enum"])
    statuses = {cls.status for cls in HIERARCHY if cls.status is not None}
    assert step_statuses == statuses | {"ok", "not-run"}
    assert run_statuses == statuses | {"ok"}


def _exit_code_enums(node: Any) -> list[list[int]]:
    found: list[list[int]] = []
    if isinstance(node, dict):
        exit_code = node.get("properties", {}).get("exit_code", {})
        if "enum" in exit_code:
            found.append(exit_code["enum"])
        for value in node.values():
            found += _exit_code_enums(value)
    elif isinstance(node, list):
        for value in node:
            found += _exit_code_enums(value)
    return found


def test_the_schemas_name_only_documented_exit_codes() -> None:
    enums = []
    for path in sorted((REPO / "specs" / "schemas").glob("*.schema.json")):
        enums += _exit_code_enums(json.loads(path.read_text()))
    assert enums
    for enum in enums:
        assert set(enum) <= CODES, enum


@pytest.mark.parametrize("document", EXIT_CODE_DOCUMENTS)
def test_the_committed_exit_code_table_is_the_generated_one(document: str) -> None:
    text = (REPO / document).read_text(encoding="utf-8")
    assert EXIT_BEGIN in text and EXIT_END in text
    assert rewrite_exit_codes(text) == text, f"{document} is stale: run `make specs`"


def test_the_table_lists_every_code_once() -> None:
    rows = exit_codes_markdown().splitlines()[2:]
    assert [int(row.split("|")[1]) for row in rows] == sorted(CODES)


# -- one mapping in the engine, one in the CLI ------------------------------------------


class _Planned:
    label = "step 1 (files write)"


class _Ws:
    environ: ClassVar[dict[str, str]] = {}


@pytest.mark.parametrize(
    ("raised", "status", "code"),
    [
        (KeyboardInterrupt(), "interrupted", 130),
        (Terminated(signal.SIGUSR1), "terminated", 138),
        (StepError("no"), "failed", 1),
        (PolicyRefusal("no"), "refused", 3),
        (MissingCredential("no"), "missing-credential", 4),
        (MissingCapability("no"), "missing-capability", 5),
        # met while the step ran: the step failed (earlier steps stay applied), not exit 2
        (UsageError("bad setting"), "failed", 1),
        (ValueError("a bug"), "failed", 1),
    ],
)
def test_a_step_ends_with_the_status_and_exit_code_of_its_failure(
    raised: BaseException, status: str, code: int
) -> None:
    from runtime.execute.engine import _step_failure
    from runtime.redact import Redactor

    failure = _step_failure(raised, _Planned(), _Ws(), Redactor())  # type: ignore[arg-type]
    assert (failure.status, failure.exit_code) == (status, code)


@pytest.mark.parametrize(
    ("raised", "code"),
    [
        (UsageError("x"), 2),
        (StepError("x"), 1),
        (MissingCapability("x"), 5),
        (KeyboardInterrupt(), 130),
        (Terminated(signal.SIGALRM), 142),
        (ValueError("a bug"), 70),
        (SystemExit(3), 3),
    ],
)
def test_the_cli_exits_with_the_failure_code(
    raised: BaseException, code: int, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    from runtime.cli import _exit_code_for
    from runtime.cli.session import STATE

    monkeypatch.delenv("RUNTIME_DEBUG", raising=False)
    monkeypatch.delenv("RUNTIME_OUTPUT", raising=False)
    monkeypatch.setattr(STATE, "output", "text")
    assert _exit_code_for(raised, []) == code
    if isinstance(raised, (RuntimeFailure, ValueError)):
        assert "error" in capsys.readouterr().err
