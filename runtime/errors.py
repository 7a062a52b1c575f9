"""Failures that end a command or a step, and the one table of exit codes.

Every failure is a :class:`Failure` and carries its exit code and a stable ``code``
(the ``error.code`` of JSON output) on its class; a failure a step may end with
carries the step's ``status`` too. The CLI reports a failure and exits with its
code (``runtime.cli._exit_code_for``); the engine gives a step, and the run, the
status and the exit code of the failure the step ended with. Nothing else maps
failures to exit codes. The hierarchy (exit code, ``code``)::

    Failure                           BaseException: the root
    ├── RuntimeFailure                an Exception too: what ``except Exception`` sees
    │   ├── Invalid                   2  invalid             nothing ran
    │   │   ├── UsageError            2  usage
    │   │   ├── InvalidCapability     2  invalid-capability
    │   │   ├── InvalidPolicy         2  invalid-policy
    │   │   └── NotFound              2  not-found
    │   ├── PolicyRefusal             3  policy-refused      step status "refused"
    │   │   └── Declined              3  confirmation-declined  a confirmation the policy asks
    │   ├── MissingCredential         4  missing-credential  step status "missing-credential"
    │   │   └── RejectedCredential    4  rejected-credential the host refused it (a 401)
    │   ├── MissingCapability         5  missing-capability  step status "missing-capability"
    │   ├── StepError                 1  step-failed         step status "failed"
    │   ├── InternalError            70  internal-error      a bug in runtime
    │   └── OutputError              74  output-failed       stdout could not be written
    └── Terminated              128 + n  terminated          a terminating signal n
        └── Interrupted             130  interrupted         SIGINT (KeyboardInterrupt)
            └── Cancelled           130  cancelled           an MCP client's cancellation

:class:`Terminated` is not an :class:`Exception`, so that no handler of ordinary
errors swallows a signal; Python's own ``KeyboardInterrupt`` is raised as ever,
and the engine and the CLI take it as :class:`Interrupted`. :class:`StepError`
and the refusals are what providers raise (``runtime.provider`` re-exports them).

:class:`ExitCode` is the table itself: code, name and meaning. The tables in
README.md and specs/capability-spec.md are generated from it (``make specs``), and
a test fails when they differ.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from runtime.problems import Problem


class ExitCode(IntEnum):
    """The documented exit codes, the same in text and JSON mode."""

    meaning: str

    def __new__(cls, code: int, meaning: str) -> ExitCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.meaning = meaning
        return member

    OK = 0, "success"
    STEP_FAILED = (
        1,
        "a step failed (earlier steps stay applied: capabilities are not transactional)",
    )
    INVALID = 2, "invalid capability, policy, usage or inputs; nothing ran"
    POLICY_REFUSED = 3, "refused by policy; nothing ran"
    MISSING_CREDENTIAL = (
        4,
        "a step needs a credential that could not be resolved, or that the host rejected",
    )
    MISSING_CAPABILITY = (
        5,
        "missing capability: a required requirement is not met on this machine "
        "(e.g. a binary not on PATH)",
    )
    INTERNAL_ERROR = (
        70,
        "internal error in runtime itself (a bug; no traceback is printed, "
        "`RUNTIME_DEBUG=1` shows it)",
    )
    OUTPUT_FAILED = (
        74,
        "the output could not be written: stdout closed or full (what ran stays done; a "
        "command that failed keeps its own code, and a reader that went away gives 141)",
    )
    INTERRUPTED = 130, "interrupted (SIGINT), or cancelled by an MCP client"
    TERMINATED = (
        143,
        "terminated (SIGTERM); any other terminating signal n gives 128+n (129 SIGHUP, "
        "138 SIGUSR1, 140 SIGUSR2, 142 SIGALRM, 141 when stdout closes)",
    )


class Failure(BaseException):
    """The root: a failure that ends a command (or a step) with a documented exit code."""

    exit_code: int = ExitCode.INTERNAL_ERROR
    code: str = "failure"
    # the status of a step that ends with this failure, and of its run (JSON output and
    # the audit log); None: not a step's own outcome, a step that raises it just failed
    status: str | None = None

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

    def redact(self, redactor: Any) -> None:
        """Redact what this failure says with ``redactor`` (a run's: its secret-named
        inputs and credentials), before it leaves the run for the terminal or a log."""
        self.message = redactor.text(self.message)
        self.hint = redactor.text(self.hint) if self.hint else self.hint
        self.problems = [
            p._replace(
                message=redactor.text(p.message), hint=redactor.text(p.hint) if p.hint else p.hint
            )
            for p in self.problems
        ]

    @property
    def document_status(self) -> str:
        """The ``status`` of the error document (``--output json``), as a run's document
        has one, so that ``jq .status`` reads both: the status of the step this failure
        ends (``refused``, ``missing-credential``...), or ``invalid`` when nothing ran
        because something given was wrong, else the failure's ``code``."""
        if self.status is not None:
            return self.status
        return "invalid" if isinstance(self, Invalid) else self.code


