"""What ``runtime mcp serve`` offers: tools made from the catalog and the policy, and
the specs as resources.

Everything here is data read at run time, as plain JSON-shaped values (the SDK's
types are made from them in :mod:`runtime.cli.mcp_server`):

* one tool per catalog capability the policy's ``agents.capabilities`` offers
  (its globs match the capability's name), in name order: the name (``/`` as
  ``.``, the characters MCP allows in a tool's name), a description from the
  title and the first paragraph, an ``inputSchema`` from the declared inputs,
  the run document's schema as ``outputSchema``, and annotations from the
  bound steps' effects, as ``show`` binds them;
* then ``validate`` and ``plan`` for capability text the assistant wrote,
  ``execute`` for it only where ``agents.execute_own_text`` says so, and
  ``operation`` for one provider operation (``runtime github ...``), whose
  steps may have the effects ``agents.operations`` offers;
* resources: the authoring reference and the other specs ``runtime capability
  spec NAME`` prints (the providers' operations, the policy).

What the policy withholds is not listed at all; a call of a tool that is not
listed is answered as an unknown tool.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from runtime.document.catalog import Entry
    from runtime.document.model import Capability
    from runtime.pipeline import Run
    from runtime.plan.workspace import Workspace

# SEP-986: what a tool's name may hold
TOOL_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")
BUILT_IN = ("validate", "plan", "execute", "operation")
RESOURCE_PREFIX = "runtime://specs/"

Kind = Literal["capability", "validate", "plan", "execute", "operation"]


@dataclass
class Tool:
    name: str
    kind: Kind
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    annotations: dict[str, Any]
    title: str | None = None
    capability: str | None = None  # the catalog name (kind "capability")


@dataclass
class Offer:
    """The tools a policy and a catalog offer; ``skipped``: capabilities not offered
    though the policy would, and why (said on stderr by the server)."""

    tools: list[Tool] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def find(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)


@cache
def document_schema(name: str) -> dict[str, Any]:
    """The JSON schema of a ``--output json`` document (specs/schemas/NAME.schema.json)."""
    from runtime.home.resources import specs_dir

    found: dict[str, Any] = json.loads(
        (specs_dir() / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8")
    )
    return found


def tool_name(capability: str) -> str:
    """The tool a catalog name is offered as: ``github/repo-health`` -> ``github.repo-health``."""
    return capability.replace("/", ".")


def offered_entries(ws: Workspace) -> tuple[dict[str, Entry], list[str]]:
    """The catalog capabilities the policy offers, by tool name (the first of a name in
    the capability sources; a shadowed one is not), and why others are not offered."""
    from runtime.document.catalog import list_sources

    agents = ws.policy.agents
    found: dict[str, Entry] = {}
    skipped: list[str] = []
    for entry in list_sources(ws.sources).entries:
        if entry.shadowed_by is not None or not agents.offers(entry.name):
            continue
        name = tool_name(entry.name)
        if name in BUILT_IN or not TOOL_NAME.fullmatch(name) or name in found:
            skipped.append(
                f"capability '{entry.name}' ({entry.path}) is not offered: '{name}' is "
                + ("a built-in tool's name" if name in BUILT_IN else "not a name MCP allows")
                + "; rename the file"
            )
            continue
        found[name] = entry
    return found, skipped


def offer(ws: Workspace) -> Offer:
    """Every tool the policy offers, in order: the catalog's, then the built-in ones."""
    from runtime.pipeline import Mode, Run, resolve, walk

    entries, skipped = offered_entries(ws)
    result = Offer(skipped=skipped)
    from runtime.document.catalog import Target

    for name in sorted(entries):
        entry = entries[name]
        target = Target(entry.path, str(entry.path), True, entry.name)
        run = walk(Run(ws, Mode.INSPECT, name=entry.name, target=target), until=resolve)
        cap = run.capability
        if cap is None or cap.document.runtime_block is None:
            continue  # Markdown that is no capability (a README among them)
        if not run.ok:
            result.skipped.append(
                f"capability '{entry.name}' ({entry.path}) is not offered: it is not valid "
                f"(`runtime capability validate {entry.name}` says why)"
            )
            continue
        result.tools.append(capability_tool(name, entry.name, cap, run))
    result.tools += built_in_tools(ws)
    return result


def capability_tool(name: str, catalog_name: str, cap: Capability, run: Run) -> Tool:
    title = cap.title or catalog_name
    paragraph = first_paragraph(cap.document.text)
    description = f"{title}\n\n{paragraph}" if paragraph else title
    properties: dict[str, Any] = {}
    for decl in cap.inputs.values():
        prop: dict[str, Any] = {"type": "string"}
        if decl.description:
            prop["description"] = decl.description
        properties[decl.name] = prop
    return Tool(
        name=name,
        kind="capability",
        description=description,
        input_schema={
            "type": "object",
            "properties": properties,
            "required": [d.name for d in cap.inputs.values() if d.required],
            "additionalProperties": False,
        },
        output_schema=document_schema("execute"),
        annotations=effect_hints(run),
        title=title,
        capability=catalog_name,
    )


