"""Where GitHub is: host, REST base URL and GraphQL URL for a step.

github.com by default; a GitHub Enterprise Server host name from the active
context (``https://HOST/api/v3`` and ``https://HOST/api/graphql``). The
variables GitHub Actions sets, ``GITHUB_API_URL`` and ``GITHUB_GRAPHQL_URL``,
override the URLs when present, each only for the host it serves (the GraphQL
URL only on the REST API's host). Plain ``http://`` is accepted only for
loopback addresses.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import SplitResult, urlsplit

from runtime.provider import StepError

DEFAULT_HOST = "github.com"


# -- URLs set by users --------------------------------------------------------------------


def split_url(url: str) -> SplitResult:
    """``urlsplit(url)``, with the port checked too (:class:`ValueError` when unreadable).

    ``urlsplit`` refuses an unclosed IPv6 bracket at once but a port that is
    not a number in 0-65535 only when ``.port`` is read, which code asking for
    the host or the origin later does.
    """
    parts = urlsplit(url)
    _ = parts.port
    return parts


def setting_url(url: str, variable: str) -> SplitResult:
    """A URL set in ``variable`` (GITHUB_API_URL...), split; :class:`ValueError`, with a
    message naming the variable, if it cannot be read or carries a user or password
    (a host is never ``user:password@host``, and a token has a store of its own)."""
    try:
        parts = split_url(url)
    except ValueError as exc:
        raise ValueError(f"{variable}={url!r} is not a valid URL ({exc})") from None
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{variable} must not carry credentials in the URL")
    return parts


def host_of_api_url(url: str) -> str:
    """The credential host a REST base URL belongs to (api.github.com is github.com).

    ``url`` is GITHUB_API_URL's value: one that cannot be read as a URL (an
    unclosed IPv6 bracket, a port out of range) or that carries a user or
    password is a :class:`ValueError` naming it (a host is never ``user:pw@host``).
    """
    netloc = setting_url(url, "GITHUB_API_URL").netloc.lower()
    return DEFAULT_HOST if netloc in ("api.github.com", "github.com") else str(netloc)


def host_from_environ(environ: Mapping[str, str]) -> str | None:
    """The host GITHUB_API_URL points at, when it is set."""
    api = environ.get("GITHUB_API_URL")
    return host_of_api_url(api) if api else None


def gh_environment(token: str, host: str, config_dir: str) -> dict[str, str]:
    """What gh needs: the token for its host, the host itself, and a config of its own.

    GH_TOKEN is what gh sends to github.com, GH_ENTERPRISE_TOKEN to any other host (each
    set only for its kind of host). The empty GH_CONFIG_DIR keeps the caller's gh login,
    aliases, extensions and hosts.yml out of the run.
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


def rejected_hint(default_host: str, host: str, what: str = "the github credential") -> str:
    """What to do when ``host`` refused the token a step gave it (a 401)."""
    login = "runtime auth login github" + ("" if host == default_host else f" --host {host}")
    return (
        f"{host} refused {what}: check it with `runtime auth status --live`, or store a "
        f"new one with `{login}`"
    )


@dataclass(frozen=True)
class Endpoints:
    host: str  # the credential's host name (github.com, ghe.example.com, 127.0.0.1:8443)
    api: str  # REST base URL without a trailing slash
    graphql: str
    host_source: str  # where the host came from, for plan output
    # the variables set that were ignored, each with why: warnings a person reads on
    # stderr (a GITHUB_API_URL of another host than the context's)
    ignored: tuple[str, ...] = ()

    @property
    def api_host(self) -> str:
        return urlsplit(self.api).hostname or self.host

    @property
    def network_hosts(self) -> list[str]:
        return list(self._network_hosts)

    @cached_property
    def _network_hosts(self) -> tuple[str, ...]:
        # once per run: every step's plan asks (the endpoints are shared by the run)
        hosts: list[str] = []
        for url in (self.api, self.graphql):
            name = urlsplit(url).hostname
            if name and name not in hosts:
                hosts.append(name)
        return tuple(hosts)


def is_loopback(hostname: str | None) -> bool:
    if not hostname:
        return False
    if hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False


def _parse(url: str, variable: str) -> SplitResult:
    """``url`` split; refused if it cannot be read or carries credentials."""
    try:
        parts: SplitResult = setting_url(url, variable)
    except ValueError as exc:
        raise StepError(str(exc), hint=f"fix or unset {variable}") from None
    return parts


def _check_url(url: str, variable: str) -> str:
    parts = _parse(url, variable)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise StepError(
            f"{variable}={url!r} is not an http(s) URL", hint=f"fix or unset {variable}"
        )
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise StepError(
            f"{variable} uses plain http:// for {parts.hostname}; only loopback addresses may use http",
            hint="use https://",
        )
    return url.rstrip("/")


def resolve(
    environ: Mapping[str, str],
    context_host: str | None,
    context_name: str | None,
    source_label: str | None = None,
) -> Endpoints:
    api_env = environ.get("GITHUB_API_URL")
    graphql_env = environ.get("GITHUB_GRAPHQL_URL")
    if api_env:  # refused before anything reads its host (a host is never user:pw@host)
        _parse(api_env, "GITHUB_API_URL")
    ignored: list[str] = []
    if context_host:
        host = context_host
        source = source_label or f"context '{context_name}'"
        if api_env and (other := host_of_api_url(api_env)) != host:
            # GITHUB_API_URL describes another host: never send this host's token there
            api_env = graphql_env = None
            source += "; GITHUB_API_URL ignored (another host)"
            ignored.append(
                f"GITHUB_API_URL is ignored: it points at {other}, but {source.split(';')[0]} "
                f"sets github_host {host}, so the github steps talk to {host} (unset "
                "GITHUB_API_URL, or use a context without github_host, to talk to "
                f"{other})"
            )
    elif api_env:
        host = host_of_api_url(api_env)
        source = "GITHUB_API_URL"
    else:
        host, source = DEFAULT_HOST, "default"
    if host == DEFAULT_HOST:
        api, graphql = "https://api.github.com", "https://api.github.com/graphql"
    else:
        api, graphql = f"https://{host}/api/v3", f"https://{host}/api/graphql"
    if api_env:
        api = _check_url(api_env, "GITHUB_API_URL")
        graphql = (
            api[: -len("/api/v3")] + "/api/graphql" if api.endswith("/api/v3") else api + "/graphql"
        )
    if graphql_env:
        named = _check_url(graphql_env, "GITHUB_GRAPHQL_URL")
        if urlsplit(named).netloc.lower() == urlsplit(api).netloc.lower():
            graphql = named
        else:
            # another host than the REST API's: never send this host's token there
            source += "; GITHUB_GRAPHQL_URL ignored (another host)"
            ignored.append(
                f"GITHUB_GRAPHQL_URL is ignored: it points at {urlsplit(named).netloc}, "
                f"another host than the REST API's ({urlsplit(api).netloc}), so GraphQL "
                f"goes to {graphql}"
            )
    return Endpoints(host, api, graphql, source, tuple(ignored))
