"""What a GraphQL document does: each mutation it would run on GitHub, and its effect.

The document is parsed with graphql-core (imported on the first document), so what
GitHub would run is what is decided: every operation of the document, a mutation
under an alias (``x: deleteIssue(...)`` is deleteIssue), in an inline fragment or a
fragment spread at the mutation's root, and never a word in a comment or a string.
Each mutation's effect is the one ``mutations.json`` gives it (made by
:mod:`providers.github.mutations_build` from GitHub's published schema, whose
docstring is the rule); a name the table does not hold is a ``destroy``. The
document's effect is its strongest: ``destroy`` over ``write`` over ``read`` (a
document of queries only).

A document graphql-core cannot parse is a ``write`` (GitHub refuses it too), never a
``read``; one nested too deeply for it to read is a ``destroy``, since GitHub may
well read it.

This module imports nothing of the HTTP client: the policy reads it at validation
and plan time, through the ``graphql`` operation's ``effect_from`` and
``actions_from``.
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from runtime.provider.operations import Action, Effect

TABLE = Path(__file__).with_name("mutations.json")
_RANK = {"read": 0, "write": 1, "destroy": 2}
UNKNOWN_WHY = "not in GitHub's published schema"
_TOO_DEEP = "nested too deeply"  # graphql-core's message when its recursion runs out
_TOO_DEEP_NOTE = "the document is nested too deeply for runtime to read: a destroy"


@cache
def table() -> dict[str, tuple[Effect, str]]:
    """Each mutation GitHub publishes -> (its effect, the reason when its verb does not
    say it); read once."""
    data = json.loads(TABLE.read_text(encoding="utf-8"))
    return {entry[0]: (entry[1], entry[2] if len(entry) > 2 else "") for entry in data["mutations"]}


def mutation_action(name: str) -> Action:
    """The mutation ``name`` with its effect: a destroy when the table does not know it."""
    effect, why = table().get(name, ("destroy", UNKNOWN_WHY))
    return Action("mutation", name, effect, why if effect == "destroy" else "")


class Analysis(NamedTuple):
    effect: Effect  # the strongest of its mutations'; read for queries only
    actions: tuple[Action, ...]  # the mutations GitHub would run, each once, in order
    unreadable: str = ""  # why it is decided without its mutations (it does not parse)


def graphql_effect(document: str) -> Effect:
    return analyse(document).effect


def graphql_actions(document: str) -> tuple[Action, ...]:
    return analyse(document).actions


@lru_cache(maxsize=16)  # validation, plan and the step itself each ask of one document
def analyse(document: str) -> Analysis:
    from graphql import GraphQLSyntaxError
    from graphql.language import (
        FieldNode,
        FragmentDefinitionNode,
        FragmentSpreadNode,
        InlineFragmentNode,
        OperationDefinitionNode,
        OperationType,
        parse,
    )

    try:
        parsed = parse(document, no_location=True)
    except RecursionError:  # graphql-core before 3.3 lets it through
        return Analysis("destroy", (), _TOO_DEEP_NOTE)
    except GraphQLSyntaxError as exc:
        if _TOO_DEEP in exc.message:
            return Analysis("destroy", (), _TOO_DEEP_NOTE)
        return Analysis("write", (), f"the document does not parse ({exc.message}): a write")
    fragments = {
        d.name.value: d for d in parsed.definitions if isinstance(d, FragmentDefinitionNode)
    }
    effect: Effect = "read"
    found: dict[str, Action] = {}

    def root_fields(selections: Any, seen: set[str]) -> None:
        # the fields at a mutation's root: in it, in its inline fragments and in the
        # fragments it spreads there (each fragment once: a cycle is GitHub's error)
        for selection in selections:
            if isinstance(selection, FieldNode):
                name = selection.name.value
                if name != "__typename" and name not in found:
                    found[name] = mutation_action(name)
            elif isinstance(selection, InlineFragmentNode):
                root_fields(selection.selection_set.selections, seen)
            elif isinstance(selection, FragmentSpreadNode):
                spread = selection.name.value
                if spread in fragments and spread not in seen:
                    seen.add(spread)
                    root_fields(fragments[spread].selection_set.selections, seen)

    for definition in parsed.definitions:
        if not isinstance(definition, OperationDefinitionNode):
            continue
        if definition.operation is OperationType.QUERY:
            continue
        effect = "write" if effect == "read" else effect  # a mutation or a subscription
        if definition.operation is OperationType.MUTATION:
            root_fields(definition.selection_set.selections, set())
    for action in found.values():
        if _RANK[action.effect] > _RANK[effect]:
            effect = action.effect
    return Analysis(effect, tuple(found.values()))
