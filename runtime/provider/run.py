"""What a provider may ask of the run (:class:`RunContext`), what a step gets to run
(:class:`StepEnvironment`) and what it gives back (:class:`StepOutcome`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar

from runtime.provider.operations import Access, BoundCall, Operation

T = TypeVar("T")


class Roots(NamedTuple):
    paths: list[Path]  # real paths
    source: str  # where the policy took them from ("default", a file)


class ProtectedPaths(NamedTuple):
    """Real paths a step never writes, whatever the roots say."""

    home: str  # Runtime Home: the audit log, the policy, contexts, configuration
    policy_file: str | None  # the user's policy file, wherever it lies
    # the same folders by identity (device, inode): a bind mount reaches them by another
    # real path. Home's folder; the policy file's folder and the file's name
    home_id: tuple[int, int] | None = None
    policy_at: tuple[int, int, str] | None = None


class EditLimits(NamedTuple):
    """The policy's bounds on one structured edit (its ``file_edits``): the files it may
    change, the bytes of the files it reads, its matches, the bytes of its unified diff,
    the seconds it may take; and where each came from (``sources``: its key, max_files,
    to "default" or a policy file)."""

    files: int
    bytes: int
    matches: int
    diff_bytes: int
    seconds: float
    sources: Mapping[str, str]


class Setting(NamedTuple):
    """A value a provider declared (``github_host``), and where it came from."""

    value: str
    origin: str  # "context 'work'", "config.yaml"
    context: str | None = None  # the active context's name, when it came from one


class SecretFilter(Protocol):
    def add(self, secret: str | None) -> None: ...
    def text(self, value: str) -> str: ...


class ProgramResult(NamedTuple):
    """What a program a step ran did (its output bounded to a head and a tail)."""

    exit_code: int | None  # None when it was killed by the time limit
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    truncated: bool
    timed_out: bool
    # connections the step's network rules refused, each with its reason
    blocked: tuple[str, ...] = ()


class RunContext(Protocol):
    """What a provider may ask of the run, at plan time and when a step runs.

    Nothing here has a side effect but :meth:`run_program` (and the state and
    credentials a provider asks for, which the run keeps and closes).
    """

    @property
    def cwd(self) -> Path: ...
    @property
    def environ(self) -> Mapping[str, str]: ...
    @property
    def redactor(self) -> SecretFilter: ...

    def roots(self, access: Access) -> Roots:
        """The policy's read or write roots, resolved from the working directory."""
        ...

    def protected_paths(self) -> ProtectedPaths:
        """Real paths a step never writes (resolved afresh at each call: a step may have
        put a link where one was)."""
        ...

    def edit_limits(self) -> EditLimits:
        """The policy's bounds on one structured edit (``file_edits``)."""
        ...

    def home_key(self, purpose: str) -> bytes | None:
        """A secret of this Runtime Home for ``purpose`` (made once), or None if Home
        cannot hold one."""
        ...

    def setting(self, key: str) -> Setting | None:
        """A value the provider declared: from the active Runtime Context, else config.yaml."""
        ...

    def credential(self, name: str, host: str) -> str:
        """The credential ``name`` for ``host`` (registered with the redactor); raises
        :class:`MissingCredential` when it cannot be resolved."""
        ...

    def default_host(self, credential: str) -> str:
        """The host the credential ``name`` is for when nothing names another."""
        ...

    def state(self, make: Callable[[], T]) -> T:
        """This run's object made by ``make`` (made once per run; one per factory)."""
        ...

    def on_close(self, closer: Callable[[], None]) -> None:
        """Call ``closer`` when the run ends (close a client)."""
        ...

    def check_host(self, host: str, network: HostRule | None) -> None:
        """Raise :class:`MissingCapability` when ``network`` (the capability's rule, as the
        step's environment carries it) forbids ``host``."""
        ...

    def program_environment(self) -> dict[str, str]:
        """The environment every program a step runs starts from: the policy's
        allow-listed variables, nothing else."""
        ...

    def scratch(self, name: str) -> contextlib.AbstractContextManager[str]:
        """A folder of the program's own for one start (a config folder): pass it to
        :meth:`run_program` as ``scratch``."""
        ...

    def run_program(
        self,
        argv: list[str],
        environ: Mapping[str, str],
        *,
        timeout: float,
        on_output: Callable[[str, str], None],
        scratch: str | None = None,
        network: HostRule | None = None,
    ) -> ProgramResult:
        """Run ``argv`` (argv[0] absolute) as the engine runs every program: confined
        where the system allows it, in a process group of its own, bounded in time and
        memory, its output streamed redacted. ``environ`` gets hardened git on top (the
        engine's ``GIT_*`` variables win over its own): any git the program starts, as
        gh starts one for ``repo clone`` or to read a checkout's remotes, reads no
        system or global configuration and runs no program that configuration names.
        ``network`` narrows the hosts a confined program may reach. Raises
        :class:`StepError` if it cannot start."""
        ...


