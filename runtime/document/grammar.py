"""The closed grammar of the runtime block, and the frontmatter's known fields.

Second station: Document -> Capability + problems. The grammar is data:
:data:`RUNTIME_BLOCK` and :data:`FRONTMATTER` are schemas of
:mod:`runtime.yamldoc.schema`, which walks the YAML tree once and reports
every problem (not just the first), each at its line and column in the
Markdown file; the cost is linear in the size of the block. Their ``build``
hooks make the typed model (:mod:`runtime.document.model`) of the valid parts.
"""

from __future__ import annotations

import re
from typing import Any

from runtime.document.fences import FencedBlock
from runtime.document.loader import Document, Frontmatter
from runtime.document.model import Arg, Capability, InputDecl, Step
from runtime.document.typed_requirements import REQUIREMENTS
from runtime.problems import Problem
from runtime.yamldoc.schema import (
    Alt,
    Anything,
    Bool,
    Int,
    List,
    Map,
    Msg,
    OneOf,
    Scope,
    Text,
    check,
    parse_yaml,
    plain,
)
from runtime.yamldoc.yamlnode import Node

SUPPORTED_VERSIONS = ("v1",)

INPUT_NAME = r"[A-Za-z_][A-Za-z0-9_-]*"
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_-]*)\}")
KEBAB_64 = r"(?=.{1,64}\Z)[a-z0-9]+(-[a-z0-9]+)*"

LOOKALIKES: dict[str, Msg] = {
    "transport": Msg(
        "'transport' is not a key: the provider owns that decision",
        "remove it; `runtime <provider> --help` shows the transport each operation uses",
        code="unknown-key",
    ),
    "steps": Msg(
        "'steps' is not a key: it is 'workflow'",
        "rename 'steps:' to 'workflow:'",
        code="unknown-key",
    ),
    "command": Msg(
        "'command' is not a key: it comes from the retired command registry",
        "rewrite the step as 'provider:' plus the operation words in 'args', or 'binary:' for an allowed binary",
        code="unknown-key",
    ),
    "capability": Msg(
        "'capability' is not a key: there is no capability step",
        "inline the other capability's steps and name it in a '## Lineage' section",
        code="unknown-key",
    ),
}
UNKNOWN_KEY = Msg("unknown key '{key}' in {where}", "allowed keys: {allowed}", code="unknown-key")
# what a lookalike was written instead of: its message says how to rewrite them, so they
# are not reported missing as well (a `command:` step is one error, not three)
STEP_STANDS_FOR = {
    "command": ("provider", "binary", "args"),
    "capability": ("provider", "binary", "args"),
}


# -- the runtime block ---------------------------------------------------------------------------


def _input(node: Node, value: dict[str, Any], scope: Scope) -> InputDecl:
    assert scope.key is not None and scope.key_node is not None
    line, column = scope.position(scope.key_node)
    return InputDecl(
        scope.key, value.get("description"), value.get("required", False), line, column
    )


def _inputs(node: Node, value: dict[str, InputDecl], scope: Scope) -> dict[str, InputDecl]:
    # every input named is declared, whatever is wrong with its declaration (a reference
    # to it is then no second problem)
    out = {}
    for key, _ in node.pairs:
        out[key.text] = value.get(key.text) or InputDecl(
            key.text, None, False, *scope.position(key)
        )
    return out


def _step(node: Node, value: dict[str, Any], scope: Scope) -> Step:
    assert scope.index is not None
    line, column = scope.position(node)
    return Step(
        scope.index,
        value.get("provider"),
        value.get("binary"),
        tuple(value.get("args", ())),
        line,
        column,
    )


INPUT = Map(
    {
        "description": Text(label="the description of '{input.key}'"),
        "required": Bool(ignore_case=True, label="'required' of input '{input.key}'"),
    },
    label="input '{key}'",
    name="input",
    wrong=Msg("{where} must be a mapping with description and required"),
    unknown=UNKNOWN_KEY,
    lookalikes=LOOKALIKES,
    empty=True,
    build=_input,
)

