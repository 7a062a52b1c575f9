"""Failures that end a command. They carry their exit code; only the CLI prints them."""

from __future__ import annotations

from runtime.exitcodes import ExitCode
from runtime.problems import Problem


class Terminated(BaseException):
    """Raised in the main thread when a run receives a terminating signal (exit 128 + n).

    SIGTERM, and SIGHUP (the terminal or SSH session closed), SIGUSR1, SIGUSR2,
    SIGALRM and SIGPIPE (the reader of our output went away): each would
    otherwise end the process at once, leaving the step's processes running
    and the run unrecorded.
    """

    def __init__(self, signum: int = 15) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        import signal

        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class RuntimeFailure(Exception):
    """Base of every failure that ends a command with a documented exit code."""

    exit_code: ExitCode = ExitCode.INVALID
    code: str = "failure"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        problems: list[Problem] | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.problems = problems or []
        if code is not None:
            self.code = code


class UsageError(RuntimeFailure):
    exit_code = ExitCode.INVALID
    code = "usage"


class InvalidCapability(RuntimeFailure):
    exit_code = ExitCode.INVALID
    code = "invalid-capability"


class InvalidPolicy(RuntimeFailure):
    exit_code = ExitCode.INVALID
    code = "invalid-policy"


class PolicyRefusal(RuntimeFailure):
    exit_code = ExitCode.POLICY_REFUSED
    code = "policy-refused"


class MissingCredential(RuntimeFailure):
    exit_code = ExitCode.MISSING_CREDENTIAL
    code = "missing-credential"


class MissingCapability(RuntimeFailure):
    exit_code = ExitCode.MISSING_CAPABILITY
    code = "missing-capability"


class NotFound(RuntimeFailure):
    exit_code = ExitCode.INVALID
    code = "not-found"
