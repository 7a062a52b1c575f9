"""Tests for runtime.document.fences, driven by the CommonMark specification's examples.

``tests/data/commonmark/fenced_code_blocks.json`` holds the examples of the
"Fenced code blocks" section of the CommonMark spec, as shipped by the npm
package ``commonmark-spec`` (its version is recorded in the file).
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# Make the repository root importable however pytest is started (ruff's E402
# allows imports after a sys.path change).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runtime.document import fences
from runtime.document.fences import FencedBlock, find_fenced_blocks

REPO_ROOT = Path(__file__).resolve().parents[2]
SPEC_FILE = REPO_ROOT / "tests" / "data" / "commonmark" / "fenced_code_blocks.json"
SPEC: dict[str, Any] = json.loads(SPEC_FILE.read_text(encoding="utf-8"))
EXAMPLES: list[dict[str, Any]] = SPEC["examples"]

_PRE_CODE = re.compile(
    r'<pre><code(?: class="language-(?P<lang>[^"]*)")?>(?P<body>.*?)</code></pre>', re.DOTALL
)


def expected_blocks(example_html: str) -> list[tuple[str, str]]:
    """(first word of the info string, content) for each <pre><code> element."""
    return [
        (html.unescape(m.group("lang") or ""), html.unescape(m.group("body")))
        for m in _PRE_CODE.finditer(example_html)
    ]


def found_blocks(markdown: str) -> list[tuple[str, str]]:
    return [(block.language, block.content) for block in find_fenced_blocks(markdown)]


def _columns_of_indent(line: str) -> int:
    column = 0
    for char in line:
        if char == " ":
            column += 1
        elif char == "\t":
            column += 4 - column % 4
        else:
            break
    return column


def indented_code_starts(markdown: str) -> list[int]:
    """1-based numbers of lines that begin an indented code block.

    The HTML of an example does not say whether a ``<pre><code>`` without a
    language class came from a fence or from an indented code block, so the
    examples containing indented code are recognised from their Markdown by
    this rule: a non-blank line indented by four or more columns that is the
    first line of the document or follows a blank line.  (An indented code
    block cannot interrupt a paragraph, so at the top level it can only start
    there.)  The rule errs towards flagging: it would also flag such a line
    inside a fence after a blank line, which only weakens the check for that
    example.  In the "Fenced code blocks" section it flags one example, whose
    four-space-indented ``` lines form an indented code block.
    """
    starts = []
    previous_blank = True
    for number, line in enumerate(markdown.split("\n"), start=1):
        blank = line.strip(" \t") == ""
        if not blank and previous_blank and _columns_of_indent(line) >= 4:
            starts.append(number)
        previous_blank = blank
    return starts


def test_spec_data_is_the_fenced_code_blocks_section() -> None:
    assert SPEC["package"] == "commonmark-spec"
    assert SPEC["version"]
    assert EXAMPLES
    assert {example["section"] for example in EXAMPLES} == {"Fenced code blocks"}
    numbers = [example["example"] for example in EXAMPLES]
    assert numbers == sorted(set(numbers))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: f"example-{example['example']}")
def test_spec_example(example: dict[str, Any]) -> None:
    markdown = example["markdown"]
    expected = expected_blocks(example["html"])
    flagged = indented_code_starts(markdown)
    if not flagged:
        assert found_blocks(markdown) == expected
        return
    # Examples with indented code blocks (see indented_code_starts): each
    # flagged line accounts for one <pre><code> that is not a fence, and no
    # fenced block may be reported as opening on such a line.
    blocks = find_fenced_blocks(markdown)
    assert len(blocks) == len(expected) - len(flagged)
    assert not {block.fence_line for block in blocks} & set(flagged)


def test_indented_code_rule_only_flags_examples_with_unclassed_code() -> None:
    # Indented code blocks never carry a language class, so the rule must
    # only flag examples whose HTML has a <pre><code> without one.
    for example in EXAMPLES:
        if indented_code_starts(example["markdown"]):
            assert any(lang == "" for lang, _ in expected_blocks(example["html"]))


# --- focused tests ------------------------------------------------------------


def test_runtime_fence_nested_in_longer_markdown_fence_is_content() -> None:
    text = (
        "Intro\n"
        "\n"
        "````markdown\n"
        "Example:\n"
        "\n"
        "```runtime\n"
        "echo hi\n"
        "```\n"
        "````\n"
        "\n"
        "```runtime\n"
        "real\n"
        "```\n"
    )
    blocks = find_fenced_blocks(text)
    assert [(b.language, b.fence_line, b.end_line) for b in blocks] == [
        ("markdown", 3, 9),
        ("runtime", 11, 13),
    ]
    assert blocks[0].content == "Example:\n\n```runtime\necho hi\n```\n"
    assert blocks[0].fence_length == 4
    assert blocks[1].content == "real\n"


