"""Matching a step's args to an operation, and finding the references in an arg.

match_operation chooses the operation whose words are the longest prefix of the
args, the first declared on a tie, an operation without words for anything else
(and None when nothing prefixes them). references() skips the scan when an arg
cannot hold one.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import example, given
from hypothesis import strategies as st

from providers.files import OPERATIONS as FILES
from providers.github import OPERATIONS as GITHUB
from runtime.document.grammar import REFERENCE, references
from runtime.plan.binding import match_operation
from runtime.provider import Operation

WORDS = ["repo", "view", "list", "pr", "issue", "api", "read", "write", "x", ""]


def operation(words: tuple[str, ...]) -> Operation:
    return Operation(words=words, summary=" ".join(words) or "-", transport="local", effect="read")


def check_choice(operations: Sequence[Operation], args: Sequence[str]) -> None:
    """What match_operation chose is the longest declared prefix of ``args``, first declared."""
    found = match_operation(operations, args)
    prefixes = [op for op in operations if tuple(args[: len(op.words)]) == op.words]
    if not prefixes:
        assert found is None
        return
    assert found is not None
    longest = max(len(op.words) for op in prefixes)
    assert found is next(op for op in prefixes if len(op.words) == longest)


word_lists = st.lists(st.sampled_from(WORDS), max_size=4)


@given(args=word_lists)
def test_the_shipped_providers_match_the_longest_prefix(args: list[str]) -> None:
    for operations in (GITHUB, FILES):
        check_choice(operations, args)


def test_the_shipped_operations_are_found_by_their_words() -> None:
    for operations in (GITHUB, FILES):
        for op in operations:
            assert match_operation(operations, [*op.words, "x", "y=1"]) is op


@example(declared=[(), ("repo", "view")], args=["repo"])  # only () prefixes it
@example(declared=[(), ("repo",)], args=["pr", "x"])  # a first word of none
@example(declared=[("repo",), ("repo", "view"), ("repo", "view")], args=["repo", "view"])
@given(declared=st.lists(word_lists.map(tuple), max_size=8), args=word_lists)
def test_any_operations_match_the_longest_prefix(
    declared: list[tuple[str, ...]], args: list[str]
) -> None:
    """Shared first words, repeated words (the first declared wins), operations
    without words (they prefix anything)."""
    check_choice([operation(words) for words in declared], args)


@example(text="${a}{{")
@example(text="x${{ a }}${b}")
@given(text=st.text(alphabet="${}ab_-1 ", max_size=12))
def test_references_are_what_the_pattern_finds(text: str) -> None:
    assert [m.group(0) for m in references(text)] == [m.group(0) for m in REFERENCE.finditer(text)]
