"""The ``github`` provider: GitHub and GitHub Enterprise Server.

This module is only the declaration: twenty operations as data, each with the
transport the provider chose for it (REST, GraphQL or the ``gh`` CLI). The
implementation in :mod:`providers.github.ops` (and httpcore) is imported when a
step runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from runtime.provider import (
    BindingProblem,
    BoundCall,
    Effect,
    EffectRule,
    Operation,
    Option,
    Positional,
)

if TYPE_CHECKING:
    from runtime.execution import StepEnvironment, StepOutcome
    from runtime.plan.build import Inspection
    from runtime.workspace import Workspace

_PAGING = (
    Option("per_page", "items per page (default 100; pagination is followed to the end)"),
    Option("limit", "stop after this many items"),
)


def _rest(words: str, summary: str, effect: str = "read", **kw: object) -> Operation:
    return Operation(
        words=tuple(words.split()),
        summary=summary,
        transport="rest",
        effect=effect,  # type: ignore[arg-type]
        credential="github",
        **kw,  # type: ignore[arg-type]
    )


def _graphql_effect(document: str) -> Effect:
    """``read`` for a document of queries only, else ``write``: parsed with graphql-core, so
    a mutation after a comment, a second operation or a fragment is seen for what it is. A
    document that does not parse is taken as a write (GitHub will refuse it anyway)."""
    from graphql import GraphQLSyntaxError
    from graphql.language import OperationDefinitionNode, OperationType, parse

    try:
        parsed = parse(document, no_location=True)
    except GraphQLSyntaxError:
        return "write"
    for definition in parsed.definitions:
        if (
            isinstance(definition, OperationDefinitionNode)
            and definition.operation is not OperationType.QUERY
        ):
            return "write"
    return "read"


def _gh(words: str, summary: str, effect: str = "read", **kw: object) -> Operation:
    return Operation(
        program="gh",
        words=tuple(words.split()),
        summary=summary,
        transport="cli",
        effect=effect,  # type: ignore[arg-type]
        credential="github",
        passthrough=True,
        **kw,  # type: ignore[arg-type]
    )


OPERATIONS: tuple[Operation, ...] = (
    _rest("user get", "The authenticated user", example="runtime github user get"),
    _rest(
        "org list",
        "Organizations of the authenticated user",
        options=_PAGING,
        scopes=("read:org",),
        example="runtime github org list",
    ),
    _rest(
        "notification list",
        "Notifications of the authenticated user",
        scopes=("notifications",),
        options=(Option("all"), Option("participating"), *_PAGING),
        example="runtime github notification list all=true",
    ),
    _rest(
        "team list",
        "Teams of an organization",
        scopes=("read:org",),
        positionals=(Positional("ORG"),),
        options=_PAGING,
        example="runtime github team list acme",
    ),
    _rest(
        "repo list",
        "Repositories of ORG (else the context's organization, else your own)",
        positionals=(Positional("ORG", required=False),),
        options=(Option("type"), Option("sort"), Option("direction"), *_PAGING),
        example="runtime github repo list acme per_page=100",
    ),
    _rest(
        "repo view",
        "One repository",
        positionals=(Positional("OWNER/REPO"),),
        example="runtime github repo view cli/cli",
    ),
    _rest(
        "repo create",
        "Create a repository (in an organization with org=)",
        effect="write",
        scopes=("repo",),
        options=(
            Option("name", required=True),
            Option("org"),
            Option("private"),
            Option("visibility"),
            Option("description"),
            Option("homepage"),
            Option("auto_init"),
            Option("gitignore_template"),
            Option("license_template"),
            Option("has_issues"),
            Option("has_wiki"),
            Option("has_projects"),
            Option("is_template"),
        ),
        example="runtime github repo create name=demo private=true auto_init=true",
    ),
    _rest(
        "issue list",
        "Issues of ORG (else the context's organization, else assigned to you)",
        positionals=(Positional("ORG", required=False),),
        options=(
            Option("filter"),
            Option("state"),
            Option("labels"),
            Option("sort"),
            Option("direction"),
            Option("since"),
            *_PAGING,
        ),
        example="runtime github issue list acme state=open",
    ),
    _rest(
        "file put",
        "Create or update a file's content (the text is base64-encoded for you)",
        effect="write",
        scopes=("repo",),
        positionals=(Positional("OWNER/REPO"), Positional("PATH")),
        options=(
            Option("message", required=True),
            Option("content", required=True),
            Option("branch"),
        ),
        example="runtime github file put acme/site README.md message='Add readme' content='# Site'",
    ),
    _rest(
        "api",
        "Any REST route: GET/DELETE pairs are query parameters, POST/PUT/PATCH a JSON body",
        effect="write",
        positionals=(Positional("METHOD"), Positional("PATH")),
        options=None,
        positionals_first=True,
        effect_rules=(
            EffectRule("METHOD", r"^(?i:GET|HEAD)$", "read"),
            EffectRule("METHOD", r"^(?i:DELETE)$", "destroy"),
        ),
        example="runtime github api GET /repos/cli/cli/community/profile",
    ),
    Operation(
        words=("repo", "summary"),
        summary="Description, visibility, default branch, stars, forks, open issues and PRs, "
        "latest release, language (one request)",
        transport="graphql",
        effect="read",
        credential="github",
        positionals=(Positional("OWNER/REPO"),),
        example="runtime github repo summary cli/cli",
    ),
    Operation(
        words=("graphql",),
        summary="Any GraphQL query; name=value pairs are variables (typed like api)",
        transport="graphql",
        effect="read",
        credential="github",
        positionals=(Positional("QUERY"),),
        options=None,
        effect_from=lambda call: _graphql_effect(call.positionals.get("QUERY", "")),
        example="runtime github graphql 'query { viewer { login } }'",
    ),
    _gh("pr list", "Pull requests (gh pr list)", example="runtime github pr list --repo cli/cli"),
    _gh(
        "pr view",
        "One pull request (gh pr view)",
        positionals=(Positional("N"),),
        example="runtime github pr view 42 --repo cli/cli",
    ),
    _gh(
        "pr create",
        "Open a pull request (gh pr create)",
        effect="write",
        scopes=("repo",),
        example="runtime github pr create --repo acme/site --title T --body B --head feature",
    ),
    _gh(
        "issue create",
        "Open an issue (gh issue create)",
        effect="write",
        scopes=("repo",),
        example="runtime github issue create --repo acme/site --title T --body B",
    ),
    _gh(
        "run list", "Workflow runs (gh run list)", example="runtime github run list --repo cli/cli"
    ),
    _gh(
        "run view",
        "One workflow run (gh run view)",
        positionals=(Positional("ID"),),
        example="runtime github run view 123456 --repo cli/cli",
    ),
    _gh(
        "workflow list",
        "Workflows (gh workflow list)",
        example="runtime github workflow list --repo cli/cli",
    ),
    _gh(
        "workflow run",
        "Dispatch a workflow (gh workflow run)",
        effect="write",
        scopes=("workflow",),
        positionals=(Positional("WORKFLOW"),),
        example="runtime github workflow run ci.yml --repo acme/site --ref main",
    ),
)


class GitHubProvider:
    name = "github"
    summary = "GitHub and GitHub Enterprise Server over REST, GraphQL and the gh CLI"
    operations = OPERATIONS

    def execute(self, operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
        from providers.github.ops import execute

        return execute(operation, call, env)

    def inspect(
        self, operation: Operation, call: BoundCall, ws: Workspace, services: object
    ) -> Inspection:
        from providers.github.ops import inspect

        return inspect(operation, call, ws, services)

    def check(self, operation: Operation, args: Sequence[str]) -> list[BindingProblem]:
        """Validation: an ``api`` step whose METHOD and PATH are literal names a route GitHub
        documents (``args`` as authored, after the operation words)."""
        if operation.name != "api":
            return []
        from providers.github.routes import check_api
        from runtime.provider import Piece, bind, resolve_call

        binding, _ = bind(operation, args)
        # a ${reference} is not known before plan time: checked then, with its value
        pieces = [(Piece(a, None, "${" in a),) for a in args]
        problems, _, _ = check_api(resolve_call(binding, args, pieces))
        return problems

    def check_token(
        self, environ: object, services: object, host: str, token: str
    ) -> dict[str, object]:
        """Read-only: GET /user with the token; its login and scopes."""
        from providers.github.ops import check_token

        return check_token(environ, services, host, token)

    def ping(
        self, environ: object, services: object, host: str, timeout: float, max_bytes: int
    ) -> int:
        """Read-only and bounded: does the host answer? Its HTTP status."""
        from providers.github.ops import ping

        return ping(environ, services, host, timeout, max_bytes)


PROVIDER = GitHubProvider()
