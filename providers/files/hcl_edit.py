"""Terraform edits that change only the bytes they must: ``terraform set-attribute`` and
``terraform update-provider``.

tree-sitter with the HCL grammar parses the file and gives each node its exact byte
range; an edit writes the new expression over the old one's bytes, or a new line after
the last attribute of the block (with the indentation and line endings of its
neighbours) where the block has none. Comments, heredocs, nested blocks, alignment and
everything else stay byte for byte. A file the grammar cannot read without an error is
not edited (its first error is named), and neither is one the edit would make
unreadable.

``set-attribute`` takes its VALUE as an HCL expression, written as it is: ``'"main"'``
is the string main, ``var.branch`` a reference, ``true`` a boolean; a value that is no
expression is refused before anything runs. It sets the attribute in each top-level
block of the type given whose labels, joined by ``.``, are the label given (every block
of the type without ``--label``).

``update-provider`` sets the version constraint of each ``required_providers`` entry
whose source is SOURCE (compared as Terraform compares them: case-insensitively, the
registry's host implied), adding one after its source where the entry has none, and,
with ``--terraform-version``, the ``required_version`` of each ``terraform`` block that
has one. Each constraint is written as an HCL string.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from providers.files.batch import ArgumentProblem, EditFailure

_REGISTRY = "registry.terraform.io"
_PARSER: Any = None


def _parser() -> Any:
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_hcl

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_hcl.language()))
    return _PARSER


def _first_error(node: Any) -> Any | None:
    if node.type == "ERROR" or node.is_missing:
        return node
    if not node.has_error:
        return None
    for child in node.children:
        found = _first_error(child)
        if found is not None:
            return found
    return node


def _parse(data: bytes) -> Any:
    tree = _parser().parse(data)
    error = _first_error(tree.root_node)
    if error is not None:
        row, column = error.start_point
        line = data.split(b"\n")[row] if row < data.count(b"\n") + 1 else b""
        raise EditFailure(
            "not valid HCL: the grammar cannot read it here",
            row + 1,
            len(line[:column].decode("utf-8", "replace")) + 1,
        )
    return tree


# -- arguments ------------------------------------------------------------------------


def expression_problem(value: str) -> str | None:
    """Why ``value`` is not one HCL expression, or None."""
    if not value.strip():
        return "is empty"
    root = _parser().parse(f"x = {value}\n".encode()).root_node
    bodies = _children(root, "body")
    if root.has_error or len(bodies) != 1:
        return "is not an HCL expression"
    if len(bodies[0].children) != 1 or bodies[0].children[0].type != "attribute":
        return "is more than one HCL expression"
    return None


def constraint_problem(value: str) -> str | None:
    if not value.strip():
        return "is empty"
    if "\n" in value or "\r" in value:
        return "holds a line break"
    return None


def argument_problems(operation: str, options: Mapping[str, str]) -> list[ArgumentProblem]:
    found = []
    if operation == "terraform set-attribute":
        if "value" in options:
            problem = expression_problem(options["value"])
            if problem is not None:
                found.append(
                    ArgumentProblem(
                        "value",
                        f"--value {options['value']!r} {problem}",
                        "--value is HCL as it would stand after '=': quote a string "
                        "('\"main\"'), or write a reference (var.branch), a number or a boolean",
                    )
                )
        for key in ("block", "attribute"):
            name = options.get(key)
            if name is not None and not _identifier(name):
                found.append(
                    ArgumentProblem(
                        key,
                        f"--{key} {name!r} is not an HCL name",
                        "a name: letters, digits, _ and -",
                    )
                )
    if operation == "terraform update-provider":
        source = options.get("source")
        if source is not None and not 2 <= len(source.split("/")) <= 3:
            found.append(
                ArgumentProblem(
                    "source",
                    f"--source {source!r} is not a provider source (NAMESPACE/TYPE)",
                    "as required_providers writes it: hashicorp/google",
                )
            )
        for key in ("version", "terraform_version"):
            if key in options and (problem := constraint_problem(options[key])) is not None:
                flag = "--" + key.replace("_", "-")
                found.append(ArgumentProblem(key, f"{flag} {problem}", "a constraint: '~> 5.0'"))
    return found


def _identifier(name: str) -> bool:
    return (
        bool(name)
        and (name[0].isalpha() or name[0] == "_")
        and all(c.isalnum() or c in "_-" for c in name)
    )


def _checked(operation: str, options: Mapping[str, str]) -> None:
    problems = argument_problems(operation, options)
    if problems:
        raise problems[0]


def _string(value: str) -> str:
    """``value`` as an HCL quoted string (its template sequences escaped)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("${", "$${").replace("%{", "%%{") + '"'


