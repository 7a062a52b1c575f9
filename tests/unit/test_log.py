"""runtime.log: settings, levels, the redaction processor, a closed stderr."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator

import pytest

from runtime import log
from runtime.redact import Redactor


@pytest.fixture(autouse=True)
def off_afterwards() -> Iterator[None]:
    yield
    log.configure(log.Settings(None, "console"))
    log.use_redactor(Redactor())


def test_settings_options_win_over_the_environment() -> None:
    env = {"RUNTIME_LOG_LEVEL": "Debug", "RUNTIME_LOG_FORMAT": "JSON"}
    assert log.settings(None, None, {}) == log.Settings(None, "console")
    assert log.settings(None, None, env) == log.Settings(log.DEBUG, "json")
    assert log.settings("warning", "console", env) == log.Settings(log.WARNING, "console")
    assert log.settings("off", None, env) == log.Settings(None, "json")
    assert log.settings(None, None, {"RUNTIME_LOG_LEVEL": ""}).level is None


def test_an_invalid_value_names_itself_its_source_and_the_choices() -> None:
    with pytest.raises(log.LogSettingError) as raised:
        log.settings("loud", None, {})
    assert (
        raised.value.message == "--log-level 'loud' is not one of off, error, warning, info, debug"
    )
    with pytest.raises(log.LogSettingError) as raised:
        log.settings(None, None, {"RUNTIME_LOG_FORMAT": "xml"})
    assert raised.value.message == "RUNTIME_LOG_FORMAT='xml' is not one of console, json"
    assert "unset RUNTIME_LOG_FORMAT" in raised.value.hint


def capture(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    return stream


def test_levels_filter_and_off_writes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = capture(monkeypatch)
    logger = log.get_logger("t")
    logger.error("nothing", x=1)
    assert not logger.enabled(log.ERROR)
    log.configure(log.Settings(log.INFO, "json"))
    assert logger.enabled(log.INFO) and not logger.enabled(log.DEBUG)
    logger.debug("hidden")
    logger.info("shown", n=1)
    logger.log(log.WARNING, "also", n=2)
    found = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(e["event"], e["level"], e["logger"]) for e in found] == [
        ("shown", "info", "t"),
        ("also", "warning", "t"),
    ]


def test_every_event_is_redacted_before_it_is_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = capture(monkeypatch)
    redactor = Redactor()
    redactor.add("registered-secret-value")
    log.use_redactor(redactor)
    for fmt in ("json", "console"):
        log.configure(log.Settings(log.DEBUG, fmt))
        log.get_logger("t").debug(
            "event",
            token="ghp_" + "x" * 36,
            url="https://user:pa55word@example.com/path",
            nested={"list": ["a registered-secret-value b"], "registered-secret-value": 1},
        )
    text = stream.getvalue()
    assert text.count("[REDACTED]") == 8
    for secret in ("ghp_xxx", "pa55word", "registered-secret-value"):
        assert secret not in text
    assert "https://[REDACTED]@example.com/path" in text


def test_a_traceback_is_redacted_too(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = capture(monkeypatch)
    log.configure(log.Settings(log.ERROR, "json"))
    try:
        raise ValueError("ghp_" + "y" * 36)
    except ValueError:
        log.get_logger("t").error("failed", exc_info=True)
    [event] = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert "ValueError: [REDACTED]" in event["exception"]


def test_a_closed_stderr_loses_the_event_not_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = capture(monkeypatch)
    stream.close()
    log.configure(log.Settings(log.DEBUG, "json"))
    log.get_logger("t").info("lost")  # no exception