def test_tilde_fences() -> None:
    text = "~~~runtime extra words\nuses ``` and ~~ inside\n~~~~~\nafter\n"
    [block] = find_fenced_blocks(text)
    assert block.fence_char == "~"
    assert block.fence_length == 3
    assert block.info == "runtime extra words"
    assert block.language == "runtime"
    assert block.content == "uses ``` and ~~ inside\n"
    assert block.closed
    assert (block.fence_line, block.end_line) == (1, 3)


def test_backticks_in_info_string() -> None:
    # Allowed after a tilde fence, but a backtick "fence" with a backtick in
    # its info string is not a fence at all (it is an inline code span).
    assert found_blocks("~~~ a`b\nx\n~~~\n") == [("a`b", "x\n")]
    assert find_fenced_blocks("``` a`b\nx\n```\n") == [
        FencedBlock(
            info="",
            content="",
            fence_line=3,
            content_start_line=4,
            end_line=3,
            closed=False,
            fence_char="`",
            fence_length=3,
            indent=0,
            content_column_offset=0,
        )
    ]


def test_unterminated_fence_runs_to_end_of_document() -> None:
    [block] = find_fenced_blocks("text\n```sh\nls\n\n``\n")
    assert not block.closed
    assert block.content == "ls\n\n``\n"
    assert (block.fence_line, block.content_start_line, block.end_line) == (2, 3, 5)


def test_unterminated_fence_without_final_newline() -> None:
    [block] = find_fenced_blocks("```\na\nb")
    assert not block.closed
    assert block.content == "a\nb\n"
    assert block.end_line == 3


def test_unterminated_fence_ends_with_its_block_quote() -> None:
    quoted, after = find_fenced_blocks("> ```py\n> a\n>\n> b\nplain\n```\n")
    assert not quoted.closed
    assert quoted.content == "a\n\nb\n"
    assert (quoted.fence_line, quoted.end_line) == (1, 4)
    assert quoted.content_line_offsets == (2, 1, 2)
    # "plain" is not a lazy continuation of a fence, so it ends the quote and
    # the last line opens a new, empty, unterminated fence.
    assert (after.fence_line, after.end_line, after.content) == (6, 6, "")


def test_empty_block() -> None:
    [block] = find_fenced_blocks("```\n```\n")
    assert block.content == ""
    assert block.closed
    assert (block.fence_line, block.content_start_line, block.end_line) == (1, 2, 2)


def test_crlf_and_cr_line_endings() -> None:
    crlf = "para\r\n\r\n```runtime\r\nline 1\r\nline 2\r\n```\r\n"
    [block] = find_fenced_blocks(crlf)
    assert block.content == "line 1\nline 2\n"
    assert (block.fence_line, block.content_start_line, block.end_line) == (3, 4, 6)
    assert block.closed
    assert find_fenced_blocks(crlf.replace("\r\n", "\r")) == [block]
    assert find_fenced_blocks(crlf.replace("\r\n", "\n")) == [block]


def test_line_numbers_and_two_blocks() -> None:
    text = (
        "# Title\n"  # 1
        "\n"  # 2
        "```python\n"  # 3
        "print(1)\n"  # 4
        "print(2)\n"  # 5
        "```\n"  # 6
        "Some text\n"  # 7
        "  ~~~~ runtime  \n"  # 8
        "  step one\n"  # 9
        "    step two\n"  # 10
        "   ~~~~\n"  # 11
    )
    first, second = find_fenced_blocks(text)
    assert (first.language, first.fence_line, first.content_start_line, first.end_line) == (
        "python",
        3,
        4,
        6,
    )
    assert first.content == "print(1)\nprint(2)\n"
    assert second.info == "runtime"
    assert (second.fence_line, second.content_start_line, second.end_line) == (8, 9, 11)
    assert second.indent == 2
    assert second.content_column_offset == 2
    assert second.content == "step one\n  step two\n"
    assert second.content_line_offsets == (2, 2)


