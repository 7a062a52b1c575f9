"""Requirements read off the resolved plan: each provider operation, each credential an
operation needs, each binary (and the program an operation runs: gh), each files path after substitution, each network host a
step contacts, each required input, the confinement programs need."""

from __future__ import annotations

from collections.abc import Iterable

from runtime.document.requirements import Requirement, Requirements
from runtime.plan.build import Plan


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
        # operation or host): checked before one is made for nothing
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
        program = s.operation.program
        if program is not None and new(f"binary:{program}"):
            # the program the operation runs (gh): missing, the run stops before step 1
            add(
                Requirement(
                    f"binary:{program}",
                    "executable",
                    {"name": program},
                    source=where,
                    step=s.index,
                )
            )
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
