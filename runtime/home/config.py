"""User configuration in Runtime Home (``config.yaml``), under a closed schema."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.errors import InvalidPolicy
from runtime.home.layout import Home
from runtime.home.registry import Registry

CORE_SCHEMA = {"capability_sources": ("list", "str")}
VARIABLE_NAME = ("regex", r"[A-Z_][A-Z0-9_]*", "an environment variable name")


@dataclass
class Config:
    capability_sources: list[str] = field(default_factory=list)
    # values of the settings providers declare for config.yaml (github_host, the variable
    # a credential is read from...), by name
    settings: dict[str, str] = field(default_factory=dict)
    source: str = "default"


def config_schema(registry: Registry) -> tuple[dict[str, Any], dict[str, Any]]:
    """config.yaml's closed schema: runtime's own keys and those the providers declare; and
    the check of each declared setting."""
    schema: dict[str, Any] = dict(CORE_SCHEMA)
    checks: dict[str, Any] = {}
    for provider in registry.providers.values():
        for kind in provider.credentials:
            if kind.variable_setting:
                schema[kind.variable_setting] = VARIABLE_NAME
        for setting in provider.settings:
            if setting.in_config:
                schema[setting.name] = "str"
                checks[setting.name] = setting.check
    return schema, checks


def load_config(home: Home, registry: Registry) -> Config:
    path = home.config_file
    if not path.exists():
        return Config()
    from runtime.document.yamlschema import load

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidPolicy(f"cannot read {path}: {exc}", code="invalid-config") from None
    schema, checks = config_schema(registry)
    data, problems = load(text, str(path), schema, "config")
    if problems:
        first = problems[0]
        raise InvalidPolicy(
            f"{path}:{first.line}:{first.column}: {first.message}",
            hint=first.hint,
            problems=problems,
            code="invalid-config",
        )
    settings = {k: str(v) for k, v in data.items() if k != "capability_sources"}
    for key, value in settings.items():
        check = checks.get(key)
        why = check(value) if check is not None else None
        if why:
            raise InvalidPolicy(f"{path}: {key}: {why}", code="invalid-config")
    return Config(
        capability_sources=list(data.get("capability_sources", [])),
        settings=settings,
        source=str(path),
    )


def capability_sources(config: Config, home: Home, cwd: Path) -> list[Path]:
    """Ordered folders searched for capabilities by name.

    The folders listed in config.yaml come first, then ``./capabilities``
    in the working directory, then Home's ``capabilities/``.
    """
    out: list[Path] = []
    for entry in config.capability_sources:
        p = Path(os.path.expanduser(entry))
        out.append(p if p.is_absolute() else (home.root / p))
    out.append(cwd / "capabilities")
    out.append(home.capabilities_dir)
    unique: list[Path] = []
    for p in out:
        if p not in unique:
            unique.append(p)
    return unique
