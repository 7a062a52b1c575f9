"""The Auth Engine: where credentials come from, and who receives them.

Resolution order for the github credential of a host: the environment
variable (``RUNTIME_GITHUB_TOKEN`` unless config.yaml names another), then
the OS keyring (service ``runtime:github:HOST``, user ``token``). A token is
never taken from an argument and never written anywhere but the keyring.
Every resolved value is registered with the run's redactor at once.

Surrounding whitespace (a newline from ``echo``, a pasted space) is stripped
wherever a token is read, as gh does. What is left must be printable ASCII
without control characters (:func:`clean_token`): any other value would end
up in an HTTP header, so it is refused, naming where it came from and never
showing the value (:class:`InvalidCredential`, exit 4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.errors import MissingCredential, RuntimeFailure
from runtime.redact import Redactor

if TYPE_CHECKING:
    from runtime.workspace import Workspace

DEFAULT_HOST = "github.com"
KEYRING_USER = "token"


def host_of_api_url(url: str) -> str:
    """The credential host a REST base URL belongs to (api.github.com is github.com).

    ``url`` is GITHUB_API_URL's value: one that cannot be read as a URL (an
    unclosed IPv6 bracket, a port out of range) or that carries a user or
    password is a failure naming it (a host is never ``user:password@host``).
    """
    from runtime.plan.network import setting_url

    try:
        parts = setting_url(url, "GITHUB_API_URL")
    except ValueError as exc:
        raise RuntimeFailure(
            str(exc), hint="fix or unset GITHUB_API_URL", code="invalid-setting"
        ) from None
    netloc = parts.netloc.lower()
    return DEFAULT_HOST if netloc in ("api.github.com", "github.com") else netloc


def gh_environment(token: str, host: str, config_dir: str) -> dict[str, str]:
    """What gh needs: the token for its host, the host itself, and a config of its own.

    GH_TOKEN is what gh sends to github.com, GH_ENTERPRISE_TOKEN to any other host. The
    empty GH_CONFIG_DIR keeps the caller's gh login, aliases and hosts.yml out of the run.
    """
    env = {"GH_TOKEN": token} if host == DEFAULT_HOST else {"GH_ENTERPRISE_TOKEN": token}
    env.update(
        {
            "GH_HOST": host,
            "GH_CONFIG_DIR": config_dir,
            "GH_PROMPT_DISABLED": "1",
            "GH_NO_UPDATE_NOTIFIER": "1",
            "GH_PAGER": "cat",
            "GH_SPINNER_DISABLED": "1",
            "NO_COLOR": "1",
        }
    )
    return env


def keyring_service(host: str) -> str:
    return f"runtime:github:{host}"


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


class AuthEngine:
    def __init__(
        self, workspace: Workspace, redactor: Redactor, keyring_backend: Any = None
    ) -> None:
        self.ws = workspace
        self.redactor = redactor
        self._backend = keyring_backend
        # host -> the refusal of the value last found for it (for fix_hint)
        self._refused: dict[str, InvalidCredential] = {}

    # -- where things are ---------------------------------------------------------
    @property
    def token_env(self) -> str:
        return self.ws.config.github_token_env

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
            raise KeyringUnavailable(
                "no keyring backend is available on this machine (common on headless servers)"
            )
        return self._backend

    # -- resolution ---------------------------------------------------------------
    def lookup(self, name: str, host: str) -> Lookup:
        found = self._lookup(name, host)
        if found.invalid is not None:
            self._refused[host] = found.invalid
        else:
            self._refused.pop(host, None)
        return found

    def _lookup(self, name: str, host: str) -> Lookup:
        if name != "github":
            return Lookup(None, (), f"unknown credential '{name}'")
        env_source = f"environment variable {self.token_env}"
        tried = [env_source]
        raw = self.ws.environ.get(self.token_env)
        if raw is not None and raw.strip():
            try:
                value = clean_token(raw, self.token_env, self.env_hint(), self.redactor)
            except InvalidCredential as exc:
                return Lookup(None, tuple(tried), exc.message, exc)
            return Lookup(Credential(name, host, value, env_source), tuple(tried))
        service = keyring_service(host)
        tried.append(f"keyring ({service})")
        try:
            stored = self.backend().get_password(service, KEYRING_USER)
        except KeyringUnavailable as exc:
            return Lookup(None, tuple(tried), str(exc))
        except Exception as exc:
            return Lookup(None, tuple(tried), f"the keyring failed ({type(exc).__name__})")
        if isinstance(stored, str) and stored.strip():
            try:
                value = clean_token(
                    stored,
                    f"the keyring entry {service} (user {KEYRING_USER})",
                    self.keyring_hint(host),
                    self.redactor,
                )
            except InvalidCredential as exc:
                return Lookup(None, tuple(tried), exc.message, exc)
            return Lookup(Credential(name, host, value, "keyring"), tuple(tried))
        return Lookup(None, tuple(tried))

    def require(self, name: str, host: str) -> Credential:
        found = self.lookup(name, host)
        if found.credential is not None:
            return found.credential
        if found.invalid is not None:
            raise InvalidCredential(found.invalid.message, hint=found.invalid.hint)
        why = f" ({found.problem})" if found.problem else ""
        raise MissingCredential(
            f"no {name} credential for {host}: looked in {', '.join(found.tried)}{why}",
            hint=self.fix_hint(host, found.problem is not None),
        )

    def login_command(self, host: str) -> str:
        return "runtime auth login github" + ("" if host == DEFAULT_HOST else f" --host {host}")

    def env_hint(self) -> str:
        return (
            f"set {self.token_env} to the token alone (surrounding spaces and newlines are "
            "ignored), or unset it"
        )

    def keyring_hint(self, host: str) -> str:
        logout = self.login_command(host).replace(" login ", " logout ", 1)
        return (
            f"store the token again with `{self.login_command(host)}`, or remove it with `{logout}`"
        )

    def fix_hint(self, host: str, keyring_broken: bool = False) -> str:
        """The command that provides ``host``'s credential (or repairs the value found)."""
        refused = self._refused.get(host)
        if refused is not None and refused.hint:
            return refused.hint
        login = self.login_command(host)
        if keyring_broken:
            return f"export {self.token_env}=<token> (no usable keyring here), or fix the keyring and run `{login}`"
        return f"run `{login}` (reads the token from stdin or a hidden prompt), or export {self.token_env}=<token>"

    # -- storing ------------------------------------------------------------------
    def store(self, host: str, token: str) -> None:
        self.backend().set_password(keyring_service(host), KEYRING_USER, token)

    def delete(self, host: str) -> bool:
        backend = self.backend()
        try:
            existing = backend.get_password(keyring_service(host), KEYRING_USER)
            if existing is None:
                return False
            backend.delete_password(keyring_service(host), KEYRING_USER)
            return True
        except Exception as exc:
            if type(exc).__name__ == "PasswordDeleteError":
                return False
            raise KeyringUnavailable(f"the keyring failed ({type(exc).__name__})") from None

    def default_host(self) -> str:
        """The GitHub host of the active context, else config.yaml's github_host, else github.com."""
        from runtime.home.contexts import ContextStore

        active = ContextStore(self.ws.home).active()
        if active is not None and active.get("github_host"):
            return str(active.get("github_host"))
        if self.ws.config.github_host:
            return self.ws.config.github_host
        api = self.ws.environ.get("GITHUB_API_URL")
        return host_of_api_url(api) if api else DEFAULT_HOST

    # -- what a binary receives ----------------------------------------------------
    def binary_environment(self, credential: str, host: str, config_dir: str) -> dict[str, str]:
        """Variables that carry ``credential`` to a mapped binary (gh), with its own config dir."""
        return gh_environment(self.require(credential, host).value, host, config_dir)
