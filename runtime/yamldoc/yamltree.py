"""YAML to a small positioned tree, parsed by strictyaml's loader.

strictyaml stays the parser: its scanner refuses tags and anchors, and every
scalar stays the text the author typed (``-5``, ``true``, ``null`` are text).
Flow style (``args: [read, ./a.txt]``) is enabled deliberately, because the
grammar reference uses it. strictyaml's schema validators are not used: they
deep-copy the document for each node they locate (quadratic in size) and stop
at the first error, so every schema (the capability grammar, the policy, the
config) is checked on this tree by :mod:`runtime.yamldoc.schema`, which
reports every problem with its position.

Documents written in the plain subset capabilities mostly use are composed
by :mod:`runtime.yamldoc.yamlfast` into the identical tree (tested against this
loader); anything outside that subset, and every error, is strictyaml's. The
tree's types live in :mod:`runtime.yamldoc.yamlnode`, which both import.
"""

from __future__ import annotations

from typing import Any

from runtime.yamldoc import yamlfast
from runtime.yamldoc.yamlnode import MAX_DEPTH, MAX_NODES, DuplicateKey, Node, YamlError

__all__ = ["MAX_DEPTH", "MAX_NODES", "DuplicateKey", "Node", "YamlError", "parse", "slow_parse"]


_LOADER: Any = None


def _loader_class() -> Any:
    """strictyaml's bundled reader, scanner, parser and composer, without round-trip comments.

    strictyaml's own loader keeps comments (round trip), which costs about a third of
    the parse and which nothing here needs. The refusals strictyaml applies while
    scanning (tags such as ``!!str``, anchors ``&a``) are applied the same way here.
    """
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    from strictyaml import exceptions as sx
    from strictyaml.ruamel import tokens
    from strictyaml.ruamel.composer import Composer
    from strictyaml.ruamel.parser import Parser
    from strictyaml.ruamel.reader import Reader
    from strictyaml.ruamel.resolver import BaseResolver
    from strictyaml.ruamel.scanner import Scanner

    class TextOnlyResolver(BaseResolver):  # type: ignore[misc]
        """Every scalar is text: no implicit typing (``yes``, ``1e3`` stay as typed)."""

        processing_version = (1, 2)

        def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
            return "tag:yaml.org,2002:str"

    class RefusingScanner(Scanner):  # type: ignore[misc]
        def check_token(self, *choices: Any) -> bool:
            found: bool = Scanner.check_token(self, *choices)
            if found and self.tokens:
                token = self.tokens[0]
                if isinstance(token, tokens.TagToken):
                    raise sx.TagTokenDisallowed(
                        "While scanning", token.end_mark, "tags are not allowed", token.start_mark
                    )
                if isinstance(token, tokens.AnchorToken):
                    raise sx.AnchorTokenDisallowed(
                        "While scanning",
                        token.start_mark,
                        "anchors are not allowed",
                        token.end_mark,
                    )
            return found

    class Loader(Reader, RefusingScanner, Parser, Composer, TextOnlyResolver):  # type: ignore[misc]
        nodes = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            # a budget of nodes bounds the time of any document
            self.nodes += 1
            if self.nodes > MAX_NODES:
                mark = self.parser.peek_event().start_mark
                raise YamlError(
                    mark.line,
                    mark.column,
                    f"the YAML has more than {MAX_NODES} values, the limit for one document",
                    "split the workflow into smaller capabilities",
                )
            return Composer.compose_node(self, parent, index)

        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream, loader=self)
            RefusingScanner.__init__(self, loader=self)  # type: ignore[call-arg]
            Parser.__init__(self, loader=self)
            Composer.__init__(self, loader=self)
            TextOnlyResolver.__init__(self, loadumper=self)  # type: ignore[call-arg]

    _LOADER = Loader
    return Loader


def parse(text: str, label: str = "<capability>") -> tuple[Node | None, list[DuplicateKey]]:
    """Parse one YAML document. Raises :class:`YamlError` on a syntax error.

    The common plain subset is composed by :mod:`runtime.yamldoc.yamlfast`; everything
    else (errors included) is parsed by strictyaml.
    """
    fast = yamlfast.compose(text)
    if fast is not None:
        return fast
    return slow_parse(text)


