"""The closed grammar of the runtime block, and the frontmatter's known fields.

Second station: Document -> Capability + problems. Every problem found is
reported (not just the first), each at its line and column in the Markdown
file. The checks walk the tree composed by strictyaml's parser once, so the
cost is linear in the size of the block.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from runtime.document.fences import FencedBlock
from runtime.document.loader import Document, Frontmatter
from runtime.document.model import Arg, Capability, InputDecl, Step
from runtime.document.yamltree import Node, YamlError, parse
from runtime.problems import Problem

SUPPORTED_VERSIONS = ("v1",)
TOP_KEYS = ("version", "inputs", "workflow")
STEP_KEYS = ("provider", "binary", "args")
INPUT_KEYS = ("description", "required")

INPUT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_-]*)\}")
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

LOOKALIKES: dict[str, tuple[str, str]] = {
    "transport": (
        "'transport' is not a key: the provider owns that decision",
        "remove it; `runtime <provider> --help` shows the transport each operation uses",
    ),
    "steps": ("'steps' is not a key: it is 'workflow'", "rename 'steps:' to 'workflow:'"),
    "command": (
        "'command' is not a key: it comes from the retired command registry",
        "rewrite the step as 'provider:' plus the operation words in 'args', or 'binary:' for an allowed binary",
    ),
    "capability": (
        "'capability' is not a key: there is no capability step",
        "inline the other capability's steps and name it in a '## Lineage' section",
    ),
}

TRUE_WORDS = ("true",)
FALSE_WORDS = ("false",)


class _Locator:
    """Maps positions in a YAML text back to the Markdown file."""

    def __init__(
        self, path: str, first_line: int, column_offset: int, line_offsets: tuple[int, ...] = ()
    ) -> None:
        self.path = path
        self.first_line = first_line
        self.column_offset = column_offset
        self.line_offsets = line_offsets  # characters stripped from each content line, when known

    def at(self, node: Node) -> tuple[int, int]:
        line = node.line
        offsets = self.line_offsets
        offset = offsets[line] if 0 <= line < len(offsets) else self.column_offset
        return self.first_line + line, node.column + offset + 1

    def raw(self, line: int, column: int) -> tuple[int, int]:
        offset = (
            self.line_offsets[line] if 0 <= line < len(self.line_offsets) else self.column_offset
        )
        return self.first_line + line, column + offset + 1


class _Checker:
    def __init__(self, doc: Document, locator: _Locator) -> None:
        self.doc = doc
        self.loc = locator
        self.problems: list[Problem] = []

    def error(self, node: Node, code: str, message: str, hint: str | None = None) -> None:
        line, col = self.loc.at(node)
        self.problems.append(Problem(self.doc.path, line, col, "error", code, message, hint))

    def warn(self, node: Node, code: str, message: str, hint: str | None = None) -> None:
        line, col = self.loc.at(node)
        self.problems.append(Problem(self.doc.path, line, col, "warning", code, message, hint))

    def parse(self, text: str) -> Node | None:
        try:
            root, duplicates = parse(text, self.doc.path)
        except YamlError as exc:
            line, col = self.loc.raw(exc.line, exc.column)
            self.problems.append(
                Problem(self.doc.path, line, col, "error", "yaml", exc.message, exc.hint)
            )
            return None
        for dup in duplicates:
            line, col = self.loc.raw(dup.line, dup.column)
            self.problems.append(
                Problem(
                    self.doc.path,
                    line,
                    col,
                    "error",
                    "duplicate-key",
                    f"duplicate key '{dup.key}' (first on line {self.loc.first_line + dup.first_line})",
                    "keep one of them",
                )
            )
        return root

    def unknown_key(self, key: Node, allowed: tuple[str, ...], where: str) -> None:
        lookalike = LOOKALIKES.get(key.text)
        if lookalike is not None:
            self.error(key, "unknown-key", lookalike[0], lookalike[1])
            return
        self.error(
            key,
            "unknown-key",
            f"unknown key '{key.text}' in {where}",
            "allowed keys: " + ", ".join(allowed),
        )

    def scalar(self, node: Node, what: str) -> str | None:
        if node.kind != "scalar":
            self.error(node, "wrong-type", f"{what} must be a single value, not {node.describe()}")
            return None
        return node.text

    def boolean(self, node: Node, what: str) -> bool | None:
        text = self.scalar(node, what)
        if text is None:
            return None
        if text.lower() in TRUE_WORDS:
            return True
        if text.lower() in FALSE_WORDS:
            return False
        self.error(node, "wrong-type", f"{what} must be true or false, not '{text}'")
        return None


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


# -- the runtime block ---------------------------------------------------------


def _check_block(doc: Document, block: FencedBlock, cap: Capability) -> list[Problem]:
    checker = _Checker(
        doc,
        _Locator(
            doc.path,
            block.content_start_line,
            block.content_column_offset,
            block.content_line_offsets,
        ),
    )
    root = checker.parse(block.content)
    if root is None:
        if not checker.problems:
            checker.problems.append(
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
        return checker.problems
    if root.kind != "map":
        checker.error(
            root,
            "wrong-type",
            f"the runtime block must be a mapping of keys, not {root.describe()}",
            "start with 'version: v1'",
        )
        return checker.problems
    for key in root.key_nodes():
        if key.text not in TOP_KEYS:
            checker.unknown_key(key, TOP_KEYS, "the runtime block")
    version = root.get("version")
    if version is None:
        checker.problems.append(
            Problem(
                doc.path,
                block.content_start_line,
                1 + block.content_column_offset,
                "error",
                "missing-key",
                "missing 'version'",
                "add 'version: v1'",
            )
        )
    else:
        text = checker.scalar(version, "'version'")
        if text is not None:
            cap.version = text
            if text not in SUPPORTED_VERSIONS:
                checker.error(
                    version,
                    "unsupported-version",
                    f"unsupported version '{text}'",
                    "supported versions: " + ", ".join(SUPPORTED_VERSIONS),
                )
    inputs = root.get("inputs")
    if inputs is not None:
        _check_inputs(checker, inputs, cap)
    workflow = root.get("workflow")
    if workflow is None:
        checker.problems.append(
            Problem(
                doc.path,
                block.content_start_line,
                1 + block.content_column_offset,
                "error",
                "missing-key",
                "missing 'workflow'",
                "add 'workflow:' with at least one step",
            )
        )
    else:
        _check_workflow(checker, workflow, cap)
    return checker.problems


def _check_inputs(checker: _Checker, node: Node, cap: Capability) -> None:
    if node.kind == "scalar" and node.text in ("", "~", "null"):
        return  # 'inputs:' with nothing under it
    if node.kind != "map":
        checker.error(
            node, "wrong-type", f"'inputs' must be a mapping of input names, not {node.describe()}"
        )
        return
    for key, value in node.pairs:
        name = key.text
        if not INPUT_NAME.match(name):
            checker.error(
                key,
                "bad-input-name",
                f"'{name}' is not a valid input name",
                "use letters, digits, '_' and '-', starting with a letter or '_'",
            )
        line, col = checker.loc.at(key)
        description: str | None = None
        required = False
        if value.kind == "scalar" and value.text in ("", "~", "null"):
            pass
        elif value.kind != "map":
            checker.error(
                value,
                "wrong-type",
                f"input '{name}' must be a mapping with description and required",
            )
        else:
            for k, v in value.pairs:
                if k.text not in INPUT_KEYS:
                    checker.unknown_key(k, INPUT_KEYS, f"input '{name}'")
                elif k.text == "description":
                    description = checker.scalar(v, f"the description of '{name}'")
                elif k.text == "required":
                    flag = checker.boolean(v, f"'required' of input '{name}'")
                    required = bool(flag)
        cap.inputs[name] = InputDecl(name, description, required, line, col)


def _check_workflow(checker: _Checker, node: Node, cap: Capability) -> None:
    if node.kind != "seq":
        checker.error(
            node,
            "wrong-type",
            f"'workflow' must be a list of steps, not {node.describe()}",
            "write each step as '- provider: ...' with 'args: [...]'",
        )
        return
    if not node.items:
        checker.error(node, "empty-workflow", "'workflow' has no steps", "add at least one step")
        return
    for index, item in enumerate(node.items, start=1):
        step = _check_step(checker, item, index)
        if step is not None:
            cap.steps.append(step)


def _check_step(checker: _Checker, node: Node, index: int) -> Step | None:
    where = f"step {index}"
    if node.kind != "map":
        checker.error(
            node, "wrong-type", f"{where} must be a mapping with 'provider' or 'binary' and 'args'"
        )
        return None
    # one pass over the keys (a step is checked on every run): the first of a repeated
    # key counts, as with Node.get (the repetition itself is reported by the parser)
    provider = binary = args_node = None
    for key, value in node.pairs:
        text = key.text
        if text == "provider":
            provider = value if provider is None else provider
        elif text == "binary":
            binary = value if binary is None else binary
        elif text == "args":
            args_node = value if args_node is None else args_node
        elif text not in STEP_KEYS:
            checker.unknown_key(key, STEP_KEYS, where)
    ok = True
    if provider is not None and binary is not None:
        checker.error(
            node,
            "provider-and-binary",
            f"{where} sets both 'provider' and 'binary'",
            "a step sets exactly one of them",
        )
        ok = False
    elif provider is None and binary is None:
        checker.error(
            node,
            "no-provider-or-binary",
            f"{where} sets neither 'provider' nor 'binary'",
            "add 'provider: NAME' (`runtime --help` lists the providers), or 'binary:' with an allowed binary",
        )
        ok = False
    provider_name = _scalar_of(checker, provider, "'provider'", where)
    binary_name = _scalar_of(checker, binary, "'binary'", where)
    args: list[Arg] = []
    if args_node is None:
        checker.error(
            node,
            "missing-key",
            f"{where} has no 'args'",
            "add 'args: [...]': the words you would type after `runtime <provider>`",
        )
        ok = False
    elif args_node.kind == "scalar" and args_node.text in ("", "~", "null") and args_node.plain:
        args = []
    elif args_node.kind != "seq":
        checker.error(
            args_node,
            "wrong-type",
            f"'args' of {where} must be a list, not {args_node.describe()}",
            "write 'args: [word, word]' or one '- word' per line",
        )
        ok = False
    else:
        at = checker.loc.at
        for item in args_node.items:
            if item.kind != "scalar":
                checker.error(
                    item,
                    "wrong-type",
                    f"each arg of {where} must be a single value, not {item.describe()}",
                    "quote it if it is meant as text",
                )
                ok = False
                continue
            line, col = at(item)
            args.append(Arg(item.text, line, col))
    if (provider is not None and provider_name is None) or (
        binary is not None and binary_name is None
    ):
        ok = False
    if not ok:
        return None
    line, col = checker.loc.at(node)
    return Step(index, provider_name, binary_name, tuple(args), line, col)


def _scalar_of(checker: _Checker, node: Node | None, key: str, where: str) -> str | None:
    if node is None:
        return None
    if node.kind == "scalar":
        return node.text
    return checker.scalar(node, f"{key} of {where}")


# -- frontmatter ---------------------------------------------------------------


def _plain(node: Node) -> Any:
    if node.kind == "scalar":
        return node.text
    if node.kind == "seq":
        return [_plain(i) for i in node.items]
    return {k.text: _plain(v) for k, v in node.pairs}


def _check_frontmatter(doc: Document, fm: Frontmatter, cap: Capability) -> list[Problem]:
    checker = _Checker(doc, _Locator(doc.path, fm.first_line, 0))
    root = checker.parse(fm.text)
    if root is None:
        return checker.problems
    if root.kind != "map":
        checker.error(
            root, "wrong-type", f"the frontmatter must be a mapping of keys, not {root.describe()}"
        )
        return checker.problems
    cap.frontmatter = _plain(root)
    name_node = root.get("name")
    if name_node is not None:
        text = checker.scalar(name_node, "'name'")
        if text is not None and not (KEBAB.match(text) and len(text) <= 64):
            checker.error(
                name_node,
                "bad-name",
                f"name '{text}' is not kebab-case",
                "use 1 to 64 lowercase letters, digits and single '-' between them",
            )
    for field_name in ("description", "compatibility"):
        value = root.get(field_name)
        if value is not None:
            checker.scalar(value, f"'{field_name}'")
    metadata = root.get("metadata")
    if metadata is None:
        return checker.problems
    if metadata.kind != "map":
        checker.error(metadata, "wrong-type", "'metadata' must be a mapping of vendor namespaces")
        return checker.problems
    for namespace, value in metadata.pairs:
        if value.kind != "map":
            checker.error(
                value, "wrong-type", f"metadata namespace '{namespace.text}' must be a mapping"
            )
    mda = metadata.get("mda")
    if mda is not None and mda.kind == "map":
        requires = mda.get("requires")
        if requires is not None:
            _check_requires(checker, requires, cap)
    ours = metadata.get("runtime")
    if ours is not None and ours.kind == "map":
        for key in ours.key_nodes():
            if key.text != "requirements":
                checker.error(
                    key,
                    "unknown-key",
                    f"unknown key '{key.text}' in metadata.runtime",
                    "the runtime namespace has: requirements",
                )
        typed = ours.get("requirements")
        if typed is not None:
            from runtime.document.typed_requirements import check_node

            check_node(checker, typed, cap)
    return checker.problems


def _string_list(checker: _Checker, node: Node, what: str) -> list[str] | None:
    if node.kind != "seq":
        checker.error(
            node,
            "requires-shape",
            f"{what} must be a list of strings, not {node.describe()}",
            'write it as ["a", "b"]',
        )
        return None
    out: list[str] = []
    for item in node.items:
        if item.kind != "scalar":
            checker.error(item, "requires-shape", f"each entry of {what} must be a string")
            return None
        out.append(item.text)
    return out


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


def _int_field(checker: _Checker, node: Node, what: str) -> None:
    if node.kind != "scalar" or not re.fullmatch(r"\d+", node.text):
        checker.error(node, "requires-shape", f"{what} must be a non-negative integer")


def _list_field(checker: _Checker, node: Node, what: str) -> None:
    _string_list(checker, node, what)


def _bool_field(checker: _Checker, node: Node, what: str) -> None:
    if node.kind != "scalar" or node.text.lower() not in ("true", "false"):
        checker.error(node, "requires-shape", f"{what} must be true or false")


def _object_fields(
    checker: _Checker, node: Node, what: str, fields: dict[str, Callable[[Node], None]]
) -> None:
    if node.kind != "map":
        checker.error(node, "requires-shape", f"{what} must be a mapping")
        return
    for key, value in node.pairs:
        check = fields.get(key.text)
        if check is None:
            checker.warn(
                key,
                "requires-unknown-field",
                f"unknown field '{key.text}' in {what} (ignored)",
                "known fields: " + ", ".join(fields),
            )
        else:
            check(value)


def _check_requires(checker: _Checker, node: Node, cap: Capability) -> None:
    if node.kind != "map":
        checker.error(node, "requires-shape", "'metadata.mda.requires' must be a mapping of keys")
        return
    cap.requires = _plain(node)
    for key, value in node.pairs:
        name = key.text
        cap.requires_lines[name] = checker.loc.at(key)[0]
        if not (KEBAB.match(name) and 1 <= len(name) <= 64):
            checker.error(
                key,
                "requires-key",
                f"requires key '{name}' is not kebab-case",
                "keys are 1 to 64 lowercase letters and digits with single '-' between them",
            )
            continue
        what = f"requires.{name}"
        if name == "runtime":
            entries = _string_list(checker, value, what)
            for item, entry in zip(value.items if entries else [], entries or [], strict=False):
                if parse_runtime_constraint(entry) is None:
                    checker.error(
                        item,
                        "requires-shape",
                        f"'{entry}' is not a runtime constraint",
                        "write <runtime>[<comparator><version>], for example python>=3.11",
                    )
        elif name in ("tools", "packages"):
            _string_list(checker, value, what)
        elif name == "network":
            if value.kind == "scalar":
                if value.text not in ("none", "local", "public"):
                    checker.error(
                        value,
                        "requires-shape",
                        f"network '{value.text}' is not none, local or public",
                        "or give a list of host globs",
                    )
            else:
                _string_list(checker, value, what)
        elif name == "model":
            _object_fields(
                checker,
                value,
                what,
                {
                    "min-context": lambda n: _int_field(checker, n, "model.min-context"),
                    "tools-required": lambda n: _bool_field(checker, n, "model.tools-required"),
                    "vision": lambda n: _bool_field(checker, n, "model.vision"),
                },
            )
        elif name == "cost-hints":
            _object_fields(
                checker,
                value,
                what,
                {
                    "tokens-per-call": lambda n: _int_field(
                        checker, n, "cost-hints.tokens-per-call"
                    ),
                    "seconds-per-call": lambda n: _int_field(
                        checker, n, "cost-hints.seconds-per-call"
                    ),
                    "paid-apis": lambda n: _list_field(checker, n, "cost-hints.paid-apis"),
                },
            )
        else:
            checker.warn(
                key,
                "requires-unknown-key",
                f"requires key '{name}' is not a standard key; it is kept but not checked",
                "standard keys: runtime, tools, network, packages, model, cost-hints",
            )


def references(text: str) -> list[re.Match[str]]:
    """``${name}`` references in an arg. ``${{ expr }}`` (GitHub Actions) is not one."""
    if "${" not in text:  # most args: no scan (a reference starts with "${")
        return []
    return list(REFERENCE.finditer(text))