STEP = Map(
    {
        "provider": Text(label="'provider' of {step}"),
        "binary": Text(label="'binary' of {step}"),
        "args": List(
            Text(
                wrong=Msg(
                    "each arg of {step} must be a single value, not {got}",
                    "quote it if it is meant as text",
                ),
                build=lambda node, text, scope: Arg(text, *scope.position(node)),
            ),
            label="'args' of {step}",
            wrong=Msg(
                "{where} must be a list, not {got}",
                "write 'args: [word, word]' or one '- word' per line",
            ),
            empty="plain",
        ),
    },
    required={
        "args": Msg(
            "{where} has no 'args'",
            "add 'args: [...]': the words you would type after `runtime <provider>`",
            code="missing-key",
        )
    },
    one_of=OneOf(
        ("provider", "binary"),
        both=Msg(
            "{where} sets both 'provider' and 'binary'",
            "a step sets exactly one of them",
            code="provider-and-binary",
        ),
        neither=Msg(
            "{where} sets neither 'provider' nor 'binary'",
            "add 'provider: NAME' (`runtime --help` lists the providers), or 'binary:' with an allowed binary",
            code="no-provider-or-binary",
        ),
    ),
    label="step {index}",
    name="step",
    wrong=Msg("{where} must be a mapping with 'provider' or 'binary' and 'args'"),
    unknown=UNKNOWN_KEY,
    lookalikes=LOOKALIKES,
    stands_for=STEP_STANDS_FOR,
    whole=True,  # a step with a wrong part is not planned (unknown keys are ignored)
    build=_step,
)

_BAD_INPUT_NAME = Msg(
    "'{text}' is not a valid input name",
    "use letters, digits, '_' and '-', starting with a letter or '_'",
    code="bad-input-name",
)

RUNTIME_BLOCK = Map(
    {
        "version": Text(
            choices=SUPPORTED_VERSIONS,
            bad=Msg(
                "unsupported version '{text}'",
                "supported versions: " + ", ".join(SUPPORTED_VERSIONS),
                code="unsupported-version",
            ),
        ),
        "inputs": Map(
            key=Text(pattern=INPUT_NAME, bad=_BAD_INPUT_NAME, wrong=_BAD_INPUT_NAME),
            extra=INPUT,
            wrong=Msg("{where} must be a mapping of input names, not {got}"),
            empty=True,
            build=_inputs,
        ),
        "workflow": List(
            STEP,
            min_items=1,
            too_few=Msg("{where} has no steps", "add at least one step", code="empty-workflow"),
            wrong=Msg(
                "{where} must be a list of steps, not {got}",
                "write each step as '- provider: ...' with 'args: [...]'",
            ),
        ),
    },
    required={
        "version": Msg("missing 'version'", "add 'version: v1'", code="missing-key"),
        "workflow": Msg(
            "missing 'workflow'", "add 'workflow:' with at least one step", code="missing-key"
        ),
    },
    missing_at_start=True,
    wrong=Msg("{where} must be a mapping of keys, not {got}", "start with 'version: v1'"),
    unknown=UNKNOWN_KEY,
    lookalikes=LOOKALIKES,
    stands_for={"steps": ("workflow",)},
)


# -- the frontmatter -----------------------------------------------------------------------------

RUNTIME_CONSTRAINT = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.+\-]*)\s*(.*?)\s*$")


def parse_runtime_constraint(text: str) -> tuple[str, str] | None:
    """Split ``python>=3.11`` into (``python``, ``>=3.11``); None when malformed."""
    match = RUNTIME_CONSTRAINT.match(text)
    if match is None:
        return None
    name, spec = match.group(1), match.group(2)
    if spec:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            SpecifierSet(spec)
        except InvalidSpecifier:
            return None
    return name, spec


