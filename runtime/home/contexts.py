"""Runtime Context: named sets of defaults (GitHub host, organization) kept in Home.

``contexts.json`` is the user's file: ``runtime context set`` writes it, and it
may be edited by hand. So everything read from it is checked: a file that is
not JSON, or not of the expected shape, is a usage error (exit 2) naming the
file, the place (line and column for JSON syntax) and how to repair it; a
value of the wrong form (a ``github_host`` that is a URL) is refused when the
context is used, naming the file, while ``runtime context set`` can still
rewrite it.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass, field
from typing import Any

from runtime.errors import UsageError
from runtime.home.layout import Home, atomic_write

CONTEXT_KEYS = ("github_host", "organization")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # fullmatch: '$' would allow a newline

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


# A checker per key: the refusal of a value, or None. Only hosts have a form to check.
_CHECKS = {"github_host": host_error}


@dataclass
class Context:
    name: str
    values: dict[str, str] = field(default_factory=dict)

    def get(self, key: str) -> str | None:
        return self.values.get(key)


class ContextsFileError(UsageError):
    code = "invalid-contexts"


class ContextStore:
    """``contexts.json`` in Home: {"active": name, "contexts": {name: {key: value}}}."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.path = home.contexts_file

    # -- reading --------------------------------------------------------------------------
    def _repair_hint(self) -> str:
        return (
            f"fix {self.path} by hand (JSON: "
            '{"active": NAME, "contexts": {NAME: {"github_host": HOST, "organization": ORG}}}), '
            f"or move it away (mv {self.path} {self.path}.broken) and create your contexts "
            "again with `runtime context set NAME key=value`"
        )

    def _malformed(self, where: str, problem: str) -> ContextsFileError:
        return ContextsFileError(f"{where}: {problem}", hint=self._repair_hint())

    def _load(self) -> dict[str, Any]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {"active": None, "contexts": {}}
        except OSError as exc:
            raise ContextsFileError(
                f"cannot read {self.path}: {exc.strerror or exc}", hint=self._repair_hint()
            ) from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
            raise self._malformed(f"{self.path}:{line}:{column}", "not UTF-8 text") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self._malformed(
                f"{self.path}:{exc.lineno}:{exc.colno}", f"not valid JSON: {exc.msg}"
            ) from None
        except ValueError as exc:  # e.g. a number too large to convert
            raise self._malformed(str(self.path), f"not valid JSON: {exc}") from None
        self._check_shape(data)
        data.setdefault("contexts", {})
        return data  # type: ignore[no-any-return]

    def _check_shape(self, data: object) -> None:
        where = str(self.path)
        if not isinstance(data, dict):
            raise self._malformed(where, f"expected a JSON object, found {_kind(data)}")
        active = data.get("active")
        if active is not None and not isinstance(active, str):
            raise self._malformed(where, f'"active" must be a context name, not {_kind(active)}')
        contexts = data.get("contexts", {})
        if not isinstance(contexts, dict):
            raise self._malformed(where, f'"contexts" must be an object, not {_kind(contexts)}')
        for name, entry in contexts.items():
            if not isinstance(entry, dict):
                raise self._malformed(
                    where, f'context "{name}" must be an object of keys, not {_kind(entry)}'
                )
            for key, value in entry.items():
                if key not in CONTEXT_KEYS:
                    raise self._malformed(
                        where,
                        f'context "{name}" has an unknown key "{key}" '
                        f"(known: {', '.join(CONTEXT_KEYS)})",
                    )
                if not isinstance(value, str):
                    raise self._malformed(
                        where, f'context "{name}": "{key}" must be a string, not {_kind(value)}'
                    )

    def _context(self, name: str, entry: dict[str, str], check: bool) -> Context:
        """The context, its values checked when it is about to be used."""
        if check:
            for key, value in entry.items():
                refusal = _CHECKS[key](key, value) if value and key in _CHECKS else None
                if refusal is not None:
                    raise ContextsFileError(
                        f"{self.path}: context '{name}': {refusal}",
                        hint=f"set it with `runtime context set {name} {key}=HOST` "
                        f"(`{key}=` removes it), or edit {self.path}",
                    )
        return Context(name, dict(entry))

    def _save(self, data: dict[str, Any]) -> None:
        atomic_write(self.path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())

    # -- the store's operations -----------------------------------------------------------
    def names(self) -> list[str]:
        return sorted(self._load()["contexts"])

    def active_name(self) -> str | None:
        name = self._load().get("active")
        return name if isinstance(name, str) else None

    def get(self, name: str, *, check: bool = True) -> Context:
        """A context by name; ``check=False`` only to show it (its values unchecked)."""
        data = self._load()
        if name not in data["contexts"]:
            known = ", ".join(sorted(data["contexts"])) or "(none)"
            raise UsageError(
                f"no context named '{name}'",
                hint=f"contexts: {known}; create one with `runtime context set`",
            )
        return self._context(name, data["contexts"][name], check)

    def active(self) -> Context | None:
        data = self._load()
        name = data.get("active")
        if isinstance(name, str) and name in data["contexts"]:
            return self._context(name, data["contexts"][name], True)
        return None

    def use(self, name: str) -> None:
        data = self._load()
        if name not in data["contexts"]:
            self.get(name)  # raises with the known names
        data["active"] = name
        self._save(data)

    def set(self, name: str | None, pairs: dict[str, str]) -> Context:
        data = self._load()
        target = name or data.get("active") or "default"
        if not NAME.fullmatch(target):
            raise UsageError(
                f"'{target}' is not a valid context name", hint="letters, digits, '.', '_' and '-'"
            )
        for key, value in pairs.items():
            if key not in CONTEXT_KEYS:
                raise UsageError(
                    f"unknown context key '{key}'", hint="known keys: " + ", ".join(CONTEXT_KEYS)
                )
            refusal = _CHECKS[key](key, value) if value and key in _CHECKS else None
            if refusal is not None:
                raise UsageError(refusal, hint=f"for example {key}=ghe.example.com")
        entry = data["contexts"].setdefault(target, {})
        for key, value in pairs.items():
            if value == "":
                entry.pop(key, None)
            else:
                entry[key] = value
        if data.get("active") is None:
            data["active"] = target
        self._save(data)
        return Context(target, dict(entry))


def _kind(value: object) -> str:
    """A JSON value's kind, for messages: ``a string``, ``an array``, ``5``."""
    if value is None:
        return "null"
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