def slow_parse(text: str) -> tuple[Node | None, list[DuplicateKey]]:
    """:func:`parse` by strictyaml's loader alone (the reference for the fast path)."""
    from strictyaml.ruamel.error import MarkedYAMLError
    from strictyaml.ruamel.reader import ReaderError

    loader = None
    try:
        loader = _loader_class()(text)
        raw = loader.get_single_node()
    except MarkedYAMLError as exc:
        raise _translate(exc) from None
    except ReaderError as exc:  # a control character YAML does not allow (ESC, DEL, U+FFFE...)
        line, column = _offset_position(text, int(getattr(exc, "position", 0) or 0))
        code = (
            int(getattr(exc, "character", 0) or 0)
            if isinstance(getattr(exc, "character", 0), int)
            else 0
        )
        shown = f"U+{code:04X}" if code else "a control character"
        raise YamlError(
            line,
            column,
            f"{shown} is not allowed in YAML",
            "remove it, or write it escaped inside a double-quoted string",
        ) from None
    except RecursionError:
        raise YamlError(0, 0, "the YAML is nested too deeply", None) from None
    finally:
        if loader is not None:
            loader.dispose()
    if raw is None:
        return None, []
    duplicates: list[DuplicateKey] = []
    return _convert(raw, duplicates, 0), duplicates


def _offset_position(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    return before.count("\n"), offset - (before.rfind("\n") + 1)


def _convert(raw: object, duplicates: list[DuplicateKey], depth: int) -> Node:
    from strictyaml.ruamel import nodes

    mark = raw.start_mark  # type: ignore[attr-defined]
    if depth > MAX_DEPTH:
        raise YamlError(
            mark.line, mark.column, f"the YAML is nested deeper than {MAX_DEPTH} levels"
        )
    if isinstance(raw, nodes.MappingNode):
        pairs: list[tuple[Node, Node]] = []
        node = Node("map", mark.line, mark.column, pairs=pairs)
        seen: dict[str, Node] = {}
        for key_raw, value_raw in raw.value:
            key = _convert(key_raw, duplicates, depth + 1)
            value = _convert(value_raw, duplicates, depth + 1)
            if key.kind == "scalar":
                first = seen.get(key.text)
                if first is not None:
                    duplicates.append(DuplicateKey(key.text, key.line, key.column, first.line))
                    continue
                seen[key.text] = key
            pairs.append((key, value))
        return node
    if isinstance(raw, nodes.SequenceNode):
        node = Node(
            "seq",
            mark.line,
            mark.column,
            items=[_convert(item, duplicates, depth + 1) for item in raw.value],
        )
        return node
    style = getattr(raw, "style", None)
    value = raw.value  # type: ignore[attr-defined]
    return Node("scalar", mark.line, mark.column, text=str(value), plain=style is None)


def _translate(exc: object) -> YamlError:
    from strictyaml import exceptions as sx

    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line, column = (mark.line, mark.column) if mark is not None else (0, 0)
    problem = str(getattr(exc, "problem", "") or "").strip()
    if isinstance(exc, sx.TagTokenDisallowed):
        return YamlError(
            line,
            column,
            "YAML tags (such as !!str) are not allowed: every value is plain text",
            "remove the tag; quote the value if the text itself starts with '!'",
        )
    if isinstance(exc, sx.AnchorTokenDisallowed):
        start = getattr(
            exc, "context_mark", None
        )  # strictyaml passes the anchor's start as context
        if start is not None:
            line, column = start.line, start.column
        return YamlError(
            line,
            column,
            "YAML anchors (&name) are not allowed",
            "write the value out in full; quote it if '&' is part of the text",
        )
    if "found undefined alias" in problem:
        return YamlError(
            line,
            column,
            "YAML aliases (*name) are not allowed",
            "write the value out in full; quote it if '*' is part of the text",
        )
    context = str(getattr(exc, "context", "") or "").strip()
    message = f"YAML syntax error: {problem}" if problem else "YAML syntax error"
    if context and context.lower() not in ("while scanning", "while parsing"):
        message += f" ({context})"
    return YamlError(line, column, message, _syntax_hint(problem))


def _syntax_hint(problem: str) -> str | None:
    if "mapping values are not allowed" in problem:
        return "a value containing ': ' must be quoted"
    if "found character '\\t'" in problem or "tab" in problem:
        return "indent with spaces, not tabs"
    if "expected ',' or ']'" in problem:
        if "got '{'" in problem:
            # `[${x}]`: YAML reads the '{' of an unquoted reference as a mapping's start
            return "an unquoted '{' starts a mapping inside [...]: quote the value, as in [\"${name}\"]"
        return "close the list with ']' or quote values that contain ',' or ']'"
    return None