def test_indented_code_is_not_a_fence() -> None:
    assert find_fenced_blocks("    ```\n    aaa\n    ```\n") == []
    assert find_fenced_blocks("para\n\n    ~~~\n    x\n") == []
    # A four-space line after paragraph text continues the paragraph; it is
    # not a fence either.
    assert find_fenced_blocks("para\n    ```\n") == []


def test_fence_in_block_quote_maps_columns() -> None:
    text = "> ```runtime\n> run a\n>  run b\n> ```\n"
    [block] = find_fenced_blocks(text)
    assert block.closed
    assert block.content == "run a\n run b\n"
    assert block.content_column_offset == 2
    assert block.content_line_offsets == (2, 2)
    source_line = text.splitlines()[2]
    assert source_line[block.content_line_offsets[1] :] == " run b"


def test_fence_in_list_item() -> None:
    text = "1. Install:\n\n    ```sh\n    pip install x\n     --flag\n    ```\n2. Done\n"
    [block] = find_fenced_blocks(text)
    assert block.language == "sh"
    assert block.closed
    # The item's content starts at column 3, so the fence is indented by 1.
    assert block.indent == 1
    assert block.content_column_offset == 4
    assert block.content == "pip install x\n --flag\n"
    assert (block.fence_line, block.end_line) == (3, 6)


def test_unterminated_fence_in_list_item_ends_with_the_item() -> None:
    [block] = find_fenced_blocks("- ```\n  a\nb\n")
    assert not block.closed
    assert block.content == "a\n"
    assert block.end_line == 2


def test_tabs_in_indentation() -> None:
    # "-" then a tab reaching column 4: the item's content, and so the fence,
    # starts at column 4 with no indentation of its own.
    [block] = find_fenced_blocks("-\t```\n\t\tx\n")
    assert (block.indent, block.content_column_offset) == (0, 4)
    assert block.content == "\tx\n"
    assert block.content_line_offsets == (1,)
    # "> " then a tab: the fence is indented by the two remaining columns of
    # the tab; on the content line the tab after ">" supplies both the
    # optional space and that indentation.
    [block] = find_fenced_blocks("> \t```\n>\t\tx\n")
    assert (block.indent, block.content_column_offset) == (2, 4)
    assert block.content == "\tx\n"
    assert block.content_line_offsets == (2,)


def test_no_blocks() -> None:
    assert find_fenced_blocks("") == []
    assert find_fenced_blocks("just text\n``not a fence``\n") == []


# -- the fast path for content lines ------------------------------------------------

_INDENTS = ["", " ", "  ", "   ", "    ", "     ", "\t", " \t"]
_MARKERS = ["", "```", "````", "~~~", "``", "`", "~", "> ", "- ", "1. ", "#", "<div>"]
_TEXTS = ["", "runtime", " a: b", "x ```", "`", "~", "\u00e9 \t y"]
_FENCE_LINES = [i + f + t for i in _INDENTS for f in ("```", "````", "~~~") for t in ("", " ", "x")]
_LINES = st.one_of(
    st.tuples(*(st.sampled_from(p) for p in (_INDENTS, _MARKERS, _INDENTS, _MARKERS, _TEXTS))).map(
        "".join
    ),
    st.sampled_from(_FENCE_LINES),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_LINES, min_size=1, max_size=14), st.sampled_from(["\n", "\r\n"]))
def test_content_line_fast_path_agrees_with_the_full_scan(lines: list[str], eol: str) -> None:
    # every document is scanned twice: as shipped (content lines of a top-level fence
    # take the fast path) and with every line going through the full scan
    text = eol.join(lines)
    fast = find_fenced_blocks(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fences._Scanner, "scan_line", fences._Scanner.scan_line_in_full)
        full = find_fenced_blocks(text)
    assert fast == full


def test_content_line_fast_path_is_taken_for_a_plain_fence() -> None:
    calls: list[str] = []
    original = fences._Scanner.scan_line_in_full

    def counting(self: Any, text: str) -> None:
        calls.append(text)
        original(self, text)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fences._Scanner, "scan_line_in_full", counting)
        blocks = find_fenced_blocks("# t\n\n  ```runtime\n  a: b\n     c\n\n  ~~~\n  ```\n")
    assert [b.content for b in blocks] == ["a: b\n   c\n\n~~~\n"]
    # the heading, the blank line, the opening and the closing fence: the four content
    # lines (one of them starting with another fence character) took the fast path
    assert calls == ["# t", "", "  ```runtime", "  ```"]