class RuntimeFailure(Failure, Exception):
    """Every failure but a signal: an :class:`Exception`, caught where one is expected."""


class Invalid(RuntimeFailure):
    """Invalid capability, policy, usage or inputs: refused before anything ran."""

    exit_code = ExitCode.INVALID
    code = "invalid"


class UsageError(Invalid):
    code = "usage"


class InvalidCapability(Invalid):
    code = "invalid-capability"


class InvalidPolicy(Invalid):
    code = "invalid-policy"


class NotFound(Invalid):
    code = "not-found"


class PolicyRefusal(RuntimeFailure):
    exit_code = ExitCode.POLICY_REFUSED
    code = "policy-refused"
    status = "refused"


class Declined(PolicyRefusal):
    """A confirmation the policy asks for (its ``agents.confirm``) was declined, or could
    not be asked: nothing ran."""

    code = "confirmation-declined"

    def __init__(self, message: str, *, hint: str | None = None, rules: list[str]) -> None:
        super().__init__(message, hint=hint)
        self.rules = rules  # the policy's rules that asked for the confirmation


class MissingCredential(RuntimeFailure):
    exit_code = ExitCode.MISSING_CREDENTIAL
    code = "missing-credential"
    status = "missing-credential"


class RejectedCredential(MissingCredential):
    """The host refused the credential a step gave it (HTTP 401, the step's provider
    says): the run ends as one without a credential does, since a new one is the fix."""

    code = "rejected-credential"


class MissingCapability(RuntimeFailure):
    exit_code = ExitCode.MISSING_CAPABILITY
    code = "missing-capability"
    status = "missing-capability"


class StepError(RuntimeFailure):
    """A step failed; the message is shown to the user as is (no secrets in it).

    ``program_exit_code`` is what the program the step ran exited with (a binary's,
    gh's), ``http_status`` the last HTTP status a REST or GraphQL step got, ``data``
    what the step's output holds: the step's record shows them. The run's exit code
    is :attr:`exit_code` (1), as for every failed step.
    """

    exit_code = ExitCode.STEP_FAILED
    code = "step-failed"
    status = "failed"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        program_exit_code: int | None = None,
        http_status: int | None = None,
        data: Any = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.program_exit_code = program_exit_code
        self.http_status = http_status
        self.data = data


class InternalError(RuntimeFailure):
    """A bug in runtime itself: reported without a traceback (``RUNTIME_DEBUG=1`` shows it)."""

    exit_code = ExitCode.INTERNAL_ERROR
    code = "internal-error"


class OutputError(RuntimeFailure):
    """stdout could not be written (closed, a full disk, an I/O error); said on stderr.

    Only when the command itself succeeded: a failure keeps its own exit code. A pipe
    whose reader went away is not this, but :class:`Terminated` by SIGPIPE (141).
    """

    exit_code = ExitCode.OUTPUT_FAILED
    code = "output-failed"

    @classmethod
    def of(cls, exc: OSError) -> OutputError:
        import errno

        why = "it is closed" if exc.errno == errno.EBADF else (exc.strerror or str(exc))
        return cls(
            f"could not write to standard output: {why}; the output was lost",
            hint="give runtime a writable stdout (> FILE; > /dev/null to discard the output)",
        )


class Terminated(Failure):
    """A terminating signal n arrived (exit 128 + n); raised in the main thread.

    SIGTERM, and SIGHUP (the terminal or SSH session closed), SIGUSR1, SIGUSR2,
    SIGALRM and SIGPIPE (the reader of our output went away): each would
    otherwise end the process at once, leaving the step's processes running
    and the run unrecorded. Not an :class:`Exception`: no handler of ordinary
    errors swallows it.
    """

    exit_code: int = ExitCode.TERMINATED  # 128 + the signal's number, on each instance
    code = "terminated"
    status = "terminated"

    def __init__(self, signum: int = 15) -> None:
        self.signum = signum
        super().__init__(self._message())
        self.exit_code = 128 + signum

    def _message(self) -> str:
        return f"terminated by {self.name}"

    @property
    def name(self) -> str:
        import signal

        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"


class Interrupted(Terminated):
    """SIGINT (Ctrl-C): Python raises ``KeyboardInterrupt``, which the engine and the CLI
    take as this failure."""

    exit_code = ExitCode.INTERRUPTED
    code = "interrupted"
    status = "interrupted"

    def __init__(self) -> None:
        super().__init__(2)  # SIGINT: 128 + 2 = 130

    def _message(self) -> str:
        return "interrupted"


class Cancelled(Interrupted):
    """The MCP client that asked for the run cancelled it (``notifications/cancelled``):
    the running step's processes are stopped, as for SIGINT, and the run is recorded."""

    code = "cancelled"
    status = "cancelled"

    def _message(self) -> str:
        return "cancelled by the client"

    @property
    def name(self) -> str:
        return "the client"
