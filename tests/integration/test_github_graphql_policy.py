"""A GraphQL document is decided by what it does, through the real CLI, under the default policy.

Each mutation of a document has the effect GitHub's published schema gives it
(``providers/github/mutations.json``): ``deleteIssue``, ``deleteRef`` and
``archiveRepository`` destroy, and so does a name the table does not know. A destroy
is refused (exit 3) before anything reaches the GitHub double, whether the
mutation is aliased, after a ``# query`` comment, in a second operation or in a
fragment, and whether the step is the provider's ``graphql`` operation or ``gh api
graphql`` in a binary step. A query and a ``write`` mutation still run, and an
``allowed_destructive`` entry lets one named mutation through.

The double speaks TLS (gh speaks only HTTPS to a GitHub Enterprise Server host); the
test's Runtime Home gets a context whose ``github_host`` is the double, so both
forms of a step reach the same ``/api/graphql``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result, capability, check_schema, require_tool, write
from tests.github_double import GitHubDouble, SchemaNotInstalledError, load_schema

TOKEN = "rt-graphql-policy-token-5e1b7c3d90"

pytestmark = pytest.mark.integration

ISSUE = '(input: {issueId: "I_1"}) { clientMutationId }'
REF = '(input: {refId: "REF_1"}) { clientMutationId }'
REPO = '(input: {repositoryId: "R_1"}) { clientMutationId }'
COMMENT = 'addComment(input: {subjectId: "I_1", body: "hello"}) { clientMutationId }'

# (document, the mutation the refusal names)
DESTROYING = {
    "deleteIssue": (f"mutation {{ deleteIssue{ISSUE} }}", "deleteIssue"),
    "deleteRef": (f"mutation {{ deleteRef{REF} }}", "deleteRef"),
    "archiveRepository": (f"mutation {{ archiveRepository{REPO} }}", "archiveRepository"),
    "aliased": (f"mutation {{ harmless: deleteRef{REF} }}", "deleteRef"),
    "after a comment": (f"# query\nmutation {{ deleteIssue{ISSUE} }}", "deleteIssue"),
    "second operation": (
        f"query A {{ viewer {{ login }} }}\nmutation B {{ archiveRepository{REPO} }}",
        "archiveRepository",
    ),
    "fragment": (
        f"mutation {{ ...F }}\nfragment F on Mutation {{ deleteIssue{ISSUE} }}",
        "deleteIssue",
    ),
    "inline fragment": (f"mutation {{ ... on Mutation {{ deleteRef{REF} }} }}", "deleteRef"),
    "after a write": (f"mutation {{ {COMMENT} deleteIssue{ISSUE} }}", "deleteIssue"),
    "unknown": ("mutation { purgeEverything(input: {}) { clientMutationId } }", "purgeEverything"),
}


@pytest.fixture(scope="module")
def graphql_schema() -> None:
    """The double answers GraphQL against GitHub's schema; the table is made from it too."""
    try:
        load_schema()
    except SchemaNotInstalledError as exc:
        if os.environ.get("RUNTIME_REQUIRE_INTEGRATION") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.fixture
def gh(graphql_schema: None) -> Iterator[GitHubDouble]:
    require_tool("openssl", "GitHubDouble(tls=True) makes its throwaway CA with openssl")
    with GitHubDouble(token=TOKEN, tls=True) as double:
        double.add_org("acme")
        double.add_repo("acme", "app")
        yield double


@pytest.fixture
def run(cli: Callable[..., Result], gh: GitHubDouble) -> Callable[..., Result]:
    """``runtime`` with a context pointing at the double (and its CA trusted)."""
    base = {"SSL_CERT_FILE": gh.ca_file, "RUNTIME_GITHUB_TOKEN": TOKEN}
    made = cli("context", "set", "test", f"github_host=localhost:{gh.port}", extra_env=base)
    assert made.code == 0, made.stdout + made.stderr

    def call(*args: str, extra_env: dict[str, str] | None = None) -> Result:
        return cli(*args, extra_env={**base, **(extra_env or {})})

    return call


