"""Declared typed requirements: ``metadata.runtime.document.requirements`` in the frontmatter.

Nine types, each with a fixed target shape (no other fields allowed):

==================  =====================================  =====================
type                target                                 freshness
==================  =====================================  =====================
objectRef           kind (capability|policy|context),      optional
                    name, generation (int >= 1, optional)
localPath           path, access (non-empty, no repeats,   optional
                    of read, write, execute)
executable          name, version (optional)               optional
mcpServer           serverUrl (http/https)                 required
mcpTool             serverUrl, name                        required
mcpResource         serverUrl, uri                         required
credential          env (^[A-Z_][A-Z0-9_]*$)               required
runnerCapability    name (a capability name)               required
contextSource       exactly one of path or url             required for url
==================  =====================================  =====================

Each entry: ``id`` (a capability-style name), ``type``, ``target``,
``optional`` (default false), ``origin`` (``declared`` default, or
``inferred``, which then needs ``reviewStatus``: ``accepted`` or
``needsReview``), ``freshness.maxAgeSeconds`` (integer >= 1). Duplicate ids
validate; preflight reports them as a failed check.
"""

from __future__ import annotations

import re
from typing import Any

from runtime.document.requirements import TYPED_SOURCE, Requirement
from runtime.document.yamltree import Node

NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
ENV = re.compile(r"^[A-Z_][A-Z0-9_]*$")
ENTRY_KEYS = ("id", "type", "target", "optional", "origin", "reviewStatus", "freshness")
OBJECT_KINDS = ("capability", "policy", "context")
ACCESS = ("read", "write", "execute")

# type -> (required target fields, optional target fields, freshness required)
TYPES: dict[str, tuple[tuple[str, ...], tuple[str, ...], bool]] = {
    "objectRef": (("kind", "name"), ("generation",), False),
    "localPath": (("path", "access"), (), False),
    "executable": (("name",), ("version",), False),
    "mcpServer": (("serverUrl",), (), True),
    "mcpTool": (("serverUrl", "name"), (), True),
    "mcpResource": (("serverUrl", "uri"), (), True),
    "credential": (("env",), (), True),
    "runnerCapability": (("name",), (), True),
    "contextSource": ((), ("path", "url"), False),  # exactly one; url needs freshness
}
DYNAMIC = tuple(t for t, (_, _, fresh) in TYPES.items() if fresh)


def _http_url(text: str) -> bool:
    return text.startswith(("http://", "https://")) and len(text) > len("https://")


def check_node(checker: Any, node: Node, cap: Any) -> None:
    """Validate ``metadata.runtime.document.requirements`` with positions; store the entries on ``cap``."""
    if node.kind != "seq":
        checker.error(
            node,
            "requirement-shape",
            "'metadata.runtime.document.requirements' must be a list of requirements",
        )
        return
    for index, item in enumerate(node.items, start=1):
        entry = _check_entry(checker, item, index)
        if entry is not None:
            cap.typed_requirements.append(entry)


def _check_entry(checker: Any, node: Node, index: int) -> dict[str, Any] | None:
    where = f"requirement {index}"
    if node.kind != "map":
        checker.error(
            node, "requirement-shape", f"{where} must be a mapping with id, type and target"
        )
        return None
    ok = True
    for key in node.key_nodes():
        if key.text not in ENTRY_KEYS:
            checker.error(
                key,
                "requirement-key",
                f"unknown key '{key.text}' in {where}",
                "allowed keys: " + ", ".join(ENTRY_KEYS),
            )
            ok = False

    def scalar(field: str, required: bool) -> tuple[str | None, Node | None]:
        value = node.get(field)
        if value is None:
            if required:
                checker.error(node, "requirement-missing", f"{where} has no '{field}'")
            return None, None
        if value.kind != "scalar":
            checker.error(
                value, "requirement-shape", f"'{field}' of {where} must be a single value"
            )
            return None, value
        return value.text, value

    rid, id_node = scalar("id", True)
    if rid is not None and id_node is not None and not (NAME.match(rid) and len(rid) <= 64):
        checker.error(
            id_node,
            "requirement-id",
            f"requirement id '{rid}' is not a valid name",
            "1 to 64 lowercase letters, digits and single '-'",
        )
        ok = False
    rtype, type_node = scalar("type", True)
    if rtype is not None and type_node is not None and rtype not in TYPES:
        checker.error(
            type_node,
            "requirement-type",
            f"unknown requirement type '{rtype}'",
            "types: " + ", ".join(TYPES),
        )
        ok = False
    optional_text, optional_node = scalar("optional", False)
    optional = False
    if optional_node is not None and optional_text is not None:
        if optional_text not in ("true", "false"):
            checker.error(
                optional_node, "requirement-shape", f"'optional' of {where} must be true or false"
            )
            ok = False
        optional = optional_text == "true"
    origin, origin_node = scalar("origin", False)
    origin = origin or "declared"
    if origin_node is not None and origin not in ("declared", "inferred"):
        checker.error(
            origin_node, "requirement-shape", f"origin '{origin}' must be declared or inferred"
        )
        ok = False
    review, review_node = scalar("reviewStatus", False)
    if review_node is not None and review not in ("accepted", "needsReview"):
        checker.error(
            review_node,
            "requirement-shape",
            f"reviewStatus '{review}' must be accepted or needsReview",
        )
        ok = False
    if origin == "inferred" and review is None:
        checker.error(
            origin_node or node,
            "requirement-review",
            f"{where} has origin: inferred but no reviewStatus",
            "add reviewStatus: accepted or needsReview",
        )
        ok = False
    max_age = _freshness(checker, node.get("freshness"), where)
    if max_age is False:
        ok = False
        max_age = None
    target_node = node.get("target")
    target: dict[str, Any] | None = None
    if target_node is None:
        checker.error(node, "requirement-missing", f"{where} has no 'target'")
        ok = False
    elif rtype in TYPES:
        target = _check_target(checker, target_node, rtype, where)
        if target is None:
            ok = False
        else:
            fresh_needed = TYPES[rtype][2] or (rtype == "contextSource" and "url" in target)
            if fresh_needed and max_age is None and node.get("freshness") is None:
                checker.error(
                    type_node or node,
                    "requirement-freshness",
                    f"{where} ({rtype}) needs freshness.maxAgeSeconds",
                    "dynamic requirements need a freshness bound, e.g. freshness: {maxAgeSeconds: 3600}",
                )
                ok = False
    if not ok or rid is None or rtype is None or target is None:
        return None
    line = checker.loc.at(node)[0]
    return {
        "id": rid,
        "type": rtype,
        "target": target,
        "optional": optional,
        "origin": origin,
        "reviewStatus": review,
        "maxAgeSeconds": max_age,
        "line": line,
    }


