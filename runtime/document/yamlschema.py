"""Closed schemas for small YAML files (policy, config), checked on strictyaml's parse tree.

strictyaml parses (its refusals of tags, anchors and implicit typing stay); the
schema is checked here in one walk, with every problem at its position. This
replaces strictyaml's validators, which deep-copy the document for each node
(about 0.3 s for the default policy alone, measured in bench/ figure 2).

A shape is ``"str"``, ``"number"``, ``"bool"`` (``true`` or ``false``), ``("regex", pattern, description)``,
``("list", shape)``, ``("map", shape)`` (any keys, each value of shape) or a
``dict`` of known keys (a closed mapping; every key optional).
"""

from __future__ import annotations

import re
from typing import Any

from runtime.document.yamltree import Node, YamlError, parse
from runtime.problems import Problem

Shape = Any


def load(
    text: str, label: str, schema: dict[str, Shape], kind: str
) -> tuple[dict[str, Any], list[Problem]]:
    """Parse ``text`` and check it against ``schema``; (data, problems)."""
    problems: list[Problem] = []

    def problem(line: int, col: int, message: str, hint: str | None = None) -> None:
        problems.append(
            Problem(label, line + 1, col + 1, "error", f"invalid-{kind}", message, hint)
        )

    try:
        root, duplicates = parse(text, label)
    except YamlError as exc:
        problem(exc.line, exc.column, exc.message, exc.hint)
        return {}, problems
    for dup in duplicates:
        problem(
            dup.line, dup.column, f"duplicate key '{dup.key}' (first on line {dup.first_line + 1})"
        )
    if root is None:
        return {}, problems
    if root.kind == "scalar" and root.text in ("", "~", "null"):
        return {}, problems
    data = _check(root, schema, kind, problem, "the file")
    return (data if isinstance(data, dict) else {}), problems


def _check(node: Node, shape: Shape, kind: str, problem: Any, where: str) -> Any:
    if isinstance(shape, dict):
        if node.kind != "map":
            problem(node.line, node.column, f"{where} must be a mapping, not {node.describe()}")
            return None
        out: dict[str, Any] = {}
        for key, value in node.pairs:
            if key.text not in shape:
                problem(
                    key.line,
                    key.column,
                    f"unknown {kind} key '{key.text}'",
                    "known keys: " + ", ".join(shape),
                )
                continue
            checked = _check(value, shape[key.text], kind, problem, f"'{key.text}'")
            if checked is not None:
                out[key.text] = checked
        return out
    if isinstance(shape, tuple) and shape[0] == "list":
        if node.kind != "seq":
            problem(node.line, node.column, f"{where} must be a list, not {node.describe()}")
            return None
        items = [
            _check(item, shape[1], kind, problem, f"each entry of {where}") for item in node.items
        ]
        return [i for i in items if i is not None]
    if isinstance(shape, tuple) and shape[0] == "map":
        if node.kind != "map":
            problem(node.line, node.column, f"{where} must be a mapping, not {node.describe()}")
            return None
        result = {}
        for key, value in node.pairs:
            checked = _check(value, shape[1], kind, problem, f"'{key.text}'")
            if checked is not None:
                result[key.text] = checked
        return result
    if node.kind != "scalar":
        problem(node.line, node.column, f"{where} must be a single value, not {node.describe()}")
        return None
    if shape == "str":
        return node.text
    if shape == "bool":
        if node.text in ("true", "false"):
            return node.text == "true"
        problem(node.line, node.column, f"{where} must be true or false, not '{node.text}'")
        return None
    if shape == "number":
        try:
            return float(node.text)
        except ValueError:
            problem(node.line, node.column, f"{where} must be a number, not '{node.text}'")
            return None
    if isinstance(shape, tuple) and shape[0] == "regex":
        if re.fullmatch(shape[1], node.text):
            return node.text
        problem(node.line, node.column, f"{where} must be {shape[2]}, not '{node.text}'")
        return None
    raise ValueError(f"unknown shape {shape!r}")  # pragma: no cover - a schema bug