# -- the tree -----------------------------------------------------------------------------


def _children(node: Any, kind: str) -> list[Any]:
    return [c for c in node.children if c.type == kind]


def _text(data: bytes, node: Any) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8")


def _blocks(data: bytes, root: Any) -> Iterator[tuple[Any, str, list[str]]]:
    """Each top-level block: the node, its type, its labels."""
    for body in _children(root, "body"):
        for block in _children(body, "block"):
            kind, labels = "", []
            for child in block.children:
                if child.type == "identifier" and not kind:
                    kind = _text(data, child)
                elif child.type == "identifier":
                    labels.append(_text(data, child))
                elif child.type == "string_lit":
                    labels.append(_text(data, child)[1:-1])
            yield block, kind, labels


def _body(block: Any) -> Any | None:
    found = _children(block, "body")
    return found[0] if found else None


def _attributes(data: bytes, body: Any | None) -> list[tuple[str, Any]]:
    if body is None:
        return []
    return [(_text(data, a.children[0]), a) for a in _children(body, "attribute")]


def _expression(attribute: Any) -> Any:
    return next(c for c in attribute.children if c.type == "expression")


def _line_start(data: bytes, at: int) -> int:
    return data.rfind(b"\n", 0, at) + 1


def _line_end(data: bytes, at: int) -> int:
    end = data.find(b"\n", at)
    end = len(data) if end < 0 else end
    return end - 1 if end > 0 and data[end - 1 : end] == b"\r" else end


def _indent(data: bytes, node: Any) -> bytes:
    start = _line_start(data, node.start_byte)
    return data[start : node.start_byte]


def _newline(data: bytes) -> bytes:
    return b"\r\n" if b"\r\n" in data else b"\n"


Edit = tuple[int, int, bytes]  # replace data[start:end] with the bytes


def _add_attribute(data: bytes, block: Any, name: str, value: str) -> Edit:
    """A new ``name = value`` line in ``block``: after its last attribute, with that one's
    indentation; else first in the block, indented one step more than the block."""
    nl = _newline(data)
    body = _body(block)
    attributes = _attributes(data, body)
    if attributes:
        last = attributes[-1][1]
        at = _line_end(data, last.end_byte)
        return at, at, nl + _indent(data, last) + f"{name} = {value}".encode()
    start = next(c for c in block.children if c.type == "block_start")
    end = next(c for c in block.children if c.type == "block_end")
    outer = _indent(data, block)
    inner = _indent(data, body.children[0]) if body is not None and body.children else outer + b"  "
    line = inner + f"{name} = {value}".encode()
    if data.count(b"\n", start.end_byte, end.start_byte) == 0:  # `module "x" {}`
        return start.end_byte, end.start_byte, nl + line + nl + outer
    at = _line_end(data, start.end_byte)
    return at, at, nl + line


def _apply(data: bytes, edits: list[Edit]) -> bytes:
    out, last = [], 0
    for start, end, new in sorted(edits):
        out += [data[last:start], new]
        last = end
    out.append(data[last:])
    return b"".join(out)


class _Editor:
    def edits(self, data: bytes, root: Any) -> tuple[list[Edit], int]:
        raise NotImplementedError

    def edit(self, text: str) -> tuple[str, int]:
        data = text.encode("utf-8")
        tree = _parse(data)
        edits, matches = self.edits(data, tree.root_node)
        edits = [e for e in edits if data[e[0] : e[1]] != e[2]]
        if not edits:
            return text, matches
        new = _apply(data, edits)
        try:
            _parse(new)
        except EditFailure:
            start = edits[0][0]
            line = data.count(b"\n", 0, start) + 1
            raise EditFailure(
                "the edit would leave the file unreadable as HCL",
                line,
                start - _line_start(data, start) + 1,
            ) from None
        return new.decode("utf-8"), matches