# -- what a step gets, and gives back ----------------------------------------------------


class HostRule(Protocol):
    """What a step may reach: the capability's ``requires.network``, as the engine reads
    it (``none``, ``local``, ``public`` or host globs)."""

    @property
    def kind(self) -> str: ...

    def check(self, host: str, *, resolve: bool) -> tuple[bool | None, str]:
        """(allowed, why); allowed is None when it cannot be told without resolving."""
        ...

    def describe(self) -> str: ...


@dataclass
class StepEnvironment:
    """Everything a step may use: the run, and this step's time, output and network."""

    run: RunContext
    timeout: float
    # Called with chunks of a step's own output while it runs (text mode streams it).
    on_output: Callable[[str, str], None] = field(default=lambda stream, text: None)
    # When the step started (time.monotonic()); ``timeout`` after it, its time is up.
    started: float = field(default_factory=time.monotonic)
    # the hosts the step may reach (requires.network); None: the capability declares none
    network: HostRule | None = None

    @property
    def cwd(self) -> Path:
        return self.run.cwd

    @property
    def environ(self) -> Mapping[str, str]:
        return self.run.environ

    @property
    def redactor(self) -> SecretFilter:
        return self.run.redactor

    @property
    def deadline(self) -> float:
        """When the step's time limit runs out (``time.monotonic()``): providers hold their
        own work (requests, retries, waits) to it, as programs are held to ``timeout``."""
        return self.started + self.timeout

    def check_host(self, host: str) -> None:
        """Raise :class:`MissingCapability` when the step may not reach ``host``; providers
        ask before every connection."""
        self.run.check_host(host, self.network)

    def run_program(
        self, argv: list[str], environ: Mapping[str, str], scratch: str | None = None
    ) -> ProgramResult:
        """:meth:`RunContext.run_program` with this step's time limit, output and network."""
        return self.run.run_program(
            argv,
            environ,
            timeout=self.timeout,
            on_output=self.on_output,
            scratch=scratch,
            network=self.network,
        )


@dataclass
class StepOutcome:
    ok: bool
    output: str = ""  # human-readable output of the step
    data: Any = None  # structured output (JSON-able)
    exit_code: int | None = None  # a binary's (or gh's) exit code
    http_status: int | None = None  # the last HTTP status of a REST/GraphQL step
    error: str | None = None
    hint: str | None = None
    output_bytes: int | None = None  # total bytes a process printed (output may be a head and tail)
    truncated: bool = False
    streamed: bool = False  # the output already reached the terminal while the step ran
    # the host refused the credential the step gave it (a 401): the step fails as a
    # credential failure (exit 4, as `runtime auth login` refuses it), not as any failure
    credential_rejected: bool = False
    details: dict[str, Any] = field(default_factory=dict)
    # The output as bytes, where text would not keep them (an archive a REST call
    # answered): ``--output raw`` writes these, redacted, instead of ``output``, which is
    # then what text mode shows of them.
    raw: bytes | None = None


def context_defaults(
    operation: Operation, call: BoundCall, run: RunContext
) -> dict[str, Setting | None]:
    """Each positional the call leaves out (or empty) that declares a context default: the
    setting that stands in for it, or None when none is set."""
    return {
        p.name: run.setting(p.context_default)
        for p in operation.positionals
        if p.context_default is not None and not call.positionals.get(p.name)
    }
