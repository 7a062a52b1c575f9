"""Requirements: what a capability needs from this machine, declared or inferred.

Declared ones come from the frontmatter's ``metadata.mda.requires`` (MDA
§10). Inferred ones are read off the resolved plan: each provider operation,
each credential an operation needs, each binary, each files path after
substitution, each network host a github step contacts, each required
input. Collecting requirements has no side effect; checking them is
:mod:`runtime.preflight`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from runtime.model import Capability
from runtime.plan import Plan

STANDARD_KEYS = ("runtime", "tools", "network", "packages", "model", "cost-hints")
TYPED_SOURCE = "metadata.runtime.requirements"


def _sanitize(url: str) -> str:
    """Scheme, host, port and path: a report never shows URL credentials, query or fragment."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
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
            k: (_sanitize(v) if k in ("serverUrl", "url") and isinstance(v, str) else v)
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


def inferred(plan: Plan) -> Requirements:
    """Requirements read off the resolved plan (after substitution)."""
    out = Requirements()
    cap = plan.capability
    seen: dict[str, Requirement] = {}

    def join_scopes(first: Requirement, needed: Iterable[str]) -> None:
        # one credential per host: the union of the scopes its steps need
        scopes = first.target.setdefault("scopes", [])
        scopes.extend(scope for scope in needed if scope not in scopes)

    def add(req: Requirement) -> None:
        first = seen.get(req.id)
        if first is not None:
            if req.type == "credential":
                join_scopes(first, req.target.get("scopes", []))
            return
        seen[req.id] = req
        req.origin = "inferred"
        out.add(req)

    def new(req_id: str) -> bool:
        # most steps repeat a requirement an earlier step already has (the same binary,
        # operation or host): checked before one is made for nothing (bench/, figure 6)
        return req_id not in seen

    for name, decl in cap.inputs.items():
        if decl.required:
            add(
                Requirement(
                    f"input:{name}", "input", {"name": name}, source=f"input {name}", line=decl.line
                )
            )
    for s in plan.steps:
        where = f"step {s.index}"
        if s.binary is not None:
            if new(f"binary:{s.binary}"):
                add(
                    Requirement(
                        f"binary:{s.binary}",
                        "executable",
                        {"name": s.binary},
                        source=where,
                        step=s.index,
                    )
                )
            if s.credential:
                add(
                    Requirement(
                        f"credential:{s.credential}:binary:{s.binary}",
                        "credential",
                        {"name": s.credential, "for": s.binary},
                        source=where,
                        step=s.index,
                    )
                )
            continue
        if s.operation is None:
            continue
        if new(f"operation:{s.provider} {s.operation.name}"):
            add(
                Requirement(
                    f"operation:{s.provider} {s.operation.name}",
                    "providerOperation",
                    {"provider": s.provider, "operation": s.operation.name},
                    source=where,
                    step=s.index,
                )
            )
        host = s.inspection.credential_host
        if s.operation.credential and host:
            credential_id = f"credential:{s.operation.credential}:{host}"
            known = seen.get(credential_id)
            if known is not None:  # not built again: the scopes this step needs join
                join_scopes(known, s.operation.scopes)
            else:
                add(
                    Requirement(
                        credential_id,
                        "credential",
                        {
                            "name": s.operation.credential,
                            "host": host,
                            "scopes": list(s.operation.scopes),
                        },
                        source=where,
                        step=s.index,
                    )
                )
        for h in s.inspection.hosts:
            if new(f"host:{h}"):
                add(
                    Requirement(f"host:{h}", "networkHost", {"host": h}, source=where, step=s.index)
                )
        for path, access in s.inspection.paths:
            add(
                Requirement(
                    f"path:{access}:{path}",
                    "localPath",
                    {"path": path, "access": [access], "operation": s.operation.name},
                    source=where,
                    step=s.index,
                )
            )
    programs = [s.index for s in plan.steps if s.binary is not None or s.transport == "cli"]
    if programs:
        # whether the programs steps start run OS-confined here (optional unless the policy
        # or network: none needs it: decided when checked)
        add(
            Requirement(
                "confinement",
                "confinement",
                {"steps": programs},
                optional=True,
                source=f"step{'s' if len(programs) > 1 else ''} {', '.join(map(str, programs))}",
            )
        )
    if "network" in cap.requires:
        # how each step keeps to requires.network (MDA: satisfy it or refuse)
        for s in plan.steps:
            add(
                Requirement(
                    f"network:step-{s.index}",
                    "networkEnforcement",
                    {"step": s.index, "kind": "binary" if s.binary is not None else s.transport},
                    source=f"step {s.index}",
                    step=s.index,
                )
            )
    return out
