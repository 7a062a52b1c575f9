"""The YAML fast path against strictyaml: whenever it accepts a document, the trees are equal.

Documents are generated around the subset the fast path knows (tricky
characters, odd indentation, comments, quotes, duplicates) and mutated one
character at a time, so both sides of its boundary are exercised.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from runtime.document.loader import load_document
from runtime.yamldoc import yamlfast, yamltree

ROOT = Path(__file__).resolve().parents[2]

# Characters that matter to YAML's plain scalars, quotes and comments.
# (U+2028/U+2029 are line breaks in YAML 1.1; U+FEFF is a byte order mark)
TRICKY = " -?:,[]{}#&*!|>'\"%@`\\$./=+~\t\u00e9\u2603\u0085\x7f\u2028\u2029\ufeff\r"
KEY = st.from_regex(r"[a-z0-9_][a-z0-9_.-]{0,5}", fullmatch=True)
# mostly keys the fast path takes, sometimes one starting with '-' or '.'
WORD = st.one_of(KEY, KEY, KEY, st.text("abcdefxyz012_-.", min_size=1, max_size=6))
# Arguments as capabilities write them: words, paths, options, inputs.
ARG = st.from_regex(r"(--?)?[a-z][a-z0-9_./=]{0,8}|\"[a-z ${}./]{0,8}\"", fullmatch=True)
SIMPLE = st.text("abcxyz 019_./=$", min_size=1, max_size=10).map(str.strip).filter(bool)
# mostly values the fast path takes, sometimes one with YAML's special characters
VALUE = st.one_of(
    SIMPLE, SIMPLE, SIMPLE, SIMPLE, st.text("abcxyz 019_./=${}" + TRICKY, max_size=10)
)


def slow(text: str) -> object:
    try:
        return yamltree.slow_parse(text)
    except yamltree.YamlError as error:
        return error


def check(text: str) -> tuple[yamltree.Node, list[yamltree.DuplicateKey]] | None:
    fast = yamlfast.compose(text)
    if fast is not None:
        assert fast == slow(text), text
    return fast


def scalar(draw: st.DrawFn, values: st.SearchStrategy[str]) -> str:
    value = draw(values)
    style = draw(st.sampled_from(["plain", "plain", "single", "double"]))
    if style == "single":
        return "'" + value.replace("'", "''") + "'"
    if style == "double":
        return '"' + value.replace('"', "") + '"'
    return value


def flow(draw: st.DrawFn, values: st.SearchStrategy[str]) -> str:
    items = [scalar(draw, values) for _ in range(draw(st.integers(0, 4)))]
    spaces = draw(st.sampled_from(["", " ", "  "]))
    return "[" + ("," + spaces).join(items) + "]"


def comment(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(["", "", "", "", "", " # note", " #", "# x"]))


def block(draw: st.DrawFn, indent: int, depth: int, values: st.SearchStrategy[str]) -> list[str]:
    """Lines of a block mapping or list whose entries start at column ``indent``."""
    pad = " " * indent
    lines: list[str] = []
    if depth < 3 and draw(st.booleans()) and draw(st.booleans()):
        for _ in range(draw(st.integers(1, 3))):
            gap = " " * draw(st.sampled_from([1, 1, 1, 2, 3]))
            kind = draw(st.sampled_from(["scalar", "flow", "map"]))
            if kind == "map":
                inner = block_mapping(draw, indent + 1 + len(gap), depth + 1, values)
                lines.append(pad + "-" + gap + inner[0].lstrip(" "))
                lines.extend(inner[1:])
            else:
                value = scalar(draw, values) if kind == "scalar" else flow(draw, values)
                lines.append(pad + "-" + gap + value + comment(draw))
        return lines
    return block_mapping(draw, indent, depth, values)


def block_mapping(
    draw: st.DrawFn, indent: int, depth: int, values: st.SearchStrategy[str]
) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        key = draw(WORD)
        kind = draw(st.sampled_from(["scalar", "scalar", "flow", "nested", "indentless"]))
        if kind in ("nested", "indentless") and depth < 3:
            lines.append(pad + key + ":" + comment(draw))
            if draw(st.booleans()):
                lines.append(draw(st.sampled_from(["", "# between", "   # between"])))
            step = 0 if kind == "indentless" else draw(st.sampled_from([1, 2, 2, 4]))
            lines.extend(block(draw, indent + step, depth + 1, values))
        else:
            value = flow(draw, values) if kind == "flow" else scalar(draw, values)
            lines.append(
                pad + key + ":" + draw(st.sampled_from([" ", "  "])) + value + comment(draw)
            )
    return lines


@st.composite
def documents(draw: st.DrawFn, values: st.SearchStrategy[str] = VALUE) -> str:
    return "\n".join(block(draw, draw(st.sampled_from([0, 0, 0, 2])), 0, values)) + "\n"


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(documents())
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        char = draw(st.sampled_from(list(TRICKY + "\n a")))
        if action == "insert":
            text = text[:position] + char + text[position:]
        elif action == "delete":
            text = text[:position] + text[position + 1 :]
        else:
            text = text[:position] + char + text[position + 1 :]
    return text


SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(documents())
@example("a: 1\nb:\n  - x\n  - [y, 'z''s', \"w\"]\n")
@example("k: v # c\nk: again\n")
def test_generated_documents_compose_as_strictyaml_does(text: str) -> None:
    check(text)


@SETTINGS
@given(documents(SIMPLE))
def test_documents_of_plain_values_compose_as_strictyaml_does(text: str) -> None:
    check(text)


@contextlib.contextmanager
def node_budget(limit: int) -> Iterator[None]:
    """Both paths held to a budget of ``limit`` nodes (MAX_NODES) for a while."""
    with (
        mock.patch.object(yamlfast, "MAX_NODES", limit),
        mock.patch.object(yamltree, "MAX_NODES", limit),
    ):
        yield


@SETTINGS
@given(documents(SIMPLE))
def test_the_node_budget_means_the_same_on_both_paths(text: str) -> None:
    """The smallest budget the fast path takes a document at is strictyaml's too."""
    if yamlfast.compose(text) is None:
        return
    low, high = 0, yamltree.MAX_NODES  # the fast path declines at low, takes it at high
    while high - low > 1:
        middle = (low + high) // 2
        with node_budget(middle):
            taken = yamlfast.compose(text) is not None
        low, high = (low, middle) if taken else (middle, high)
    with node_budget(high):
        assert yamltree.slow_parse(text) == yamlfast.compose(text)
    with node_budget(low), pytest.raises(yamltree.YamlError, match="more than"):
        yamltree.slow_parse(text)