def _constraint(node: Node, text: str, scope: Scope) -> Msg | None:
    if parse_runtime_constraint(text) is not None:
        return None
    # MDA asks only for a string; the form is a SHOULD, so the capability stays valid and
    # preflight reports the entry as Unknown
    return Msg(
        "'{text}' is not a runtime constraint of the form <runtime>[<comparator><version>]; "
        "preflight cannot check it (readiness Unknown)",
        "write it as, for example, java>=17 or python>=3.11",
        code="requires-runtime-form",
        severity="warning",
    )


def _strings(label: str, item: Text | None = None) -> List:
    return List(
        item or Text(wrong=Msg("{where} must be a string")),
        label=label,
        wrong=Msg("{where} must be a list of strings, not {got}", 'write it as ["a", "b"]'),
    )


def _count(label: str) -> Int:
    return Int(
        label=label,
        bad=Msg("{where} must be a non-negative integer"),
        wrong=Msg("{where} must be a non-negative integer"),
    )


def _flag(label: str) -> Bool:
    return Bool(
        ignore_case=True,
        label=label,
        bad=Msg("{where} must be true or false"),
        wrong=Msg("{where} must be true or false"),
    )


def _fields(label: str, fields: dict[str, Any]) -> Map:
    return Map(
        fields,
        label=label,
        wrong=Msg("{where} must be a mapping"),
        unknown=Msg(
            "unknown field '{key}' in {where} (ignored)",
            "known fields: {allowed}",
            code="requires-unknown-field",
            severity="warning",
        ),
    )


def _requires(
    node: Node, value: dict[str, Any], scope: Scope
) -> tuple[dict[str, Any], dict[str, int]]:
    # every key is kept as written (an unknown one is shown, never enforced)
    return plain(node), {key.text: scope.position(key)[0] for key, _ in node.pairs}


_BAD_REQUIRES_KEY = Msg(
    "requires key '{text}' is not kebab-case",
    "keys are 1 to 64 lowercase letters and digits with single '-' between them",
    code="requires-key",
)

REQUIRES = Map(  # metadata.mda.requires (MDA §10)
    {
        "runtime": _strings(
            "requires.runtime", Text(wrong=Msg("{where} must be a string"), check=_constraint)
        ),
        "tools": _strings("requires.tools"),
        "network": Alt(
            {
                "scalar": Text(
                    choices=("none", "local", "public"),
                    bad=Msg(
                        "network '{text}' is not none, local or public",
                        "or give a list of host globs",
                    ),
                )
            },
            otherwise=_strings("requires.network"),
        ),
        "packages": _strings("requires.packages"),
        "model": _fields(
            "requires.model",
            {
                "min-context": _count("model.min-context"),
                "tools-required": _flag("model.tools-required"),
                "vision": _flag("model.vision"),
            },
        ),
        "cost-hints": _fields(
            "requires.cost-hints",
            {
                "tokens-per-call": _count("cost-hints.tokens-per-call"),
                "seconds-per-call": _count("cost-hints.seconds-per-call"),
                "paid-apis": _strings("cost-hints.paid-apis"),
            },
        ),
    },
    key=Text(pattern=KEBAB_64, bad=_BAD_REQUIRES_KEY, wrong=_BAD_REQUIRES_KEY),
    unknown=Msg(
        "requires key '{key}' is not a standard key; it is kept but not checked",
        "standard keys: {allowed}",
        code="requires-unknown-key",
        severity="warning",
    ),
    wrong=Msg("'metadata.mda.requires' must be a mapping of keys"),
    code="requires-shape",
    build=_requires,
)

_NAMESPACE = Msg("metadata namespace '{key}' must be a mapping")