def block(text: str, indent: int = 8) -> str:
    """``text`` as a YAML literal block, each line indented."""
    return "|\n" + "".join(" " * indent + line + "\n" for line in text.splitlines())


def provider_step(document: str) -> str:
    return f"  - provider: github\n    args:\n      - graphql\n      - {block(document)}"


def gh_step(document: str, option: str = "-f") -> str:
    """``gh api graphql OPTION query=DOCUMENT`` (``--field=``: one arg)."""
    head = "  - binary: gh\n    args:\n      - api\n      - graphql\n"
    if option.endswith("="):
        return head + f"      - {block(option + 'query=' + document)}"
    return head + f"      - {option}\n      - {block('query=' + document)}"


def cap(work: Path, *steps: str) -> str:
    write(work / "cap.md", capability("version: v1\nworkflow:\n" + "".join(steps)))
    return "cap.md"


def refused(result: Result, gh: GitHubDouble, *words: str) -> None:
    text = result.stdout + result.stderr
    assert result.code == 3, text
    assert "nothing ran" in text, text
    for word in words:
        assert word in text, (word, text)
    assert gh.requests == [], [r.path for r in gh.requests]


def plan_json(run: Callable[..., Result], extra_env: dict[str, str] | None = None) -> Any:
    doc = run("--output", "json", "capability", "plan", "cap.md", extra_env=extra_env).json()
    check_schema(doc, "plan")
    return doc


# -- refused: the provider's graphql operation and gh api graphql alike -----------------------


@pytest.mark.parametrize("case", list(DESTROYING))
@pytest.mark.parametrize("form", ["provider", "gh"])
def test_a_destroying_mutation_is_refused_before_anything_is_sent(
    run: Callable[..., Result], gh: GitHubDouble, work: Path, case: str, form: str
) -> None:
    document, mutation = DESTROYING[case]
    step = provider_step(document) if form == "provider" else gh_step(document)
    result = run("capability", "execute", cap(work, step))
    refused(
        result,
        gh,
        "effect destroy (allowed_destructive)",
        f"'github graphql {mutation}' destroys what it names",
        f"allowed_destructive: ['github graphql {mutation}']",
    )
    if case == "unknown":
        assert "not in GitHub's published schema" in result.stderr


def test_a_direct_graphql_call_is_refused_too(run: Callable[..., Result], gh: GitHubDouble) -> None:
    result = run("github", "graphql", f"# query\nmutation {{ x: deleteRef{REF} }}")
    refused(result, gh, "'github graphql deleteRef' destroys what it names")
    typed = run(
        "command", "run", "gh", "api", "graphql", "-f", f"query=mutation {{ deleteIssue{ISSUE} }}"
    )
    refused(typed, gh, "'github graphql deleteIssue' destroys what it names")


@pytest.mark.parametrize("option", ["-f", "-F", "--raw-field", "--field", "--field="])
def test_every_spelling_of_the_query_field_is_decided(
    run: Callable[..., Result], gh: GitHubDouble, work: Path, option: str
) -> None:
    document, _ = DESTROYING["after a comment"]
    result = run("capability", "execute", cap(work, gh_step(document, option)))
    refused(result, gh, "'github graphql deleteIssue' destroys what it names")


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ("[api, graphql, -F, query=@doc.graphql]", "read from a file when the step runs"),
        ("[api, graphql, -F, query=@-]", "read from standard input when the step runs"),
        ("[api, graphql, --input, body.json]", "the request body is read from a file"),
        (
            "[api, graphql, -F, 'query=query { repository(owner: \"{owner}\") { id } }']",
            "gh fills {owner} in a typed field",
        ),
    ],
)
def test_a_document_that_cannot_be_read_at_plan_time_is_refused(
    run: Callable[..., Result], gh: GitHubDouble, work: Path, args: str, reason: str
) -> None:
    write(work / "doc.graphql", f"mutation {{ deleteIssue{ISSUE} }}\n")
    write(work / "body.json", json.dumps({"query": f"mutation {{ deleteIssue{ISSUE} }}"}))
    result = run("capability", "execute", cap(work, f"  - binary: gh\n    args: {args}\n"))
    refused(result, gh, "built-in: gh api graphql must be readable", reason)