def test_a_document_over_the_node_budget_is_refused_by_strictyaml_as_before() -> None:
    steps = yamltree.MAX_NODES // 8 + 1  # each step: a mapping, 2 keys, a value, a 3-item list
    text = "workflow:\n" + "  - provider: files\n    args: [read, ./a, b]\n" * steps
    assert yamlfast.compose(text) is None
    with pytest.raises(yamltree.YamlError, match="more than"):
        yamltree.parse(text)


@SETTINGS
@given(mutated())
def test_mutated_documents_compose_as_strictyaml_does_or_are_declined(text: str) -> None:
    check(text)


# One flow list, its items made of YAML's indicators and plain characters: the
# split-at-commas reading of plain lists must take exactly what strictyaml takes.
FLOW_ITEM = st.one_of(ARG, st.text("ab-?:#&*!|>%@`~ ", max_size=4), st.sampled_from(["", " "]))


@SETTINGS
@given(st.lists(FLOW_ITEM, max_size=4), st.sampled_from([",", ", ", " ,", " , "]))
@example(["a #b"], ",")
@example(["?x", "a: b"], ",")
def test_flow_lists_of_indicators_compose_as_strictyaml_does(items: list[str], sep: str) -> None:
    check("args: [" + sep.join(items) + "]\nnext: x\n")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["files", "github"]), st.lists(ARG, max_size=4)),
        min_size=1,
        max_size=6,
    )
)
def test_plain_workflows_take_the_fast_path(steps: list[tuple[str, list[str]]]) -> None:
    lines = ["version: v1", "", "workflow:"]
    for provider, args in steps:
        lines += [f"  - provider: {provider}", f"    args: [{', '.join(args)}]"]
    assert check("\n".join(lines) + "\n") is not None


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\n",  # anchor
        "a: *x\n",  # alias
        "a: !!str 1\n",  # tag
        "a: |\n  text\n",  # block scalar
        "a: b\n  c\n",  # a multi-line plain value
        "a:\n",  # an empty value
        'a: "x\\ty"\n',  # an escape
        "a: {b: c}\n",  # a flow mapping
        "a: [b,\n  c]\n",  # a flow list over two lines
        "a: [b, c,]\n",  # a trailing comma
        "a:\tb\n",  # a tab
        "---\na: b\n",  # a document marker
        "a: b: c\n",  # ': ' inside a plain value
        "- - a\n",  # a nested list on one line
        "0: \u2028\n",  # a line separator (a line break to strictyaml's reader)
        "a: x\u2029y\n",  # a paragraph separator, likewise
        "",  # an empty document
    ],
)
def test_what_the_fast_path_leaves_to_strictyaml(text: str) -> None:
    assert yamlfast.compose(text) is None
    # and the public parser still answers as strictyaml does
    try:
        assert yamltree.parse(text) == yamltree.slow_parse(text)
    except yamltree.YamlError as error:
        with pytest.raises(yamltree.YamlError) as again:
            yamltree.slow_parse(text)
        assert again.value == error


def test_the_shipped_capabilities_take_the_fast_path_with_the_same_tree() -> None:
    texts = []
    for path in sorted((ROOT / "examples").glob("*.md")):
        doc = load_document(path)
        assert doc.runtime_block is not None
        texts.append(doc.runtime_block.content)
        if doc.frontmatter is not None:
            texts.append(doc.frontmatter.text)
    assert texts
    for text in texts:
        assert check(text) is not None, text


# What the fast path reads as text: '\n' and these ranges (the rest is left to strictyaml).
TEXT_RANGES = [
    (0x20, 0x7E),
    (0xA0, 0x2027),
    (0x202A, 0xD7FF),
    (0xE000, 0xFEFE),
    (0xFF00, 0xFFFD),
    (0x10000, 0x10FFFF),
]


def test_the_characters_left_to_strictyaml_are_exactly_those_outside_the_text_ranges() -> None:
    def is_text(code: int) -> bool:
        return code == 0x0A or any(low <= code <= high for low, high in TEXT_RANGES)

    # every code point, surrogates included (a Python str may hold a lone one), in a
    # quoted value: only a line break and the quote itself end it early
    declined = {c for c in range(0x110000) if yamlfast.compose(f"a: 'x{chr(c)}y'\n") is None}
    assert declined == {c for c in range(0x110000) if not is_text(c)} | {0x0A, 0x27}
