"""The Auth Engine: where credentials come from, and who receives them.

Each credential is declared by the provider whose operations need it
(:class:`runtime.provider.CredentialKind`): the environment variable it is
read from (config.yaml may name another), the keyring service it is stored
under, the host it is for by default, and how a program mapped to it in the
policy's ``binary_credentials`` receives it. Resolution order for a host: the
environment variable, then the OS keyring (user ``token``), asked once per entry
by the engine of one command: a run keeps the token it started with, and a locked
keyring prompts once, not once per step. A token is never taken from an argument
and never written anywhere but the keyring. Every resolved value is registered
with the run's redactor at once.

Surrounding whitespace (a newline from ``echo``, a pasted space) is stripped
wherever a token is read, as gh does. What is left must be printable ASCII
without control characters (:func:`clean_token`): any other value would end
up in an HTTP header, so it is refused, naming where it came from and never
showing the value (:class:`InvalidCredential`, exit 4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.errors import Invalid, InvalidPolicy, MissingCredential, UsageError
from runtime.redact import Redactor

if TYPE_CHECKING:
    from runtime.plan.workspace import Workspace
    from runtime.provider import CredentialKind

KEYRING_USER = "token"


class InvalidCredential(MissingCredential):
    """A token that cannot be a token (control or non-ASCII characters): never sent, exit 4."""

    code = "invalid-credential"


def token_problem(value: str) -> str | None:
    """Why ``value`` (already stripped) cannot be a token, without showing any of it."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return (
            "contains a control character (a newline, tab or other invisible character inside it)"
        )
    if not value.isascii():
        return (
            "contains a non-ASCII character (a token is ASCII letters, digits and punctuation; "
            "a copy may have brought a typographic quote or an ellipsis)"
        )
    return None


def clean_token(raw: str, source: str, hint: str, redactor: Redactor | None = None) -> str:
    """``raw`` without surrounding whitespace, or :class:`InvalidCredential` naming ``source``.

    ``raw`` is registered with ``redactor`` first (both forms), so that even a refused
    value is redacted wherever it might be printed.
    """
    value = raw.strip()
    if redactor is not None:
        redactor.add(raw)
        redactor.add(value)
    problem = token_problem(value)
    if problem is not None:
        raise InvalidCredential(f"the token from {source} {problem}; it was not used", hint=hint)
    return value


@dataclass(frozen=True)
class Credential:
    name: str
    host: str
    value: str
    source: str  # "environment variable RUNTIME_GITHUB_TOKEN" or "keyring"

    def __repr__(self) -> str:  # never print the value
        return f"Credential({self.name!r}, {self.host!r}, source={self.source!r})"


@dataclass(frozen=True)
class Lookup:
    credential: Credential | None
    tried: tuple[str, ...]  # where it looked, in order
    problem: str | None = None  # e.g. "no keyring backend available"
    # a value was found but cannot be a token: it names the source, never the value
    invalid: InvalidCredential | None = None


class KeyringUnavailable(Exception):
    pass


class NoKeyring(KeyringUnavailable):
    """This machine has no keyring backend at all: nothing can be stored, or be there."""


