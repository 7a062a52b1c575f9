"""The Auth Engine: where credentials come from, and who receives them.

Resolution order for the github credential of a host: the environment
variable (``RUNTIME_GITHUB_TOKEN`` unless config.yaml names another), then
the OS keyring (service ``runtime:github:HOST``, user ``token``). A token is
never taken from an argument and never written anywhere but the keyring.
Every resolved value is registered with the run's redactor at once.
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
    from runtime.network import setting_url

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


class KeyringUnavailable(Exception):
    pass


class AuthEngine:
    def __init__(
        self, workspace: Workspace, redactor: Redactor, keyring_backend: Any = None
    ) -> None:
        self.ws = workspace
        self.redactor = redactor
        self._backend = keyring_backend

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
        if name != "github":
            return Lookup(None, (), f"unknown credential '{name}'")
        tried = [f"environment variable {self.token_env}"]
        value = self.ws.environ.get(self.token_env)
        if value:
            self.redactor.add(value)
            return Lookup(
                Credential(name, host, value, f"environment variable {self.token_env}"),
                tuple(tried),
            )
        tried.append(f"keyring ({keyring_service(host)})")
        try:
            stored = self.backend().get_password(keyring_service(host), KEYRING_USER)
        except KeyringUnavailable as exc:
            return Lookup(None, tuple(tried), str(exc))
        except Exception as exc:
            return Lookup(None, tuple(tried), f"the keyring failed ({type(exc).__name__})")
        if stored:
            self.redactor.add(stored)
            return Lookup(Credential(name, host, stored, "keyring"), tuple(tried))
        return Lookup(None, tuple(tried))

    def require(self, name: str, host: str) -> Credential:
        found = self.lookup(name, host)
        if found.credential is not None:
            return found.credential
        why = f" ({found.problem})" if found.problem else ""
        raise MissingCredential(
            f"no {name} credential for {host}: looked in {', '.join(found.tried)}{why}",
            hint=self.fix_hint(host, found.problem is not None),
        )

    def fix_hint(self, host: str, keyring_broken: bool = False) -> str:
        login = "runtime auth login github" + ("" if host == DEFAULT_HOST else f" --host {host}")
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
        from runtime.context import ContextStore

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
