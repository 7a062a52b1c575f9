"""User configuration in Runtime Home (``config.yaml``), under a closed schema."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from runtime.errors import InvalidPolicy
from runtime.home.layout import Home
from runtime.home.registry import Registry
from runtime.provider import SettingKind
from runtime.reading import read_file
from runtime.yamldoc.schema import Hook, Int, List, Map, Msg, Scope, Shape, Text, load
from runtime.yamldoc.yamlnode import Node

CORE_FIELDS: dict[str, Shape] = {
    "capability_sources": List(
        # a string: YAML reads a plain 5 as a number, which is no folder ("<home>/5")
        Text(
            string=True,
            pattern=r"(?s).+",
            means="a folder path",
            bad=Msg(
                "{where} must be a folder path, not '{text}'",
                'remove the empty entry, or name a folder: capability_sources: ["~/capabilities"]',
            ),
        ),
        wrong=Msg(
            "{where} must be a list of folders, not {got}",
            'write capability_sources: ["~/capabilities", "/srv/capabilities"]',
        ),
    ),
    # the audit log rotates past this size (bytes), keeping this many rotated files
    "audit_max_bytes": Int(
        minimum=1024,
        bad=Msg(
            "{where} must be an integer of at least 1024, not '{text}'",
            "the size in bytes past which the audit log rotates; unset, 10485760 (10 MiB)",
        ),
    ),
    "audit_keep": Int(
        minimum=1,
        maximum=100,
        bad=Msg(
            "{where} must be an integer from 1 to 100, not '{text}'",
            "how many rotated audit files are kept; unset, 5",
        ),
    ),
}
VARIABLE_NAME = Text(pattern=r"[A-Z_][A-Z0-9_]*", means="an environment variable name")


@dataclass(frozen=True)
class Rotation:
    """When the log rotates, and how many rotated files are kept (config.yaml's
    ``audit_max_bytes`` and ``audit_keep``)."""

    max_bytes: int = 10 * 1024 * 1024
    keep: int = 5


@dataclass
class Config:
    capability_sources: list[str] = field(default_factory=list)
    audit: Rotation = field(default_factory=Rotation)
    # values of the settings providers declare for config.yaml (github_host, the variable
    # a credential is read from...), by name
    settings: dict[str, str] = field(default_factory=dict)
    source: str = "default"


def _refusal(setting: SettingKind) -> Hook | None:
    """A provider's check of a setting's value, as the schema's hook."""
    refuse = setting.check
    if refuse is None:
        return None

    def hook(node: Node, value: str, scope: Scope) -> None:
        why = refuse(value)  # it names the setting: "github_host must be a host name..."
        if why:
            scope.report(node, "{why}", why=why)

    return hook


def config_schema(registry: Registry) -> Map:
    """config.yaml's closed schema: runtime's own keys and those the providers declare
    (a setting's value is checked by the provider's own check, as a hook)."""
    fields: dict[str, Shape] = dict(CORE_FIELDS)
    for provider in registry.providers.values():
        for kind in provider.credentials:
            if kind.variable_setting:
                fields[kind.variable_setting] = VARIABLE_NAME
        for setting in provider.settings:
            if setting.in_config:
                fields[setting.name] = Text(check=_refusal(setting))
    return Map(fields, unknown=Msg("unknown config key '{key}'", "known keys: {allowed}"))


def load_config(home: Home, registry: Registry) -> Config:
    path = home.config_file
    if not path.exists():
        return Config()
    try:
        text = read_file(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidPolicy(f"cannot read {path}: {exc}", code="invalid-config") from None
    data, problems = load(text, str(path), config_schema(registry), "invalid-config")
    if problems:
        first = problems[0]
        raise InvalidPolicy(
            f"{path}:{first.line}:{first.column}: {first.message}",
            hint=first.hint,
            problems=problems,
            code="invalid-config",
        )
    default = Rotation()
    return Config(
        capability_sources=list(data.get("capability_sources", [])),
        audit=Rotation(
            data.get("audit_max_bytes", default.max_bytes), data.get("audit_keep", default.keep)
        ),
        settings={k: str(v) for k, v in data.items() if k not in CORE_FIELDS},
        source=str(path),
    )


def configured_sources(config: Config, home: Home) -> list[Path]:
    """The folders config.yaml lists, in its order (relative ones are in Home)."""
    out: list[Path] = []
    for entry in config.capability_sources:
        p = Path(os.path.expanduser(entry))
        out.append(p if p.is_absolute() else (home.root / p))
    return out


def capability_sources(
    config: Config, home: Home, project: Path, last: Path | None = None
) -> list[Path]:
    """Ordered folders searched for capabilities by name.

    The folders listed in config.yaml come first, then the project's
    ``capabilities/`` (``project``: the working directory, or the folder above it
    that holds one), then Home's ``capabilities/`` (``last``: the folder that stands in
    for it, RUNTIME_CAPABILITIES_DIR's: :func:`runtime.home.layout.capabilities_path`).
    """
    out = configured_sources(config, home)
    out.append(project / "capabilities")
    out.append(last or home.capabilities_dir)
    unique: list[Path] = []
    for p in out:
        if p not in unique:
            unique.append(p)
    return unique