FRONTMATTER = Map(
    {
        "name": Text(
            pattern=KEBAB_64,
            bad=Msg(
                "name '{text}' is not kebab-case",
                "use 1 to 64 lowercase letters, digits and single '-' between them",
                code="bad-name",
            ),
        ),
        "description": Text(),
        "compatibility": Text(),
        "metadata": Map(
            {
                "mda": Map({"requires": REQUIRES}, extra=Anything(), wrong=_NAMESPACE),
                "runtime": Map(
                    {"requirements": REQUIREMENTS},
                    wrong=_NAMESPACE,
                    unknown=Msg(
                        "unknown key '{key}' in metadata.runtime",
                        "the runtime namespace has: requirements",
                        code="unknown-key",
                    ),
                ),
            },
            extra=Map(extra=Anything(), wrong=_NAMESPACE),
            wrong=Msg("'metadata' must be a mapping of vendor namespaces"),
        ),
    },
    extra=Anything(),  # the frontmatter is open: other tools' keys are kept
    wrong=Msg("{where} must be a mapping of keys, not {got}"),
)


# -- checking a document -------------------------------------------------------------------------


class _Locator:
    """Maps positions in a YAML text back to the Markdown file."""

    def __init__(
        self, first_line: int, column_offset: int, line_offsets: tuple[int, ...] = ()
    ) -> None:
        self.first_line = first_line
        self.column_offset = column_offset
        self.line_offsets = line_offsets  # characters stripped from each content line, when known

    def at(self, node: Node) -> tuple[int, int]:
        return self.raw(node.line, node.column)

    def raw(self, line: int, column: int) -> tuple[int, int]:
        offsets = self.line_offsets
        offset = offsets[line] if 0 <= line < len(offsets) else self.column_offset
        return self.first_line + line, column + offset + 1


def check_capability(doc: Document) -> tuple[Capability, list[Problem]]:
    """Parse and check the runtime block and the frontmatter of a loaded document."""
    cap = Capability(doc.path, doc.sha256, doc)
    problems: list[Problem] = list(doc.problems)
    if doc.frontmatter is not None:
        problems.extend(_check_frontmatter(doc, doc.frontmatter, cap))
    block = doc.runtime_block
    if block is not None:
        problems.extend(_check_block(doc, block, cap))
    return cap, problems


def _check_block(doc: Document, block: FencedBlock, cap: Capability) -> list[Problem]:
    loc = _Locator(
        block.content_start_line, block.content_column_offset, block.content_line_offsets
    )
    root, problems = parse_yaml(block.content, doc.path, position=loc.raw)
    if root is None:
        if not problems:
            problems.append(
                Problem(
                    doc.path,
                    block.fence_line,
                    block.indent + 1,
                    "error",
                    "empty-block",
                    "the runtime block is empty",
                    "it needs at least 'version: v1' and a 'workflow:' list",
                )
            )
        return problems
    value, found = check(
        root,
        RUNTIME_BLOCK,
        file=doc.path,
        code="wrong-type",
        locate=loc.at,
        start=(block.content_start_line, 1 + block.content_column_offset),
        label="the runtime block",
    )
    if value is not None:
        version = root.get("version")
        if version is not None and version.kind == "scalar":
            cap.version = version.text  # as written, supported or not
        cap.inputs = value.get("inputs", {})
        cap.steps = value.get("workflow", [])
    return problems + found


def _check_frontmatter(doc: Document, fm: Frontmatter, cap: Capability) -> list[Problem]:
    loc = _Locator(fm.first_line, 0)
    root, problems = parse_yaml(fm.text, doc.path, position=loc.raw)
    if root is None:
        return problems
    value, found = check(
        root, FRONTMATTER, file=doc.path, code="wrong-type", locate=loc.at, label="the frontmatter"
    )
    if value is not None:
        cap.frontmatter = plain(root)
        metadata = value.get("metadata", {})
        requires = metadata.get("mda", {}).get("requires")
        if requires is not None:
            cap.requires, cap.requires_lines = requires
        cap.typed_requirements = metadata.get("runtime", {}).get("requirements", [])
    return problems + found


def references(text: str) -> list[re.Match[str]]:
    """``${name}`` references in an arg. ``${{ expr }}`` (GitHub Actions) is not one."""
    if "${" not in text:  # most args: no scan (a reference starts with "${")
        return []
    return list(REFERENCE.finditer(text))
