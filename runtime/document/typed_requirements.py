"""Declared typed requirements: ``metadata.runtime.requirements`` in the frontmatter.

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
runnerCapability    name (a capability name, bare or       required
                    qualified: huoban.dev/specification)
contextSource       exactly one of path or url             required for url
==================  =====================================  =====================

Each entry: ``id`` (a capability-style name), ``type``, ``target``,
``optional`` (default false), ``origin`` (``declared`` default, or
``inferred``, which then needs ``reviewStatus``: ``accepted`` or
``needsReview``), ``freshness.maxAgeSeconds`` (integer >= 1). Duplicate ids
validate; preflight reports them as a failed check.

The table is :data:`REQUIREMENTS`, a schema of :mod:`runtime.yamldoc.schema`;
the two rules that join fields (``reviewStatus`` for an inferred entry, the
freshness a dynamic target needs) are its hook, :func:`_joined_rules`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.yamldoc.schema import (
    Bool,
    By,
    Int,
    List,
    Map,
    Msg,
    OneOf,
    Scope,
    Shape,
    Text,
)
from runtime.yamldoc.yamlnode import Node

if TYPE_CHECKING:
    from runtime.document.requirements import Requirement

NAME = r"[a-z0-9]+(-[a-z0-9]+)*"  # a capability's name
NAME_64 = r"(?=.{1,64}\Z)" + NAME  # ... of at most 64 characters
# a runner capability, bare (gpu) or qualified by the DNS name of whoever defines it, as
# seed 004's own example is (huoban.dev/specification)
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
QUALIFIED_NAME = rf"(?:{_LABEL}(?:\.{_LABEL})*/)?{NAME}"
ENV = r"[A-Z_][A-Z0-9_]*"
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

# -- the schema ---------------------------------------------------------------------------------

_SINGLE = Msg("'{key}' of {entry} must be a single value")
_HTTP = Text(
    pattern=r"(?s)https?://.+",
    bad=Msg("{key} must start with http:// or https://"),
    wrong=_SINGLE,
)
_ACCESS_LIST = Msg("'access' of {entry} must be a non-empty list", "of read, write, execute")
_ACCESS_ENTRY = Msg("access entries are read, write or execute")

# the shape of a target field, where it is more than a single value
_TARGET_FIELDS: dict[tuple[str, str], Shape] = {
    ("objectRef", "kind"): Text(
        choices=OBJECT_KINDS,
        bad=Msg("objectRef kind '{text}' is not one of " + ", ".join(OBJECT_KINDS)),
        wrong=_SINGLE,
    ),
    ("objectRef", "generation"): Text(
        pattern=r"0*[1-9][0-9]*",  # kept as typed: an integer of at least 1
        bad=Msg("generation must be an integer of at least 1"),
        wrong=_SINGLE,
    ),
    ("localPath", "access"): List(
        Text(choices=ACCESS, bad=_ACCESS_ENTRY, wrong=_ACCESS_ENTRY),
        min_items=1,
        too_few=_ACCESS_LIST,
        wrong=_ACCESS_LIST,
        unique=Msg("'{text}' is repeated in access"),
    ),
    ("mcpServer", "serverUrl"): _HTTP,
    ("mcpTool", "serverUrl"): _HTTP,
    ("mcpResource", "serverUrl"): _HTTP,
    ("contextSource", "url"): _HTTP,
    ("credential", "env"): Text(
        pattern=ENV,
        bad=Msg(
            "'{text}' is not an environment variable name",
            "use ^[A-Z_][A-Z0-9_]*$, e.g. DEPLOY_TOKEN",
        ),
        wrong=_SINGLE,
    ),
    ("runnerCapability", "name"): Text(
        pattern=QUALIFIED_NAME,
        bad=Msg(
            "'{text}' is not a valid capability name",
            "a kebab-case name (gpu), or one qualified by a domain (huoban.dev/specification)",
        ),
        wrong=_SINGLE,
    ),
}


def _target(rtype: str) -> Map:
    required, optional, _ = TYPES[rtype]
    return Map(
        {f: _TARGET_FIELDS.get((rtype, f), Text(wrong=_SINGLE)) for f in required + optional},
        required=dict.fromkeys(required, Msg(f"the {rtype} target of {{entry}} needs '{{field}}'")),
        one_of=(
            OneOf(
                ("path", "url"),
                both=Msg(
                    "a contextSource target has exactly one of path or url ({entry} has both)"
                ),
                neither=Msg(
                    "a contextSource target has exactly one of path or url ({entry} has neither)"
                ),
            )
            if rtype == "contextSource"
            else None
        ),
        unknown=Msg(
            f"'{{key}}' does not belong to a {rtype} target", f"{rtype} targets have: {{allowed}}"
        ),
        wrong=Msg("the target of {entry} must be a mapping"),
        code="requirement-target",
        whole=True,
    )


def _joined_rules(node: Node, value: dict[str, Any], scope: Scope) -> None:
    """The rules that join two fields of an entry."""
    origin = node.get("origin")
    if value.get("origin") == "inferred" and node.get("reviewStatus") is None:
        scope.report(
            origin,
            Msg(
                "{where} has origin: inferred but no reviewStatus",
                "add reviewStatus: accepted or needsReview",
                code="requirement-review",
            ),
        )
    rtype, target = value.get("type"), value.get("target")
    if target is None or node.get("freshness") is not None:
        return
    if rtype in DYNAMIC or (rtype == "contextSource" and "url" in target):
        scope.report(
            node.get("type"),
            Msg(
                f"{{where}} ({rtype}) needs freshness.maxAgeSeconds",
                "dynamic requirements need a freshness bound, e.g. freshness: {maxAgeSeconds: 3600}",
                code="requirement-freshness",
            ),
        )


def _entry(node: Node, value: dict[str, Any], scope: Scope) -> dict[str, Any]:
    freshness = value.get("freshness") or {}
    return {
        "id": value["id"],
        "type": value["type"],
        "target": value["target"],
        "optional": value.get("optional", False),
        "origin": value.get("origin", "declared"),
        "reviewStatus": value.get("reviewStatus"),
        "maxAgeSeconds": freshness.get("maxAgeSeconds"),
        "line": scope.position(node)[0],
    }


ENTRY = Map(
    {
        "id": Text(
            pattern=NAME_64,
            bad=Msg(
                "requirement id '{text}' is not a valid name",
                "1 to 64 lowercase letters, digits and single '-'",
                code="requirement-id",
            ),
            wrong=_SINGLE,
        ),
        "type": Text(
            choices=tuple(TYPES),
            bad=Msg(
                "unknown requirement type '{text}'",
                "types: " + ", ".join(TYPES),
                code="requirement-type",
            ),
            wrong=_SINGLE,
        ),
        "target": By("type", {rtype: _target(rtype) for rtype in TYPES}),
        "optional": Bool(
            ignore_case=True, bad=Msg("'optional' of {entry} must be true or false"), wrong=_SINGLE
        ),
        "origin": Text(
            choices=("declared", "inferred"),
            bad=Msg("origin '{text}' must be declared or inferred"),
            wrong=_SINGLE,
        ),
        "reviewStatus": Text(
            choices=("accepted", "needsReview"),
            bad=Msg("reviewStatus '{text}' must be accepted or needsReview"),
            wrong=_SINGLE,
        ),
        "freshness": Map(
            {
                "maxAgeSeconds": Int(
                    minimum=1,
                    bad=Msg("maxAgeSeconds must be an integer of at least 1"),
                    wrong=Msg("maxAgeSeconds must be an integer of at least 1"),
                )
            },
            required={"maxAgeSeconds": Msg("'freshness' of {entry} has no maxAgeSeconds")},
            unknown=Msg("unknown key '{key}' in freshness", "only maxAgeSeconds"),
            wrong=Msg("'freshness' of {entry} must be a mapping with maxAgeSeconds"),
            code="requirement-freshness",
        ),
    },
    required=dict.fromkeys(
        ("id", "type", "target"), Msg("{where} has no '{field}'", code="requirement-missing")
    ),
    unknown=Msg(
        "unknown key '{key}' in {where}", "allowed keys: {allowed}", code="requirement-key"
    ),
    label="requirement {index}",
    name="entry",
    wrong=Msg("{where} must be a mapping with id, type and target"),
    code="requirement-shape",
    check=_joined_rules,
    build=_entry,
    whole=True,
)

REQUIREMENTS = List(
    ENTRY,
    wrong=Msg(
        "'metadata.runtime.requirements' must be a list of requirements",
        code="requirement-shape",
    ),
)


def collect(cap: Any) -> list[Requirement]:
    from runtime.document.requirements import TYPED_SOURCE, Requirement

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