class _SetAttribute(_Editor):
    def __init__(self, block: str, label: str | None, attribute: str, value: str) -> None:
        self.block, self.label, self.attribute, self.value = block, label, attribute, value

    def edits(self, data: bytes, root: Any) -> tuple[list[Edit], int]:
        edits: list[Edit] = []
        matches = 0
        for block, kind, labels in _blocks(data, root):
            if kind != self.block or (self.label is not None and ".".join(labels) != self.label):
                continue
            matches += 1
            found = [a for name, a in _attributes(data, _body(block)) if name == self.attribute]
            if found:
                expression = _expression(found[-1])
                edits.append((expression.start_byte, expression.end_byte, self.value.encode()))
            else:
                edits.append(_add_attribute(data, block, self.attribute, self.value))
        return edits, matches


def _source(text: str) -> str:
    parts = text.strip().lower().split("/")
    return "/".join([_REGISTRY, *parts] if len(parts) == 2 else parts)


def _literal(data: bytes, expression: Any) -> str | None:
    """The text of a string literal without interpolation, else None."""
    node = expression
    while node.type in ("expression", "literal_value") and node.children:
        node = node.children[0]
    if node.type != "string_lit":
        return None
    if any(c.type == "template_interpolation" for c in node.children):
        return None
    return _text(data, node)[1:-1]


def _key(data: bytes, elem: Any) -> str:
    text = _text(data, elem.children[0])
    return text[1:-1] if text.startswith('"') else text


class _UpdateProvider(_Editor):
    def __init__(self, source: str, version: str, terraform_version: str | None) -> None:
        self.source = _source(source)
        self.version = _string(version).encode()
        self.terraform = _string(terraform_version).encode() if terraform_version else None

    def edits(self, data: bytes, root: Any) -> tuple[list[Edit], int]:
        edits: list[Edit] = []
        for block, kind, _ in _blocks(data, root):
            if kind != "terraform":
                continue
            body = _body(block)
            if self.terraform is not None:
                for name, attribute in _attributes(data, body):
                    if name == "required_version":
                        expression = _expression(attribute)
                        edits.append((expression.start_byte, expression.end_byte, self.terraform))
            for inner in _children(body, "block") if body is not None else []:
                if _text(data, inner.children[0]) == "required_providers":
                    for name, attribute in _attributes(data, _body(inner)):
                        edits += self._provider(data, name, _expression(attribute))
        return edits, len(edits)

    def _provider(self, data: bytes, name: str, expression: Any) -> list[Edit]:
        shorthand = _literal(data, expression)
        if shorthand is not None:  # `google = "~> 4.0"`: the source is hashicorp/NAME
            if _source(f"hashicorp/{name}") == self.source:
                return [(expression.start_byte, expression.end_byte, self.version)]
            return []
        objects = [n for n in _descendants(expression) if n.type == "object"]
        if not objects:
            return []
        elems = _children(objects[0], "object_elem")
        by_key = {_key(data, e): e for e in elems}
        source = by_key.get("source")
        given = _literal(data, source.children[-1]) if source is not None else None
        if given is None or _source(given) != self.source:
            return []
        version = by_key.get("version")
        if version is not None:
            value = version.children[-1]
            return [(value.start_byte, value.end_byte, self.version)]
        assert source is not None
        if data.count(b"\n", objects[0].start_byte, objects[0].end_byte):
            at = _line_end(data, source.end_byte)
            return [(at, at, _newline(data) + _indent(data, source) + b"version = " + self.version)]
        return [(source.end_byte, source.end_byte, b", version = " + self.version)]


def _descendants(node: Any) -> Iterator[Any]:
    yield node
    for child in node.children:
        yield from _descendants(child)


def set_attribute(options: Mapping[str, str]) -> _Editor:
    _checked("terraform set-attribute", options)
    return _SetAttribute(
        options["block"], options.get("label"), options["attribute"], options["value"]
    )


def update_provider(options: Mapping[str, str]) -> _Editor:
    _checked("terraform update-provider", options)
    return _UpdateProvider(options["source"], options["version"], options.get("terraform_version"))
