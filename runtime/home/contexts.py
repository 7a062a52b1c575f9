"""Runtime Context: named sets of defaults kept in Home (the keys are the settings the
providers declare: a host, an organization...).

``contexts.json`` is the user's file: ``runtime context set`` writes it, and it
may be edited by hand. So everything read from it is checked: a file that is
not JSON, or not of the expected shape, is a usage error (exit 2) naming the
file, the place (line and column for JSON syntax) and how to repair it; a
value of the wrong form (a host setting that is a URL) is refused when the
context is used, naming the file, while ``runtime context set`` can still
rewrite it.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.errors import UsageError
from runtime.home.layout import Home, atomic_write, locked
from runtime.provider import SettingKind
from runtime.provider.run import Setting
from runtime.reading import position, read_file
from runtime.text import not_utf8

if TYPE_CHECKING:
    from runtime.yamldoc.schema import Map

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # fullmatch: '$' would allow a newline


def check_name(name: str) -> str:
    """``name``, or a usage error: an empty name is no way to say "the active one"."""
    if not NAME.fullmatch(name):
        raise UsageError(
            f"{name!r} is not a valid context name",
            hint="letters, digits, '.', '_' and '-', starting with a letter or digit (at most 64)",
        )
    return name


def _declared(settings: Mapping[str, SettingKind] | None) -> Mapping[str, SettingKind]:
    """The keys a context may hold: the settings the registered providers declare."""
    if settings is not None:
        return settings
    from runtime.home.registry import load_registry

    return {s.name: s for p in load_registry().providers.values() for s in p.settings}


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

    def __init__(self, home: Home, settings: Mapping[str, SettingKind] | None = None) -> None:
        self.settings = _declared(settings)
        self.home = home
        self.path = home.contexts_file

    # -- reading --------------------------------------------------------------------------
    def _refusal(self, key: str, value: str) -> str | None:
        check = self.settings[key].check if key in self.settings else None
        return check(value) if value and check is not None else None

    def _repair_hint(self) -> str:
        return (
            f"fix {self.path} by hand (JSON: "
            '{"active": NAME, "contexts": {NAME: {KEY: VALUE}}}), '
            f"or move it away (mv {self.path} {self.path}.broken) and create your contexts "
            "again with `runtime context set NAME key=value`"
        )

    def _malformed(self, where: str, problem: str) -> ContextsFileError:
        return ContextsFileError(f"{where}: {problem}", hint=self._repair_hint())

    def _load(self) -> dict[str, Any]:
        try:
            raw = read_file(self.path)
        except FileNotFoundError:
            return {"active": None, "contexts": {}}
        except OSError as exc:
            raise ContextsFileError(
                f"cannot read {self.path}: {exc.strerror or exc}", hint=self._repair_hint()
            ) from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line, column = position(raw, exc.start)
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
        from runtime.yamldoc.schema import check, describe_json, json_tree

        _, problems = check(
            json_tree(data),
            contexts_schema(self.settings),
            file=str(self.path),
            code=ContextsFileError.code,
            describe=describe_json,
        )
        if problems:  # the first: the file is repaired, or moved away, as a whole
            raise self._malformed(str(self.path), problems[0].message)

    def _context(self, name: str, entry: dict[str, str], check: bool) -> Context:
        """The context, its values checked when it is about to be used."""
        if check:
            for key, value in entry.items():
                refusal = self._refusal(key, value)
                if refusal is not None:
                    raise ContextsFileError(
                        f"{self.path}: context '{name}': {refusal}",
                        hint=f"set it with `runtime context set {name} {key}=HOST` "
                        f"(`{key}=` removes it), or edit {self.path}",
                    )
        return Context(name, dict(entry))

    @contextlib.contextmanager
    def _changing(self) -> Iterator[dict[str, Any]]:
        """The file's data to change, written back when the block ends without an error.

        Read, change and write are one step under Home's lock: two ``context`` commands
        at once take turns, so neither writes over what the other just added. A Home
        that cannot be written (a read-only file system, no permission) is a usage error
        naming the file, and the file is left as it was."""
        try:
            with locked(self.home.root):
                data = self._load()
                yield data
                atomic_write(
                    self.path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
                )
        except OSError as exc:
            raise UsageError(
                f"cannot write {self.path}: {exc.strerror or exc}; no context was changed",
                hint=f"make Runtime Home ({self.home.root}) writable, or set RUNTIME_HOME "
                "to a writable folder",
            ) from None

    # -- the store's operations -----------------------------------------------------------
    def names(self) -> list[str]:
        return sorted(self._load()["contexts"])

    def active_name(self) -> str | None:
        name = self._load().get("active")
        return name if isinstance(name, str) else None

    def _known(self, data: dict[str, Any], name: str) -> dict[str, str]:
        """The entry of the context ``name``, or a usage error: an invalid name, or one
        that is not there (naming those that are). A name already in the file passes as
        it is, so that a hand-edited one can still be shown, used and deleted."""
        if name not in data["contexts"]:
            check_name(name)
            known = ", ".join(sorted(data["contexts"])) or "(none)"
            raise UsageError(
                f"no context named '{name}'",
                hint=f"contexts: {known}; create one with `runtime context set`",
            )
        return data["contexts"][name]  # type: ignore[no-any-return]

    def get(self, name: str, *, check: bool = True) -> Context:
        """A context by name; ``check=False`` only to show it (its values unchecked)."""
        return self._context(name, self._known(self._load(), name), check)

    def active(self, *, check: bool = True) -> Context | None:
        data = self._load()
        name = data.get("active")
        if isinstance(name, str) and name in data["contexts"]:
            return self._context(name, data["contexts"][name], check)
        return None

    def effective(self, configured: Mapping[str, str], *, check: bool = True) -> dict[str, Setting]:
        """What providers read, by key: the active context's value, else config.yaml's
        (``configured``); ``check=False`` only to show them."""
        active = self.active(check=check)
        out: dict[str, Setting] = {}
        for key in self.settings:
            if active is not None and active.get(key):
                out[key] = Setting(str(active.get(key)), f"context '{active.name}'", active.name)
            elif configured.get(key):
                out[key] = Setting(configured[key], "config.yaml")
        return out

    def use(self, name: str | None) -> None:
        """Make ``name`` the active context; ``None`` turns the active one off."""
        with self._changing() as data:
            if name is not None:
                self._known(data, name)
            data["active"] = name

    def delete(self, name: str) -> bool:
        """Delete the context ``name``; True when it was the active one (now none is)."""
        with self._changing() as data:
            self._known(data, name)
            del data["contexts"][name]
            was_active = data.get("active") == name
            if was_active:
                data["active"] = None
        return was_active

    def set(self, name: str | None, pairs: dict[str, str]) -> Context:
        """Set values of the context ``name``, else of the active one; the first context
        made becomes the active one. With contexts but none active (turned off), a name
        is needed: which one to change is not guessed."""
        with self._changing() as data:
            if name is not None:
                target = check_name(name)
            elif isinstance(data.get("active"), str):
                target = data["active"]
            elif not data["contexts"]:
                target = "default"
            else:
                raise UsageError(
                    "no active context to set values in",
                    hint="name the context: `runtime context set NAME key=value` "
                    f"(contexts: {', '.join(sorted(data['contexts']))})",
                )
            first = not data["contexts"]
            for key, value in pairs.items():
                if key not in self.settings:
                    raise UsageError(
                        f"unknown context key '{key}'",
                        hint="known keys: " + ", ".join(self.settings),
                    )
                where = not_utf8(value)
                if where is not None:  # stored, it would be no text a JSON reader takes
                    raise UsageError(
                        f"the value of '{key}' is not UTF-8 text ({where})",
                        hint="a context holds text: convert the value (iconv -t UTF-8)",
                    )
                refusal = self._refusal(key, value)
                if refusal is not None:
                    raise UsageError(refusal, hint=f"for example {key}=ghe.example.com")
            entry = data["contexts"].setdefault(target, {})
            for key, value in pairs.items():
                if value == "":
                    entry.pop(key, None)
                else:
                    entry[key] = value
            if first:
                data["active"] = target
        return Context(target, dict(entry))


def contexts_schema(settings: Mapping[str, SettingKind]) -> Map:
    """The shape of contexts.json, as a schema of :mod:`runtime.yamldoc.schema` checked
    on the parsed JSON (which has no positions: a problem names the file)."""
    from runtime.yamldoc.schema import Anything, Map, Msg, Text

    value = Text(quoted=True, wrong='context "{context.key}": "{key}" must be a string, not {got}')
    return Map(
        {
            "active": Text(
                quoted=True, empty="plain", wrong='"active" must be a context name, not {got}'
            ),
            "contexts": Map(
                extra=Map(
                    dict.fromkeys(settings, value),
                    name="context",
                    label="{key}",
                    unknown=Msg('context "{where}" has an unknown key "{key}" (known: {allowed})'),
                    wrong='context "{key}" must be an object of keys, not {got}',
                ),
                wrong='"contexts" must be an object, not {got}',
            ),
        },
        extra=Anything(),
        wrong="expected a JSON object, found {got}",
    )
