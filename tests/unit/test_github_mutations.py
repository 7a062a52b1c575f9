"""GraphQL mutations and their effect: the rule of the table ``mutations_build`` makes.

Each name gets its effect from its verb, or from the short lists of names whose verb
does not say it (the builder's docstring is the rule). The committed table against the
installed schema: tests/integration/test_github_mutation_table.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from providers.github import mutations_build

# -- the rule ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "effect"),
    [
        ("deleteIssue", "destroy"),
        ("deleteRef", "destroy"),
        ("archiveRepository", "destroy"),
        ("removeOutsideCollaborator", "destroy"),
        ("transferIssue", "destroy"),
        ("lockLockable", "destroy"),
        ("revokeMigratorRole", "destroy"),
        ("cancelEnterpriseAdminInvitation", "destroy"),
        ("dismissPullRequestReview", "destroy"),
        ("unlinkProjectV2FromTeam", "destroy"),
        ("unpublishSomething", "destroy"),  # a verb of the rule, not (yet) in the schema
        ("delete", "destroy"),
        # the verb must be the whole first word
        ("deletedItemsReport", "write"),
        ("lockfileUpdate", "write"),
        ("removedLabelsCount", "write"),
        # what gives back, or only changes a state its counterpart undoes
        ("unarchiveRepository", "write"),
        ("unlockLockable", "write"),
        ("closeIssue", "write"),
        ("reopenIssue", "write"),
        ("minimizeComment", "write"),
        ("unfollowUser", "write"),
        ("addComment", "write"),
        ("createRef", "write"),
        ("mergePullRequest", "write"),
        ("updateIssue", "write"),
    ],
)
def test_the_rule_reads_the_verb(name: str, effect: str) -> None:
    assert mutations_build.effect_of(name) == (effect, "")


def test_the_names_the_verb_does_not_decide_say_why() -> None:
    assert mutations_build.effect_of("updateRef")[0] == "destroy"
    assert "force" in mutations_build.effect_of("updateRef")[1]
    assert mutations_build.effect_of("updateIpAllowListEnabledSetting")[0] == "destroy"
    assert mutations_build.effect_of("removeStar") == ("write", "your own star taken back")
    for name in mutations_build.DESTROY_NAMES:
        assert not mutations_build._VERB.match(name), f"{name}: its verb already says it"
    for name in mutations_build.WRITE_NAMES:
        assert mutations_build._VERB.match(name), f"{name}: no verb makes it a destroy"


SDL = """
schema { query: Query mutation: Root }
type Query { viewer: String }
type Root {
  addStar(id: ID): String
  deleteIssue(id: ID): String
}
extend type Root { updateRef(id: ID): String }
type Mutation { notTheRoot: String }
"""


def test_the_table_is_the_mutation_root_one_name_a_line_sorted(tmp_path: Path) -> None:
    assert mutations_build.mutation_names(SDL) == ["addStar", "deleteIssue", "updateRef"]
    (tmp_path / "schema.graphql").write_text(SDL)
    (tmp_path / "package.json").write_text('{"version": "1.2.3"}')
    text = mutations_build.build(tmp_path)
    lines = text.splitlines()
    assert lines[2:5] == [
        '["addStar","write"],',
        '["deleteIssue","destroy"],',
        f'["updateRef","destroy","{mutations_build.DESTROY_NAMES["updateRef"]}"]',
    ]
    data = json.loads(text)
    assert data["schema"] == "@octokit/graphql-schema 1.2.3"
    assert data["unknown"] == "destroy"
