"""User configuration in Runtime Home (``config.yaml``), under a closed schema."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from runtime.errors import InvalidPolicy
from runtime.home import Home
from runtime.problems import Problem

CONFIG_KEYS = ("capability_sources", "github_token_env", "github_host")


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
    import strictyaml
    from strictyaml import Map, Optional, Regex, Seq, Str
    from strictyaml.ruamel.error import MarkedYAMLError

    schema = Map(
        {
            Optional("capability_sources"): Seq(Str()),
            Optional("github_token_env"): Regex(r"[A-Z_][A-Z0-9_]*"),
            Optional("github_host"): Regex(r"[A-Za-z0-9.\-]+(:[0-9]+)?"),
        }
    )
    try:
        doc = strictyaml.dirty_load(
            path.read_text(encoding="utf-8"), schema, label=str(path), allow_flow_style=True
        )
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        message = str(exc.problem or exc.context).strip()
        found = re.search(r"unexpected key not in schema '([^']*)'", message)
        hint = None
        if found:
            message = f"unknown config key '{found.group(1)}'"
            hint = "known keys: " + ", ".join(CONFIG_KEYS)
        raise InvalidPolicy(
            f"{path}:{line}:{col}: {message}",
            hint=hint,
            problems=[Problem(str(path), line, col, "error", "invalid-config", message, hint)],
            code="invalid-config",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidPolicy(f"cannot read {path}: {exc}", code="invalid-config") from None
    data = doc.data if doc is not None else {}
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