# -- still running: a query, a write, and a destroy a policy names ---------------------------


def test_a_query_and_a_write_mutation_still_run(
    run: Callable[..., Result], gh: GitHubDouble, work: Path
) -> None:
    name = cap(
        work,
        provider_step("query { viewer { login } }"),
        provider_step(f"mutation {{ {COMMENT} }}"),
    )
    steps = plan_json(run)["steps"]
    assert [s["effect"] for s in steps] == ["read", "write"]
    assert "mutation addComment: write" in steps[1]["notes"]
    result = run("--output", "json", "capability", "execute", name)
    # the double implements no mutation: the write reached it, and it said so
    statuses = [s["status"] for s in result.json()["steps"]]
    assert statuses == ["ok", "failed"], result.stdout + result.stderr
    assert "does not implement Mutation.addComment" in result.json()["steps"][1]["error"]
    assert [q["query"].strip() for q in gh.graphql_queries] == [
        "query { viewer { login } }",
        f"mutation {{ {COMMENT} }}",
    ]


def test_gh_api_graphql_runs_a_query_and_a_write(
    run: Callable[..., Result], gh: GitHubDouble, work: Path
) -> None:
    require_tool("gh", "the gh binary step runs the real gh")
    name = cap(work, gh_step("query { viewer { login } }"), gh_step(f"mutation {{ {COMMENT} }}"))
    steps = plan_json(run)["steps"]
    assert [s["decision"]["allowed"] for s in steps] == [True, True]
    assert steps[0]["notes"] == [] and steps[1]["notes"] == ["mutation addComment: write"]
    result = run("capability", "execute", name)
    # the second step fails at the double (no mutation there), after the first ran
    assert result.code == 1, result.stdout + result.stderr
    assert "octocat" in result.stdout
    assert [q["query"].strip() for q in gh.graphql_queries] == [
        "query { viewer { login } }",
        f"mutation {{ {COMMENT} }}",
    ]


def test_an_allowed_destructive_entry_lets_one_mutation_through(
    run: Callable[..., Result], gh: GitHubDouble, work: Path, tmp_path: Path
) -> None:
    policy = write(
        tmp_path / "policy.yaml",
        'version: v1\nallowed_destructive: ["github graphql deleteIssue"]\n',
    )
    policy.chmod(0o600)
    mine = {"RUNTIME_POLICY_FILE": str(policy)}
    fragment = DESTROYING["fragment"][0]
    both = f"mutation {{ deleteIssue{ISSUE} deleteRef{REF} }}"
    cap(work, provider_step(fragment), gh_step(fragment), provider_step(both), gh_step(both))
    planned = plan_json(run, mine)["steps"]
    assert [s["decision"]["allowed"] for s in planned] == [True, True, False, False], planned
    assert (
        planned[0]["decision"]["rule"]
        == f"allowed_destructive: github graphql deleteissue ({policy})"
    )
    # the entry names deleteIssue, not deleteRef beside it
    for step in planned[2:]:
        assert "'github graphql deleteRef' destroys" in step["decision"]["reason"]
    assert gh.requests == []

    one = cap(work, provider_step(fragment))
    result = run("--output", "json", "capability", "execute", one, extra_env=mine)
    assert result.json()["steps"][0]["status"] == "failed"  # at the double: it ran
    assert [q["query"] for q in gh.graphql_queries] == [fragment + "\n"]
    gh.reset_counters()
    refused(run("capability", "execute", one), gh, "'github graphql deleteIssue'")
