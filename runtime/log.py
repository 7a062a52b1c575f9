"""The diagnostic event stream: structlog, to stderr, off unless asked for.

``runtime --log-level LEVEL [--log-format console|json] ...`` (or
``RUNTIME_LOG_LEVEL`` / ``RUNTIME_LOG_FORMAT`` in a pipeline; the option wins)
turns it on for one process. Levels: ``off`` (the default), ``error``,
``warning``, ``info``, ``debug``; formats: ``console`` (the default: one
aligned line per event) and ``json`` (one JSON object per line). Events go to
stderr only: stdout, and so ``--output json``'s one document, is exactly what
it is without them. The run's progress lines share stderr with them; with logging
on, each is written whole (a step's start and its end on lines of their own), so an
event never lands inside one.

Every event goes through the run's :class:`~runtime.redact.Redactor` before it
is rendered: the secrets registered for the run (tokens, secret-named
inputs), token shapes (``ghp_...``, ``github_pat_...``) and a URL's
``user:password@`` never reach the stream, whatever field they are in (a
traceback included: it is formatted into the event first).

Cost. structlog is imported by :func:`configure` only, when logging is on: a
process that logs nothing never imports it (``runtime --version`` pays
nothing). Code that emits events holds a :class:`Logger` from
:func:`get_logger`, made at import time and cheap; its methods return at
once below the level, and a call site whose fields cost something to build
asks :meth:`Logger.enabled` first. Providers get the same through
:func:`runtime.provider.log.get_logger`.

The events (``logger`` names the emitter; each carries its own fields):

====================  =========  ====================================================
event                 level      fields
====================  =========  ====================================================
station.entered       debug      station, capability, mode
station.finished      debug      station, capability, ms; problems (load, validate),
                                 steps (resolve), refused (policy), status (execute)
station.failed        warning    station, capability, code, exit_code, message
step.refused          warning    step, target, rule, reason (at the policy station)
step.started          info       run_id, step, of, target
step.finished         info       run_id, step, target, status, duration_ms, exit_code,
                                 http_status, error (a warning when not ok)
http.request          debug      method, route, status, attempt, ms (GitHub client)
http.retry            warning    method, route, status, attempt, wait_s, why
http.failed           warning    method, route, attempt, error (no response)
====================  =========  ====================================================

Every event also has ``timestamp`` (UTC, ISO 8601), ``level``, ``event`` and
``logger``, in that order first. ``route`` is a URL's path, never its query.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from runtime.redact import Redactor

# the standard library's numbers, which structlog's filtering loggers use too
DEBUG, INFO, WARNING, ERROR = 10, 20, 30, 40
LEVELS: dict[str, int | None] = {
    "off": None,
    "error": ERROR,
    "warning": WARNING,
    "info": INFO,
    "debug": DEBUG,
}
FORMATS = ("console", "json")
LEVEL_VARIABLE = "RUNTIME_LOG_LEVEL"
FORMAT_VARIABLE = "RUNTIME_LOG_FORMAT"


class LogSettingError(ValueError):
    """A log level or format that is not one of the choices (a usage error, exit 2)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class Settings(NamedTuple):
    level: int | None  # None: off
    format: str


def settings(
    level: str | None, fmt: str | None, environ: Mapping[str, str] | None = None
) -> Settings:
    """The stream's settings from the options (``None``: not given) and the environment.

    An option wins over its variable. A value that is not one of the choices
    raises :class:`LogSettingError` naming it, where it came from and the choices.
    Case does not matter (``DEBUG`` is ``debug``).
    """
    env = os.environ if environ is None else environ
    level_name = _choice(level, "--log-level", env.get(LEVEL_VARIABLE), LEVEL_VARIABLE, LEVELS)
    format_name = _choice(fmt, "--log-format", env.get(FORMAT_VARIABLE), FORMAT_VARIABLE, FORMATS)
    return Settings(LEVELS[level_name or "off"], format_name or "console")


