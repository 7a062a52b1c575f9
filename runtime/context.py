"""Runtime Context: named sets of defaults (GitHub host, organization) kept in Home."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from runtime.errors import UsageError
from runtime.home import Home

CONTEXT_KEYS = ("github_host", "organization")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass
class Context:
    name: str
    values: dict[str, str] = field(default_factory=dict)

    def get(self, key: str) -> str | None:
        return self.values.get(key)


class ContextStore:
    """``contexts.json`` in Home: {"active": name, "contexts": {name: {key: value}}}."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.path = home.contexts_file

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"active": None, "contexts": {}}
        except (OSError, ValueError) as exc:
            raise UsageError(
                f"cannot read {self.path}: {exc}", hint="fix or remove the file"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("contexts"), dict):
            raise UsageError(f"{self.path} is not a contexts file", hint="fix or remove the file")
        return data

    def _save(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".contexts.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)

    def names(self) -> list[str]:
        return sorted(self._load()["contexts"])

    def active_name(self) -> str | None:
        name = self._load().get("active")
        return name if isinstance(name, str) else None

    def get(self, name: str) -> Context:
        data = self._load()
        if name not in data["contexts"]:
            known = ", ".join(sorted(data["contexts"])) or "(none)"
            raise UsageError(
                f"no context named '{name}'",
                hint=f"contexts: {known}; create one with `runtime context set`",
            )
        return Context(name, dict(data["contexts"][name]))

    def active(self) -> Context | None:
        data = self._load()
        name = data.get("active")
        if isinstance(name, str) and name in data["contexts"]:
            return Context(name, dict(data["contexts"][name]))
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
        if not NAME.match(target):
            raise UsageError(
                f"'{target}' is not a valid context name", hint="letters, digits, '.', '_' and '-'"
            )
        for key in pairs:
            if key not in CONTEXT_KEYS:
                raise UsageError(
                    f"unknown context key '{key}'", hint="known keys: " + ", ".join(CONTEXT_KEYS)
                )
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
