"""Matching a step's args to an operation, and finding the references in an arg.

match_operation looks only at the operations the first arg can start (an index
by first word, kept per operations tuple); it must choose exactly what a scan of
every operation chooses: the longest words that prefix the args, the first
declared on a tie, an operation without words for anything else. references()
skips the scan when an arg cannot hold one.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import example, given
from hypothesis import strategies as st

from providers.files import OPERATIONS as FILES
from providers.github import OPERATIONS as GITHUB
from runtime.document.grammar import REFERENCE, references
from runtime.provider import Operation, match_operation

WORDS = ["repo", "view", "list", "pr", "issue", "api", "read", "write", "x", ""]


def scan(operations: Sequence[Operation], args: Sequence[str]) -> Operation | None:
    """Every operation looked at, in declared order: the behaviour to keep."""
    best: Operation | None = None
    for op in operations:
        n = len(op.words)
        if tuple(args[:n]) == op.words and (best is None or n > len(best.words)):
            best = op
    return best


def operation(words: tuple[str, ...]) -> Operation:
    return Operation(words=words, summary=" ".join(words) or "-", transport="local", effect="read")


word_lists = st.lists(st.sampled_from(WORDS), max_size=4)


@given(args=word_lists)
def test_the_shipped_providers_match_as_a_full_scan_does(args: list[str]) -> None:
    for operations in (GITHUB, FILES):
        assert match_operation(operations, args) is scan(operations, args)


@example(declared=[(), ("repo", "view")], args=["repo"], as_tuple=True)  # only () prefixes it
@example(declared=[(), ("repo",)], args=["pr", "x"], as_tuple=True)  # a first word of none
@example(
    declared=[("repo",), ("repo", "view"), ("repo", "view")], args=["repo", "view"], as_tuple=False
)
@given(
    declared=st.lists(word_lists.map(tuple), max_size=8),
    args=word_lists,
    as_tuple=st.booleans(),
)
def test_any_operations_match_as_a_full_scan_does(
    declared: list[tuple[str, ...]], args: list[str], as_tuple: bool
) -> None:
    """Shared first words, repeated words (the first declared wins), operations
    without words (they prefix anything), in a tuple (indexed once) or a list."""
    built = [operation(words) for words in declared]
    operations: Sequence[Operation] = tuple(built) if as_tuple else built
    assert match_operation(operations, args) is scan(operations, args)
    # asked again: the kept index answers the same
    assert match_operation(operations, args) is scan(operations, args)


@example(text="${a}{{")
@example(text="x${{ a }}${b}")
@given(text=st.text(alphabet="${}ab_-1 ", max_size=12))
def test_references_are_what_the_pattern_finds(text: str) -> None:
    assert [m.group(0) for m in references(text)] == [m.group(0) for m in REFERENCE.finditer(text)]