def _choice(
    given: str | None,
    option: str,
    variable_value: str | None,
    variable: str,
    choices: Mapping[str, Any] | tuple[str, ...],
) -> str | None:
    if given is not None:
        value, where = given, option
    elif variable_value:  # set and not empty (an empty variable is unset, as for NO_COLOR)
        value, where = variable_value, variable
    else:
        return None
    if value.strip().lower() in choices:
        return value.strip().lower()
    listed = ", ".join(choices)
    shown = f"{where} {value!r}" if where.startswith("--") else f"{where}={value!r}"
    raise LogSettingError(
        f"{shown} is not one of {listed}",
        hint=f"use {option} {{{'|'.join(choices)}}}, or unset {variable}",
    )


# -- the process's stream --------------------------------------------------------------------

_threshold: int | None = None  # None: off, and structlog was not imported
_bound: Any = None  # the structlog logger every Logger sends through
_redactor: Redactor | None = None


def configure(chosen: Settings) -> None:
    """Turn the stream on (or off) for this process; structlog is imported only when on."""
    global _threshold, _bound, _redactor
    if chosen.level is None:
        _threshold, _bound = None, None
        return
    import structlog

    from runtime.redact import Redactor

    if _redactor is None:
        _redactor = Redactor()  # token shapes and URL userinfo until a run brings its own
    if chosen.format == "json":
        from runtime.text import json_dumps, json_for

        # as every JSON runtime writes: a line a strict reader takes (a file name's
        # byte that is not UTF-8 as its escape, not a lone surrogate; on a stream that
        # is not UTF-8, ASCII)
        renderer: Any = structlog.processors.JSONRenderer(
            serializer=lambda value, **options: json_for(sys.stderr, json_dumps(value, **options))
        )
    else:
        colors = sys.stderr.isatty() and not os.environ.get("NO_COLOR")
        renderer = structlog.dev.ConsoleRenderer(colors=colors, sort_keys=False)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,  # a traceback is text, redacted below
            redact,
            _in_order,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(chosen.level),
        logger_factory=_StderrLogger,
        cache_logger_on_first_use=True,
    )
    _bound = structlog.get_logger()
    _threshold = chosen.level


def use_redactor(redactor: Redactor) -> None:
    """Redact events with ``redactor`` from now on (a run's: its secrets, as registered)."""
    global _redactor
    _redactor = redactor


def redact(logger: Any, method: str, event: MutableMapping[str, Any]) -> dict[str, Any]:
    """The processor that keeps secrets out of the stream: every key and value (nested
    ones too) through the run's redactor, before the event is rendered."""
    redactor = _redactor
    if redactor is None:
        from runtime.redact import Redactor

        redactor = Redactor()
    redacted: dict[str, Any] = redactor.data(event)
    return redacted


_FIRST = ("timestamp", "level", "event", "logger")


def _in_order(logger: Any, method: str, event: MutableMapping[str, Any]) -> dict[str, Any]:
    """When, how serious, what and who first; then the event's own fields as given."""
    ordered = {key: event.pop(key) for key in _FIRST if key in event}
    ordered.update(event)
    return ordered


class _StderrLogger:
    """Writes each rendered event as one line on stderr; a closed stderr loses the line,
    never the run."""

    def __init__(self, *args: Any) -> None:
        pass

    def msg(self, line: str) -> None:
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    log = debug = info = warning = warn = error = critical = exception = fatal = msg


class Logger:
    """An emitter's handle on the stream: cheap to hold, a no-op while logging is off."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    @staticmethod
    def enabled(level: int = DEBUG) -> bool:
        """Whether an event at ``level`` would be written: ask it before building costly
        fields."""
        return _threshold is not None and level >= _threshold

    def debug(self, event: str, **fields: Any) -> None:
        if _threshold is not None and _threshold <= DEBUG:
            _bound.debug(event, logger=self.name, **fields)

    def info(self, event: str, **fields: Any) -> None:
        if _threshold is not None and _threshold <= INFO:
            _bound.info(event, logger=self.name, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        if _threshold is not None and _threshold <= WARNING:
            _bound.warning(event, logger=self.name, **fields)

    def error(self, event: str, **fields: Any) -> None:
        if _threshold is not None and _threshold <= ERROR:
            _bound.error(event, logger=self.name, **fields)

    def log(self, level: int, event: str, **fields: Any) -> None:
        if _threshold is not None and level >= _threshold:
            _bound.log(level, event, logger=self.name, **fields)


def get_logger(name: str) -> Logger:
    """A :class:`Logger` for ``name`` (a module's, or a provider's ``providers.github``)."""
    return Logger(name)