def _freshness(checker: Any, node: Node | None, where: str) -> int | bool | None:
    if node is None:
        return None
    if node.kind != "map":
        checker.error(
            node,
            "requirement-freshness",
            f"'freshness' of {where} must be a mapping with maxAgeSeconds",
        )
        return False
    for key in node.key_nodes():
        if key.text != "maxAgeSeconds":
            checker.error(
                key,
                "requirement-freshness",
                f"unknown key '{key.text}' in freshness",
                "only maxAgeSeconds",
            )
            return False
    value = node.get("maxAgeSeconds")
    if value is None:
        checker.error(node, "requirement-freshness", f"'freshness' of {where} has no maxAgeSeconds")
        return False
    if value.kind != "scalar" or not re.fullmatch(r"[0-9]+", value.text) or int(value.text) < 1:
        checker.error(
            value, "requirement-freshness", "maxAgeSeconds must be an integer of at least 1"
        )
        return False
    return int(value.text)


def _check_target(checker: Any, node: Node, rtype: str, where: str) -> dict[str, Any] | None:
    if node.kind != "map":
        checker.error(node, "requirement-target", f"the target of {where} must be a mapping")
        return None
    required, optional, _ = TYPES[rtype]
    allowed = required + optional
    ok = True
    target: dict[str, Any] = {}
    for key, value in node.pairs:
        if key.text not in allowed:
            checker.error(
                key,
                "requirement-target",
                f"'{key.text}' does not belong to a {rtype} target",
                f"{rtype} targets have: {', '.join(allowed)}",
            )
            ok = False
            continue
        if key.text == "access":
            target["access"] = _access(checker, value, where)
            ok = ok and target["access"] is not None
            continue
        if value.kind != "scalar":
            checker.error(
                value, "requirement-target", f"'{key.text}' of {where} must be a single value"
            )
            ok = False
            continue
        target[key.text] = value.text
        ok = _field_rule(checker, rtype, key.text, value) and ok
    for field in required:
        if field not in target and node.get(field) is None:
            checker.error(
                node, "requirement-target", f"the {rtype} target of {where} needs '{field}'"
            )
            ok = False
    if rtype == "contextSource":
        has = [f for f in ("path", "url") if node.get(f) is not None]
        if len(has) != 1:
            checker.error(
                node,
                "requirement-target",
                f"a contextSource target has exactly one of path or url ({where} has "
                + ("both" if has else "neither")
                + ")",
            )
            ok = False
    return target if ok else None


def _field_rule(checker: Any, rtype: str, field: str, value: Node) -> bool:
    text = value.text
    if field in ("serverUrl", "url") and not _http_url(text):
        checker.error(value, "requirement-target", f"{field} must start with http:// or https://")
        return False
    if rtype == "credential" and field == "env" and not ENV.match(text):
        checker.error(
            value,
            "requirement-target",
            f"'{text}' is not an environment variable name",
            "use ^[A-Z_][A-Z0-9_]*$, e.g. DEPLOY_TOKEN",
        )
        return False
    if rtype == "runnerCapability" and field == "name" and not NAME.match(text):
        checker.error(value, "requirement-target", f"'{text}' is not a valid capability name")
        return False
    if rtype == "objectRef" and field == "kind" and text not in OBJECT_KINDS:
        checker.error(
            value,
            "requirement-target",
            f"objectRef kind '{text}' is not one of " + ", ".join(OBJECT_KINDS),
        )
        return False
    if field == "generation" and (not re.fullmatch(r"[0-9]+", text) or int(text) < 1):
        checker.error(value, "requirement-target", "generation must be an integer of at least 1")
        return False
    return True


def _access(checker: Any, node: Node, where: str) -> list[str] | None:
    if node.kind != "seq" or not node.items:
        checker.error(
            node,
            "requirement-target",
            f"'access' of {where} must be a non-empty list",
            "of read, write, execute",
        )
        return None
    out: list[str] = []
    for item in node.items:
        if item.kind != "scalar" or item.text not in ACCESS:
            checker.error(item, "requirement-target", "access entries are read, write or execute")
            return None
        if item.text in out:
            checker.error(item, "requirement-target", f"'{item.text}' is repeated in access")
            return None
        out.append(item.text)
    return out


def collect(cap: Any) -> list[Requirement]:
    out = []
    for e in getattr(cap, "typed_requirements", []):
        out.append(
            Requirement(
                e["id"],
                e["type"],
                dict(e["target"]),
                origin=e["origin"],
                optional=e["optional"],
                source=TYPED_SOURCE,
                line=e["line"],
                review_status=e["reviewStatus"],
                max_age_seconds=e["maxAgeSeconds"],
            )
        )
    return out
