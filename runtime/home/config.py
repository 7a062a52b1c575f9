"""User configuration in Runtime Home (``config.yaml``), under a closed schema."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from runtime.errors import InvalidPolicy
from runtime.home.layout import Home

CONFIG_SCHEMA = {
    "capability_sources": ("list", "str"),
    "github_token_env": ("regex", r"[A-Z_][A-Z0-9_]*", "an environment variable name"),
    "github_host": ("regex", r"[A-Za-z0-9.\-]+(:[0-9]+)?", "a host name, optionally with :port"),
}
CONFIG_KEYS = tuple(CONFIG_SCHEMA)


@dataclass
class Config:
    capability_sources: list[str] = field(default_factory=list)
    github_token_env: str = "RUNTIME_GITHUB_TOKEN"
    github_host: str | None = None  # default GitHub host when no context names one
    source: str = "default"


def load_config(home: Home) -> Config:
    path = home.config_file
    if not path.exists():
        return Config()
    from runtime.document.yamlschema import load

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidPolicy(f"cannot read {path}: {exc}", code="invalid-config") from None
    data, problems = load(text, str(path), CONFIG_SCHEMA, "config")
    if problems:
        first = problems[0]
        raise InvalidPolicy(
            f"{path}:{first.line}:{first.column}: {first.message}",
            hint=first.hint,
            problems=problems,
            code="invalid-config",
        )
    return Config(
        capability_sources=list(data.get("capability_sources", [])),
        github_token_env=data.get("github_token_env", "RUNTIME_GITHUB_TOKEN"),
        github_host=data.get("github_host"),
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
