"""GraphQL mutations and their effect: the table's rule, the document reader, gh's fields, the policy.

* ``mutations_build``'s rule gives each name its effect (its docstring is the rule);
* ``mutations.analyse`` finds every mutation GitHub would run in a document;
* ``gh_graphql`` finds the documents of a ``gh api`` call to the GraphQL endpoint, or
  says why they cannot be known before the step runs;
* the policy decides a document mutation by mutation.

The committed table against the installed schema:
tests/integration/test_github_mutation_table.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from providers.github import PROVIDER as GITHUB
from providers.github import mutations, mutations_build
from providers.github.cli_args import gh_api_call, gh_graphql
from runtime.plan.binding import bind, resolve_call
from runtime.plan.policy import Policy, document_call, program_actions
from runtime.plan.policy_file import load_policy
from runtime.provider import Decision
from runtime.provider.operations import Action

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


# -- the document ------------------------------------------------------------------------------

ISSUE = '(input: {issueId: "I_1"}) { clientMutationId }'
DOC = f"mutation {{ deleteIssue{ISSUE} }}"


@pytest.mark.parametrize(
    ("document", "effect", "names"),
    [
        ("{ viewer { login } }", "read", []),
        ('query { repository(owner: "mutation { deleteIssue }") { id } }', "read", []),
        ("# mutation { deleteIssue }\nquery { viewer { login } }", "read", []),
        (f"mutation {{ deleteIssue{ISSUE} }}", "destroy", ["deleteIssue"]),
        (f"# query\nmutation {{ x: deleteIssue{ISSUE} }}", "destroy", ["deleteIssue"]),
        (
            f"query A {{ viewer {{ login }} }} mutation B {{ deleteIssue{ISSUE} }}",
            "destroy",
            ["deleteIssue"],
        ),
        (
            f"mutation {{ ...F }} fragment F on Mutation {{ deleteIssue{ISSUE} }}",
            "destroy",
            ["deleteIssue"],
        ),
        (
            f"mutation {{ ... on Mutation {{ ... {{ deleteIssue{ISSUE} }} }} }}",
            "destroy",
            ["deleteIssue"],
        ),
        # a fragment spread in a fragment, and a cycle (GitHub's error: each read once)
        (
            "mutation { ...F } fragment F on Mutation { ...G } "
            "fragment G on Mutation { ...F addStar(input: {}) { clientMutationId } }",
            "write",
            ["addStar"],
        ),
        (
            f"mutation {{ addStar(input: {{}}) {{ clientMutationId }} d: deleteIssue{ISSUE} "
            f"deleteIssue{ISSUE} }}",
            "destroy",
            ["addStar", "deleteIssue"],
        ),
        ("mutation { __typename }", "write", []),
        ("subscription { x }", "write", []),
        ("mutation { purge }", "destroy", ["purge"]),
        # a fragment on the mutation root spread nowhere does nothing
        (f"{{ viewer {{ login }} }} fragment F on Mutation {{ deleteIssue{ISSUE} }}", "read", []),
    ],
)
def test_every_mutation_github_would_run_is_found(
    document: str, effect: str, names: list[str]
) -> None:
    found = mutations.analyse(document)
    assert (found.effect, [a.name for a in found.actions], found.unreadable) == (
        effect,
        names,
        "",
    )


def test_a_mutation_not_in_the_table_is_a_destroy_and_says_so() -> None:
    assert mutations.mutation_action("purge") == Action(
        "mutation", "purge", "destroy", "not in GitHub's published schema"
    )
    assert mutations.mutation_action("deleteIssue") == Action("mutation", "deleteIssue", "destroy")
    assert mutations.mutation_action("removeStar") == Action("mutation", "removeStar", "write")
    assert mutations.mutation_action("addComment").note() == "mutation addComment: write"


def test_a_document_that_does_not_parse_is_a_write_and_one_too_deep_a_destroy() -> None:
    broken = mutations.analyse(f"mutation {{ deleteIssue{ISSUE}")
    assert (broken.effect, broken.actions) == ("write", ())
    assert broken.unreadable.startswith("the document does not parse (Syntax Error")
    deep = "query { " + "a { " * 2000 + "b" + " }" * 2000 + " }"
    nested = mutations.analyse(f"mutation {{ deleteIssue{ISSUE} }} {deep}")
    assert (nested.effect, nested.actions) == ("destroy", ())
    assert "nested too deeply" in nested.unreadable


# -- gh api graphql ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["graphql", "-f", f"query={DOC}"],
        ["graphql", "-F", f"query={DOC}"],
        ["graphql", "--raw-field", f"query={DOC}"],
        ["graphql", "--field", f"query={DOC}"],
        ["graphql", f"--field=query={DOC}"],
        ["graphql", f"-fquery={DOC}"],
        ["-i", "graphql", "-f", "owner=acme", "-f", f"Query={DOC}"],
        ["/graphql", "-f", f"query[]={DOC}"],
        ["https://api.github.com/graphql", "-f", f"query={DOC}"],
        ["api/graphql?x=1", "-f", f"query={DOC}"],
        ["/%67raphql", "-f", f"query={DOC}"],
        ["graphql.json", "-f", f"query={DOC}"],
    ],
)
def test_gh_api_graphql_documents_are_read_as_gh_sends_them(args: list[str]) -> None:
    assert gh_graphql(gh_api_call(args)) == ((DOC,), "")


def test_every_query_field_is_a_document_and_other_routes_have_none() -> None:
    twice = gh_api_call(["graphql", "-f", "query={ a }", "-F", "query={ b }"])
    assert gh_graphql(twice) == (("{ a }", "{ b }"), "")
    assert gh_graphql(gh_api_call(["graphql"])) == ((), "")
    assert gh_graphql(gh_api_call(["repos/a/b/issues", "-f", f"query={DOC}"])) is None
    assert gh_graphql(gh_api_call(["repos/a/b/contents/docs"])) is None


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["graphql", "-F", "query=@doc.graphql"], "read from a file when the step runs"),
        (["graphql", "--field=query=@-"], "read from standard input when the step runs"),
        (["graphql", "--input", "body.json"], "the request body is read from a file"),
        (["graphql", "-F", 'query={ repository(name: "{repo}") { id } }'], "gh fills {repo}"),
    ],
)
def test_a_document_gh_reads_when_it_runs_cannot_be_decided(args: list[str], said: str) -> None:
    found = gh_graphql(gh_api_call(args))
    assert found is not None and found.documents == ()
    assert said in found.problem


def test_a_raw_field_is_sent_as_written() -> None:
    # -f takes no @file and fills no {placeholder}: the document is the text
    assert gh_graphql(gh_api_call(["graphql", "-f", "query=@doc"])) == (("@doc",), "")


# -- the policy --------------------------------------------------------------------------------


def graphql(policy: Policy, document: str) -> Decision:
    """``github graphql DOCUMENT`` decided."""
    operation = next(op for op in GITHUB.operations if op.name == "graphql")
    binding, _ = bind(operation, [document])
    return policy.decide_call(GITHUB, operation, resolve_call(binding, [document]))


def test_a_document_is_decided_mutation_by_mutation() -> None:
    default = load_policy(None)
    decision = graphql(default, f"# query\nmutation {{ x: deleteIssue{ISSUE} }}")
    assert (decision.allowed, decision.rule) == (False, "effect destroy (allowed_destructive)")
    assert "'github graphql deleteIssue' destroys what it names" in decision.reason
    assert "allowed_destructive: ['github graphql deleteIssue'] allows every call;" in (
        decision.hint + ";"
    )
    assert graphql(default, "{ viewer { login } }").allowed
    assert graphql(default, "mutation { addStar(input: {}) { a } }").allowed
    unknown = graphql(default, "mutation { x }")
    assert not unknown.allowed
    assert unknown.reason.endswith("(mutation x: not in GitHub's published schema)")


def test_an_allowance_names_one_mutation_and_a_denial_can_too() -> None:
    policy = load_policy(None)
    policy.allowed_destructive.append((("github", "graphql", "deleteissue"), "mine.yaml"))
    policy.denied_operations.append((("github", "graphql", "archive*"), "mine.yaml"))
    decision = graphql(policy, DOC)
    assert decision.rule == "allowed_destructive: github graphql deleteissue (mine.yaml)"
    both = graphql(policy, f"mutation {{ deleteIssue{ISSUE} deleteRef(input: {{}}) {{ a }} }}")
    assert not both.allowed and "'github graphql deleteRef'" in both.reason
    archive = graphql(policy, "mutation { archiveProjectV2Item(input: {}) { a } }")
    assert (archive.allowed, archive.rule) == (
        False,
        "denied_operations: github graphql archive* (mine.yaml)",
    )
    # `github graphql` alone allows every mutation
    policy.allowed_destructive.append((("github", "graphql"), "mine.yaml"))
    assert graphql(policy, "mutation { deleteRef(input: {}) { a } }").allowed


def gh_api(policy: Policy, *args: str) -> tuple[bool, str, str]:
    decision = policy.decide_binary("gh", ["api", *args], api_owner=GITHUB)
    return decision.allowed, decision.rule, decision.reason


def test_gh_api_graphql_is_decided_mutation_by_mutation() -> None:
    default = load_policy(None)
    allowed, rule, reason = gh_api(default, "graphql", "-f", f"query={DOC}")
    assert (allowed, rule) == (False, "effect destroy (allowed_destructive)")
    assert "'github graphql deleteIssue' destroys what it names" in reason
    assert gh_api(default, "graphql", "-f", "query={ viewer { login } }")[0]
    assert gh_api(default, "graphql", "-f", "query=mutation { addStar(input: {}) { a } }")[0]
    refused = gh_api(default, "graphql", "-F", "query=@doc.graphql")
    assert refused[:2] == (False, "built-in: gh api graphql must be readable")
    # an input's value, not known at validation: decided at plan time
    assert gh_api(default, "graphql", "-f", "query=\x00")[0]
    # one too deep for graphql-core: a destroy, whose hint does not repeat the document
    deep = "query { " + "a { " * 2000 + "b" + " }" * 2000 + " }"
    decision = default.decide_binary(
        "gh", ["api", "graphql", "-f", f"query={DOC} {deep}"], api_owner=GITHUB
    )
    assert (decision.allowed, decision.rule) == (False, "effect destroy (allowed_destructive)")
    assert "a { a {" not in decision.hint


def test_gh_api_graphql_takes_the_same_entries() -> None:
    policy = load_policy(None)
    policy.allowed_destructive.append((("github", "graphql", "deleteissue"), "mine.yaml"))
    policy.denied_operations.append((("github", "graphql", "archive*"), "mine.yaml"))
    assert gh_api(policy, "graphql", "-f", f"query={DOC}")[0]
    both = f"mutation {{ deleteIssue{ISSUE} deleteRef(input: {{}}) {{ a }} }}"
    allowed, _, reason = gh_api(policy, "graphql", "-f", f"query={both}")
    assert not allowed and "'github graphql deleteRef'" in reason
    archive = "mutation { archiveProjectV2Item(input: {}) { a } }"
    assert gh_api(policy, "graphql", "-f", f"query={archive}")[:2] == (
        False,
        "denied_operations: github graphql archive* (mine.yaml)",
    )
    operation = next(op for op in GITHUB.operations if op.name == "graphql")
    decision = policy.decide_call(GITHUB, operation, document_call(operation, DOC))
    assert decision.rule == "allowed_destructive: github graphql deleteissue (mine.yaml)"


def test_the_plan_shows_what_gh_api_graphql_does() -> None:
    args = ["api", "graphql", "-f", f"query={DOC}", "-f", "query=mutation { x }"]
    assert [a.note() for a in program_actions("gh", args, GITHUB)] == [
        "mutation deleteIssue: destroy",
        "mutation x: destroy (not in GitHub's published schema)",
    ]
    assert program_actions("gh", ["api", "repos/a/b"], GITHUB) == ()
    assert program_actions("git", ["status"], GITHUB) == ()