class AuthEngine:
    def __init__(
        self, workspace: Workspace, redactor: Redactor, keyring_backend: Any = None
    ) -> None:
        self.ws = workspace
        self.redactor = redactor
        self._backend = keyring_backend
        # (name, host) -> the refusal of the value last found for it (for fix_hint)
        self._refused: dict[tuple[str, str], InvalidCredential] = {}
        # keyring service -> what the keyring held: one engine serves one command (a run's
        # preflight, its redactor and its steps), and each read is a round trip to the
        # Secret Service that a locked keyring may answer with a prompt
        self._stored: dict[str, str | None] = {}

    # -- what the providers declare ------------------------------------------------
    def kinds(self) -> dict[str, CredentialKind]:
        """Every credential a registered provider declares, by name."""
        return {k.name: k for p in self.ws.registry.providers.values() for k in p.credentials}

    def kind(self, name: str) -> CredentialKind:
        found = self.kinds().get(name)
        if found is None:
            known = ", ".join(sorted(self.kinds())) or "none"
            raise UsageError(
                f"no provider declares a credential named '{name}'",
                hint=f"credentials of the registered providers: {known}",
                code="unknown-credential",
            )
        return found

    def token_env(self, name: str) -> str:
        """The environment variable the credential ``name`` is read from."""
        kind = self.kind(name)
        if kind.variable_setting:
            return self.ws.config.settings.get(kind.variable_setting) or kind.variable
        return kind.variable

    def keyring_service(self, name: str, host: str) -> str:
        return self.kind(name).keyring_service.format(host=host)

    def backend(self) -> Any:
        if self._backend is None:
            try:
                import keyring
                from keyring.backends import fail

                backend = keyring.get_keyring()
            except Exception as exc:  # a broken keyring install is a clear message, not a crash
                raise KeyringUnavailable(
                    f"the keyring could not be loaded ({type(exc).__name__})"
                ) from None
            self._backend = backend
        from keyring.backends import fail

        if isinstance(self._backend, fail.Keyring):
            raise NoKeyring(
                "no keyring backend is available on this machine (common on headless servers)"
            )
        return self._backend

    # -- resolution ---------------------------------------------------------------
    def lookup(self, name: str, host: str) -> Lookup:
        if name not in self.kinds():
            return Lookup(None, (), f"unknown credential '{name}'")
        found = self._lookup(name, host)
        if found.invalid is not None:
            self._refused[(name, host)] = found.invalid
        else:
            self._refused.pop((name, host), None)
        return found

    def _lookup(self, name: str, host: str) -> Lookup:
        variable = self.token_env(name)
        env_source = f"environment variable {variable}"
        tried = [env_source]
        raw = self.ws.environ.get(variable)
        if raw is not None and raw.strip():
            try:
                value = clean_token(raw, variable, self.env_hint(name), self.redactor)
            except InvalidCredential as exc:
                return Lookup(None, tuple(tried), exc.message, exc)
            return Lookup(Credential(name, host, value, env_source), tuple(tried))
        service = self.keyring_service(name, host)
        tried.append(f"keyring ({service})")
        try:
            stored = self._keyring_value(service)
        except KeyringUnavailable as exc:
            return Lookup(None, tuple(tried), str(exc))
        except Exception as exc:
            return Lookup(None, tuple(tried), f"the keyring failed ({type(exc).__name__})")
        if isinstance(stored, str) and stored.strip():
            try:
                value = clean_token(
                    stored,
                    f"the keyring entry {service} (user {KEYRING_USER})",
                    self.keyring_hint(name, host),
                    self.redactor,
                )
            except InvalidCredential as exc:
                return Lookup(None, tuple(tried), exc.message, exc)
            return Lookup(Credential(name, host, value, "keyring"), tuple(tried))
        return Lookup(None, tuple(tried))

    def _keyring_value(self, service: str) -> str | None:
        """The keyring's entry for ``service``, asked once per engine (a failure is not
        kept: the next lookup asks again)."""
        if service not in self._stored:
            value = self.backend().get_password(service, KEYRING_USER)
            self._stored[service] = value if isinstance(value, str) else None
        return self._stored[service]

    def require(self, name: str, host: str) -> Credential:
        found = self.lookup(name, host)
        if found.credential is not None:
            return found.credential
        if found.invalid is not None:
            raise InvalidCredential(found.invalid.message, hint=found.invalid.hint)
        why = f" ({found.problem})" if found.problem else ""
        raise MissingCredential(
            f"no {name} credential for {host}: looked in {', '.join(found.tried)}{why}",
            hint=self.fix_hint(name, host, found.problem is not None),
        )

    def login_command(self, name: str, host: str) -> str:
        default = self.kind(name).default_host
        return f"runtime auth login {name}" + ("" if host == default else f" --host {host}")

    def env_hint(self, name: str) -> str:
        return (
            f"set {self.token_env(name)} to the token alone (surrounding spaces and newlines "
            "are ignored), or unset it"
        )

    def keyring_hint(self, name: str, host: str) -> str:
        login = self.login_command(name, host)
        logout = login.replace(" login ", " logout ", 1)
        return f"store the token again with `{login}`, or remove it with `{logout}`"

    def fix_hint(self, name: str, host: str, keyring_broken: bool = False) -> str:
        """The command that provides ``host``'s credential (or repairs the value found)."""
        refused = self._refused.get((name, host))
        if refused is not None and refused.hint:
            return refused.hint
        login = self.login_command(name, host)
        variable = self.token_env(name)
        if keyring_broken:
            return (
                f"export {variable}=<token> (no usable keyring here), or fix the keyring and "
                f"run `{login}`"
            )
        return (
            f"run `{login}` (reads the token from stdin or a hidden prompt), or export "
            f"{variable}=<token>"
        )

    # -- storing ------------------------------------------------------------------
    def store(self, name: str, host: str, token: str) -> None:
        service = self.keyring_service(name, host)
        self._stored.pop(service, None)
        self.backend().set_password(service, KEYRING_USER, token)

    def delete(self, name: str, host: str) -> bool:
        backend = self.backend()
        service = self.keyring_service(name, host)
        self._stored.pop(service, None)
        try:
            existing = backend.get_password(service, KEYRING_USER)
            if existing is None:
                return False
            backend.delete_password(service, KEYRING_USER)
            return True
        except Exception as exc:
            if type(exc).__name__ == "PasswordDeleteError":
                return False
            raise KeyringUnavailable(f"the keyring failed ({type(exc).__name__})") from None

    def default_host(self, name: str) -> str:
        """The host of the credential ``name`` when nothing else names one: the active
        context's (the provider's host setting), else config.yaml's, else what the
        environment points at, else the provider's default."""
        from runtime.home.contexts import ContextStore

        kind = self.kind(name)
        if kind.host_setting:
            active = ContextStore(self.ws.home).active()
            if active is not None and active.get(kind.host_setting):
                return str(active.get(kind.host_setting))
            configured = self.ws.config.settings.get(kind.host_setting)
            if configured:
                return configured
        if kind.host_from_environ is not None:
            try:
                found = kind.host_from_environ(self.ws.environ)
            except ValueError as exc:
                raise Invalid(str(exc), code="invalid-setting") from None
            if found:
                return found
        return kind.default_host

    # -- what a program receives ----------------------------------------------------
    def program_environment(self, name: str, host: str, config_dir: str) -> dict[str, str]:
        """Variables that carry the credential ``name`` to a program mapped to it (gh),
        with a config folder of its own."""
        kind = self.kind(name)
        if kind.program_environment is None:
            raise InvalidPolicy(
                f"the credential '{name}' cannot be given to a program",
                hint="remove it from binary_credentials in the policy",
            )
        return kind.program_environment(self.require(name, host).value, host, config_dir)
