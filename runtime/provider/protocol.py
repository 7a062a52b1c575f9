"""What a provider declares besides its operations (:class:`CredentialKind`,
:class:`SettingKind`), the :class:`Provider` protocol itself, and
:class:`ProviderBase`, the defaults of its optional hooks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from runtime.provider.inspection import Inspection
from runtime.provider.operations import BindingProblem, BoundCall, Operation
from runtime.provider.programs import ProgramProfile
from runtime.provider.run import RunContext, StepEnvironment, StepOutcome


@dataclass(frozen=True)
class CredentialKind:
    """A credential a provider's operations need, and how the Auth Engine finds it.

    Looked up in the environment variable (config.yaml's ``variable_setting`` may
    name another), then in the OS keyring under ``keyring_service`` (``{host}``
    filled in). Programs mapped to it in the policy's ``binary_credentials``
    receive it through ``program_environment(token, host, config_dir)``.
    """

    name: str  # "github"
    variable: str  # "RUNTIME_GITHUB_TOKEN"
    keyring_service: str  # "runtime:github:{host}"
    default_host: str  # "github.com"
    variable_setting: str | None = None  # a config.yaml key naming another variable
    host_setting: str | None = None  # a setting naming the host ("github_host")
    # the host an environment variable points at (GITHUB_API_URL), when set
    host_from_environ: Callable[[Mapping[str, str]], str | None] | None = None
    program_environment: Callable[[str, str, str], dict[str, str]] | None = None
    # other names of a host that its programs may use (github.com: api.github.com)
    host_aliases: Callable[[str], tuple[str, ...]] | None = None
    # what a user is asked for at login ("a GitHub token (classic or fine-grained)")
    login_hint: str = ""


class SettingKind(NamedTuple):
    """A value a provider reads from a Runtime Context or config.yaml (``github_host``)."""

    name: str
    help: str
    check: Callable[[str], str | None] | None = None  # why a value is refused, or None
    in_config: bool = False  # config.yaml may set it too


class Provider(Protocol):
    """What the engine needs from a provider. Found through entry points."""

    name: str
    summary: str
    operations: tuple[Operation, ...]
    credentials: tuple[CredentialKind, ...]
    settings: tuple[SettingKind, ...]
    # what `runtime capability new --provider NAME` writes: inputs and workflow, and
    # the network rule the scaffold declares
    scaffold: str
    scaffold_network: str

    def execute(self, operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
        """Run one call; a failure is ``ok=False`` or a step error."""
        ...

    def inspect(self, operation: Operation, call: BoundCall, run: RunContext) -> Inspection:
        """What the call will touch, or why it cannot run (plan time: looks only)."""
        ...

    def check(self, operation: Operation, call: BoundCall) -> list[BindingProblem]:
        """Problems with the args as authored, beyond their form (validation time, and a
        typed call before it runs). ``call`` is bound by the engine from the args as
        authored, each arg one :class:`~runtime.provider.operations.Piece`, ``missing``
        where it holds a ``${reference}`` (its value is not known before plan time)."""
        ...

    def check_token(
        self, run: RunContext, host: str, token: str, timeout: float
    ) -> dict[str, object]:
        """Read-only, within ``timeout`` seconds: what the token is (its login, scopes).
        A :class:`StepError` (with ``http_status`` when the host answered) when it cannot
        tell; :class:`NotImplementedError` when the provider has no such check."""
        ...

    def ping(self, run: RunContext, host: str, timeout: float, max_bytes: int) -> int:
        """Read-only and bounded: does the host answer? Its HTTP status."""
        ...


class ProviderBase:
    """Defaults for a provider's optional parts: no credentials or settings, nothing to
    inspect or check, no token check or ping."""

    credentials: tuple[CredentialKind, ...] = ()
    settings: tuple[SettingKind, ...] = ()
    # what the sandbox must know of the programs the provider's operations run
    programs: tuple[ProgramProfile, ...] = ()
    scaffold: str = ""
    scaffold_network: str = "none"

    def inspect(self, operation: Operation, call: BoundCall, run: RunContext) -> Inspection:
        return Inspection()

    def check(self, operation: Operation, call: BoundCall) -> list[BindingProblem]:
        return []

    def check_token(
        self, run: RunContext, host: str, token: str, timeout: float
    ) -> dict[str, object]:
        raise NotImplementedError(f"no token check for {host}")

    def ping(self, run: RunContext, host: str, timeout: float, max_bytes: int) -> int:
        raise NotImplementedError(f"no live check for {host}")
