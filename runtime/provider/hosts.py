"""A host setting (``github_host``): ``name[:port]``, nothing else, checked as the
engine checks ``auth login --host``."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

HOST_FORM = "a host name with an optional port (ghe.example.com or ghe.example.com:8443)"
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_PORT = re.compile(r"[1-9][0-9]{0,4}")


def host_problem(value: str) -> str | None:
    """Why ``value`` is not ``name[:port]``, or ``None``.

    ``name`` is a DNS name (letters, digits and '-' in dot-separated labels of
    at most 63 characters, 253 in all), an IPv4 address, or an IPv6 address in
    brackets; ``port`` is 1-65535. Nothing else: no scheme, user, path, query,
    zone or whitespace.
    """
    if value.startswith("["):
        inside, closed, rest = value[1:].partition("]")
        if not closed:
            return "the IPv6 bracket is not closed"
        if "%" in inside:
            return "a zone (%...) is not part of a host"
        try:
            ipaddress.IPv6Address(inside)
        except ValueError:
            return f"'{inside}' is not an IPv6 address"
        port = rest[1:] if rest.startswith(":") else None
        if rest and port is None:
            return "only ':PORT' may follow the IPv6 address"
    else:
        if "://" in value:
            return "it is a URL; give only its host"
        for char, what in (("@", "a user"), ("/", "a path"), ("?", "a query"), ("#", "a fragment")):
            if char in value:
                return f"it carries {what} ('{char}')"
        name, colon, port_text = value.partition(":")
        port = port_text if colon else None
        if port is not None and ":" in port:
            return "an IPv6 address must be written in brackets ([2001:db8::1]:8443)"
        if not name:
            return "the host name is empty"
        labels = name.split(".")
        if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
            return "a host name is letters, digits and '-' in labels separated by '.'"
        if labels[-1].isdigit():
            try:
                ipaddress.IPv4Address(name)
            except ValueError:
                return f"'{name}' is not an IPv4 address"
    if port is not None and not (_PORT.fullmatch(port) and int(port) <= 65535):
        return "the port must be a number from 1 to 65535"
    return None


def host_error(key: str, value: str) -> str | None:
    """The refusal of a host ``value`` for ``key``, or ``None`` when it is ``name[:port]``."""
    problem = host_problem(value)
    if problem is None:
        return None
    return f"{key} must be {HOST_FORM}, not {value!r} ({problem})"


def host_setting(key: str) -> Callable[[str], str | None]:
    """A :attr:`SettingKind.check` for a host setting: ``name[:port]``, nothing else."""

    def check(value: str) -> str | None:
        return host_error(key, value)

    return check