def effect_hints(run: Run) -> dict[str, bool]:
    """``readOnlyHint`` when every step only reads, ``destructiveHint`` when one may
    destroy, ``openWorldHint`` when one leaves the machine (an API, a program with hosts
    to reach): from the steps bound as ``show`` binds them, every effect an input could
    still choose counted."""
    from runtime.plan.programs import owned_profile

    assert run.plan is not None
    ws = run.ws
    effects: set[str] = set()
    leaves = False
    for planned in run.plan.steps:
        op, call = planned.operation, planned.call
        if op is not None:
            known = op.known_effect(call)
            effects |= {known} if known is not None else set(op.possible_effects())
            leaves |= op.transport != "local" or op.program is not None
        else:
            effects.add(planned.effect)
            binary = planned.binary or ""
            owner = ws.registry.program_owner(binary)
            profile = owned_profile(binary, owner)
            leaves |= bool(profile.hosts_of) or bool(ws.policy.binary_hosts.get(binary))
    return {
        "readOnlyHint": effects <= {"read"},
        "destructiveHint": "destroy" in effects,
        "idempotentHint": effects <= {"read"},
        "openWorldHint": leaves,
    }


TEXT_HELP = (
    "A capability: Markdown with a '# Title', prose, and one ```runtime block "
    f"(the grammar: the resource {RESOURCE_PREFIX}capability-spec.md)."
)
INPUTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The capability's inputs, by name (each a string).",
    "additionalProperties": {"type": "string"},
}


def built_in_tools(ws: Workspace) -> list[Tool]:
    agents = ws.policy.agents
    text = {"type": "string", "description": TEXT_HELP}
    own = " or ".join(agents.own_effects)
    reads = {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    tools = [
        Tool(
            "validate",
            "validate",
            "Check capability text you wrote against runtime's grammar, the registered "
            "providers and the policy, as `runtime capability validate` does: every problem "
            "with its line, column and hint. Runs nothing.",
            {
                "type": "object",
                "properties": {"text": text},
                "required": ["text"],
                "additionalProperties": False,
            },
            document_schema("validate"),
            reads,
            "Validate capability text",
        ),
        Tool(
            "plan",
            "plan",
            "Show exactly what capability text you wrote would do, as `runtime capability "
            "plan` does: each step's bound call, effect and policy decision, and an offline "
            f"preflight. Runs nothing. Its own steps may {own}.",
            {
                "type": "object",
                "properties": {"text": text, "inputs": INPUTS_SCHEMA},
                "required": ["text"],
                "additionalProperties": False,
            },
            document_schema("plan"),
            reads,
            "Plan capability text",
        ),
    ]
    if agents.execute_own_text[0]:
        tools.append(
            Tool(
                "execute",
                "execute",
                "Run capability text you wrote, as `runtime capability execute` does: "
                f"validated, planned and decided by the policy first; its steps may {own}.",
                {
                    "type": "object",
                    "properties": {"text": text, "inputs": INPUTS_SCHEMA},
                    "required": ["text"],
                    "additionalProperties": False,
                },
                document_schema("execute"),
                _own_hints(agents.own_effects),
                "Execute capability text",
            )
        )
    providers = sorted(ws.registry.names())
    tools.append(
        Tool(
            "operation",
            "operation",
            "Run one provider operation, as `runtime PROVIDER ARGS...` does (`runtime github "
            "repo view acme/app`: provider 'github', args ['repo', 'view', 'acme/app']), "
            f"under the policy. Operations offered: those that {own}. The operations of "
            f"each provider: the resources {RESOURCE_PREFIX}PROVIDER.md.",
            {
                "type": "object",
                "properties": {
                    "provider": {"type": "string", "enum": providers},
                    "args": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "The operation's words, then its arguments.",
                    },
                },
                "required": ["provider", "args"],
                "additionalProperties": False,
            },
            document_schema("execute"),
            _own_hints(agents.own_effects),
            "Run a provider operation",
        )
    )
    return tools


def _own_hints(effects: tuple[str, ...]) -> dict[str, bool]:
    return {
        "readOnlyHint": effects == ("read",),
        "destructiveHint": "destroy" in effects,
        "idempotentHint": effects == ("read",),
        "openWorldHint": True,
    }


def first_paragraph(text: str) -> str | None:
    """The first paragraph of prose after the frontmatter (headings, fenced blocks and
    HTML comments are not prose), on one line."""
    lines = text.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":
        ends = [i for i, line in enumerate(lines[1:], 1) if line.strip() in ("---", "...")]
        start = ends[0] + 1 if ends else len(lines)
    found: list[str] = []
    fence: str | None = None
    in_comment = False
    for line in lines[start:]:
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        if in_comment:
            in_comment = "-->" not in stripped
            continue
        if stripped.startswith(("```", "~~~")):
            if found:
                break
            fence = stripped[:3]
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        if not stripped or stripped.startswith("#"):
            if found:
                break
            continue
        found.append(stripped)
    return " ".join(found) or None


@dataclass
class Resource:
    uri: str
    name: str
    title: str
    description: str
    path: Path


def resources() -> list[Resource]:
    """The authoring reference first, then the other specs this version ships."""
    from runtime.home.resources import specs_dir

    reference = "capability-spec"
    found = [
        Resource(
            f"{RESOURCE_PREFIX}{reference}.md",
            reference,
            "The authoring reference",
            "How to write a capability: its Markdown, the runtime block's grammar, inputs, "
            "steps, requirements, and what plan, execute and the audit log do.",
            specs_dir() / f"{reference}.md",
        )
    ]
    for path in sorted(specs_dir().glob("*.md")):
        if path.stem == reference:
            continue
        what = (
            "the policy file: every key an agent's calls are decided by"
            if path.stem == "policy"
            else f"the {path.stem} provider: its operations, their arguments and effects"
        )
        found.append(
            Resource(
                f"{RESOURCE_PREFIX}{path.name}",
                path.stem,
                f"The {path.stem} spec",
                f"The reference of {what}.",
                path,
            )
        )
    return found
