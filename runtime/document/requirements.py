"""Requirements: what a capability needs from this machine, declared or inferred.

Declared ones come from the frontmatter's ``metadata.mda.requires`` (MDA
§10). Inferred ones are read off the resolved plan: each provider operation,
each credential an operation needs, each binary, each files path after
substitution, each network host a github step contacts, each required
input. Collecting requirements has no side effect; checking them is
:mod:`runtime.preflight.checks`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.document.model import Capability

STANDARD_KEYS = ("runtime", "tools", "network", "packages", "model", "cost-hints")
TYPED_SOURCE = "metadata.runtime.requirements"


def sanitize_url(url: str) -> str:
    """Scheme, host, port and path: a report never shows URL credentials, query or fragment."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port  # ValueError for a port that is not a number in 0-65535
    except ValueError:
        return "(a URL that cannot be read)"
    if port:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass
class Requirement:
    id: str
    type: str
    target: dict[str, Any]
    origin: str = "declared"  # declared | inferred
    optional: bool = False
    source: str = ""  # where it comes from: "requires.runtime", "step 2", "input organization"
    line: int | None = None
    review_status: str | None = None  # accepted | needsReview (declared typed requirements)
    max_age_seconds: int | None = None  # freshness bound (declared typed requirements)
    step: int | None = None

    @property
    def typed(self) -> bool:
        """Declared in ``metadata.runtime.requirements`` (not read off the steps or MDA keys)."""
        return self.source == TYPED_SOURCE

    def to_json(self) -> dict[str, Any]:
        target = {
            k: (sanitize_url(v) if k in ("serverUrl", "url") and isinstance(v, str) else v)
            for k, v in self.target.items()
        }
        doc: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "target": target,
            "optional": self.optional,
            "origin": self.origin,
            "source": self.source,
        }
        if self.review_status is not None:
            doc["reviewStatus"] = self.review_status
        if self.max_age_seconds is not None:
            doc["freshness"] = {"maxAgeSeconds": self.max_age_seconds}
        return doc


@dataclass
class Requirements:
    items: list[Requirement] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # unknown requires keys, shown never enforced
    cost_hints: dict[str, Any] | None = None

    def add(self, req: Requirement) -> None:
        self.items.append(req)


def declared(cap: Capability) -> Requirements:
    out = Requirements()
    requires = cap.requires
    lines = cap.requires_lines
    for key, value in requires.items():
        line = lines.get(key)
        where = f"requires.{key}"
        if key == "runtime" and isinstance(value, list):
            for entry in value:
                out.add(
                    Requirement(
                        f"runtime:{entry}",
                        "runtime",
                        {"constraint": entry},
                        source=where,
                        line=line,
                    )
                )
        elif key == "tools" and isinstance(value, list):
            for entry in value:
                out.add(
                    Requirement(f"tool:{entry}", "tool", {"name": entry}, source=where, line=line)
                )
        elif key == "packages" and isinstance(value, list):
            for entry in value:
                out.add(
                    Requirement(
                        f"package:{entry}", "package", {"name": entry}, source=where, line=line
                    )
                )
        elif key == "network":
            out.add(Requirement("network", "network", {"rule": value}, source=where, line=line))
        elif key == "model" and isinstance(value, dict):
            out.add(Requirement("model", "model", dict(value), source=where, line=line))
        elif key == "cost-hints" and isinstance(value, dict):
            out.cost_hints = dict(value)
        elif key not in STANDARD_KEYS:
            out.warnings.append(f"requires key '{key}' is not a standard key: shown, not checked")
    return out
