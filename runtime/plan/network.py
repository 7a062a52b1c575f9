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

LOCAL_SUFFIXES = (".local", ".internal", ".lan", ".home.arpa")


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
            if _is_local_literal(name):  # loopback is local, whichever rule allows it
                return True, f"{name} is a local address; network: public allows any host"
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


def scope(host: str) -> str:
    """What ``host`` counts as, offline: ``local`` (loopback, private, link-local
    addresses and localhost), ``public``, or ``local name`` (under a local-only suffix,
    local if it resolves to local addresses)."""
    name = host.lower().rstrip(".")
    literal = _is_local_literal(name)
    if literal is not None:
        return "local" if literal else "public"
    return "local name" if name.endswith(LOCAL_SUFFIXES) else "public"


def _is_local_literal(name: str) -> bool | None:
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.strip("[]").split("%")[0])
    except ValueError:
        return None
    return address.is_loopback or address.is_private or address.is_link_local
