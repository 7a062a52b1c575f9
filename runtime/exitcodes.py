"""The one table of exit codes, shared by text and JSON output."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    STEP_FAILED = 1
    INVALID = 2
    POLICY_REFUSED = 3
    MISSING_CREDENTIAL = 4
    MISSING_CAPABILITY = 5
    INTERNAL_ERROR = 70
    INTERRUPTED = 130
    TERMINATED = 143


EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.STEP_FAILED: "a step failed (earlier steps stay applied)",
    ExitCode.INVALID: "invalid capability, policy, usage or inputs; nothing ran",
    ExitCode.POLICY_REFUSED: "refused by policy; nothing ran",
    ExitCode.MISSING_CREDENTIAL: "a step needs a credential that could not be resolved",
    ExitCode.MISSING_CAPABILITY: "a required requirement is not met on this machine",
    ExitCode.INTERNAL_ERROR: "internal error in runtime itself (a bug: please report it)",
    ExitCode.INTERRUPTED: "interrupted (SIGINT / Ctrl-C)",
    ExitCode.TERMINATED: "terminated (SIGTERM)",
}
