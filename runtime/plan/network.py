"""MDA ``requires.network``: which hosts a capability's steps may contact.

``none``: no host at all. ``local``: loopback and private addresses only.
``public``: any host. A list of host globs: only hosts matching one of them.
No ``network`` key means no machine-readable restriction (MDA §10-4). The
rule is reported by preflight and enforced at execution, before every
connection a provider makes (redirect targets included).
"""

from __future__ import annotations

import fnmatch
import ipaddress
import socket
from typing import NamedTuple
from urllib.parse import SplitResult, urlsplit

LOCAL_SUFFIXES = (".local", ".internal", ".lan", ".home.arpa")


def split_url(url: str) -> SplitResult:
    """``urlsplit(url)``, with the port checked too.

    ``urlsplit`` refuses an unclosed IPv6 bracket at once but a port that is
    not a number in 0-65535 only when ``.port`` is read, which code asking for
    the host or the origin later does; both raise :class:`ValueError` here.
    """
    parts = urlsplit(url)
    _ = parts.port
    return parts


def setting_url(url: str, variable: str) -> SplitResult:
    """A URL set in ``variable`` (GITHUB_API_URL...), split; :class:`ValueError`, with a
    message naming the variable, if it cannot be read or carries a user or password
    (a host is never ``user:password@host``, and the token has a store of its own)."""
    try:
        parts = split_url(url)
    except ValueError as exc:
        raise ValueError(f"{variable}={url!r} is not a valid URL ({exc})") from None
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{variable} must not carry credentials in the URL")
    return parts


class NetworkRule(NamedTuple):
    kind: str  # "none" | "local" | "public" | "hosts"
    hosts: tuple[str, ...] = ()

    @staticmethod
    def from_requires(value: object) -> NetworkRule | None:
        if value is None:
            return None
        if isinstance(value, str) and value in ("none", "local", "public"):
            return NetworkRule(value)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return NetworkRule("hosts", tuple(v.lower() for v in value))
        return None  # malformed shapes are validation errors, not rules

    def describe(self) -> str:
        return (
            f"network: [{', '.join(self.hosts)}]"
            if self.kind == "hosts"
            else f"network: {self.kind}"
        )

    def check(self, host: str, *, resolve: bool) -> tuple[bool | None, str]:
        """(allowed, reason). ``None`` when it cannot be told without resolving the name."""
        name = host.lower().rstrip(".")
        if self.kind == "public":
            return True, "network: public allows any host"
        if self.kind == "none":
            return False, f"network: none forbids contacting {name}"
        if self.kind == "hosts":
            for pattern in self.hosts:
                if fnmatch.fnmatchcase(name, pattern):
                    return True, f"{name} matches '{pattern}'"
            return False, f"{name} matches none of {', '.join(self.hosts)}"
        # local: loopback and private addresses. A name counts as local only under a
        # local-only suffix (and, when resolving, only if it resolves to local addresses);
        # any other name is taken as public, so the answer never depends on DNS.
        literal = _is_local_literal(name)
        if literal is not None:
            return literal, f"{name} is {'a local' if literal else 'not a local'} address"
        if not name.endswith(LOCAL_SUFFIXES):
            return (
                False,
                f"{name} is not a local address (only loopback, private and {', '.join(LOCAL_SUFFIXES)} names are)",
            )
        if not resolve:
            return None, f"cannot tell offline whether {name} is local"
        try:
            infos = socket.getaddrinfo(name, None)
        except OSError:
            return False, f"{name} does not resolve"
        addresses = {info[4][0] for info in infos}
        local = all(_is_local_literal(str(a)) for a in addresses)
        return local, f"{name} resolves to {'local' if local else 'non-local'} addresses"


def _is_local_literal(name: str) -> bool | None:
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.strip("[]").split("%")[0])
    except ValueError:
        return None
    return address.is_loopback or address.is_private or address.is_link_local
