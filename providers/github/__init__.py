"""The ``github`` provider: GitHub and GitHub Enterprise Server.

This module is only the declaration: the operations as data, each with the
transport the provider chose for it (REST routes, a GraphQL document or the
``gh`` CLI), its arguments' types and choices, and its handler by name. The
implementation in :mod:`providers.github.ops` (and httpx) is imported when a
step runs.
"""

from __future__ import annotations

from collections.abc import Mapping

from providers.github.cli_args import GH
from providers.github.fields import FIELDS
from runtime.provider import (
    BoundCall,
    CredentialKind,
    Inspection,
    Operation,
    Option,
    Positional,
    ProviderBase,
    RunContext,
    SettingKind,
    StepEnvironment,
    StepOutcome,
)
from runtime.provider.hosts import host_setting
from runtime.provider.operations import Action, BindingProblem, Effect, EffectRule
from runtime.provider.programs import ProgramProfile

_OPS = "providers.github.ops:"
# gh's flags where gh has the option (gh issue list -L 5 --state all): a gh user's
# habit works on the operations served over REST too
_PAGING = (
    Option(
        "per_page",
        "items per page (default 100; pagination is followed to the end)",
        type="int",
        range=(1, 100),
    ),
    Option(
        "limit", "stop after this many items", type="int", range=(1, None), flags=("--limit", "-L")
    ),
)
_DIRECTION = Option("direction", "the order of the sort", choices=("asc", "desc"))
# the route parameters a repository or an organization fills: an authored value is checked
# at validation (a path in a repository may hold any segments)
_ORG_OR_REPO = "{owner}/{repo}|{org}"  # OWNER/REPO when the value holds a '/', else ORG
_NAMES_IN_ROUTE = ("{owner}/{repo}", "{org}", _ORG_OR_REPO)
_REPO = Positional("OWNER/REPO", help="a repository, as owner/name", in_route="{owner}/{repo}")


def _json(operation: str) -> Option:
    """``--json FIELDS`` (``json=``): the answer as gh's ``--json`` gives it, in gh's field
    names (:mod:`providers.github.fields`); a field gh has but REST does not give is not
    among them."""
    return Option(
        "json",
        "print these fields as JSON, as gh's --json does (gh's names)",
        type="list",
        choices=tuple(FIELDS[operation]),
        flags=("--json",),
    )


# ORG of repo list, issue list and team list: else the active context's organization
_CONTEXT_ORG = Positional(
    "ORG",
    required=False,
    help="an organization's login",
    context_default="organization",
    in_route="{org}",
)


def _fields(*names: str) -> tuple[tuple[str, str], ...]:
    """Summary lines of one object: each field under its own name."""
    return tuple((name, name) for name in names)


def _rest(words: str, summary: str, effect: str = "read", **kw: object) -> Operation:
    return Operation(
        words=tuple(words.split()),
        summary=summary,
        transport="rest",
        effect=effect,  # type: ignore[arg-type]
        credential="github",
        **kw,  # type: ignore[arg-type]
    )


def _graphql_effect(call: BoundCall) -> Effect:
    """The strongest effect of the document's mutations (:mod:`providers.github.mutations`:
    parsed, so a mutation after a comment, under an alias, in a second operation or a
    fragment is seen for what it is); ``read`` for queries only."""
    from providers.github.mutations import graphql_effect

    return graphql_effect(call.positionals.get("QUERY", ""))


def _graphql_actions(call: BoundCall) -> tuple[Action, ...]:
    """Each mutation of the document with its effect (``deleteIssue``: destroy), which the
    policy decides as ``github graphql deleteIssue``."""
    from providers.github.mutations import graphql_actions

    return graphql_actions(call.positionals.get("QUERY", ""))


def _gh(words: str, summary: str, effect: str = "read", **kw: object) -> Operation:
    return Operation(
        program="gh",
        words=tuple(words.split()),
        summary=summary,
        transport="cli",
        effect=effect,  # type: ignore[arg-type]
        credential="github",
        passthrough=True,
        handler=_OPS + "gh_call",
        **kw,  # type: ignore[arg-type]
    )


REPO_SUMMARY_QUERY = """query RepoSummary($owner: String!, $name: String!) {
  repository(owner: $owner, name: $name) {
    nameWithOwner
    description
    visibility
    defaultBranchRef { name }
    stargazerCount
    forkCount
    issues(states: OPEN) { totalCount }
    pullRequests(states: OPEN) { totalCount }
    latestRelease { tagName name publishedAt }
    primaryLanguage { name }
  }
}"""

# what to write for gh api's --jq and --template, which the api operation does not take
_API_PIPE = "runtime -o raw github api {args} | jq"
_API_GH = "in a capability, gh's own does it: binary: gh, args: [api, ROUTE, --jq, EXPRESSION]"
_API_JQ = (
    f"'api' prints the answer's JSON whole: filter it with jq, `{_API_PIPE} {{value}}`; {_API_GH}"
)
_API_TEMPLATE = (
    f"'api' prints the answer's JSON whole: format it with jq, `{_API_PIPE} EXPRESSION`; " + _API_GH
)

# gh issue list's --search is GitHub's search syntax, which the issues routes do not take
_ISSUE_SEARCH = (
    "GitHub's search is its own route: `runtime github api GET /search/issues "
    "q='repo:OWNER/REPO is:issue QUERY'`"
)

OPERATIONS: tuple[Operation, ...] = (
    _rest(
        "user get",
        "The authenticated user",
        routes=("GET /user",),
        handler=_OPS + "rest_get",
        columns=_fields("login", "name", "company", "email", "html_url"),
        example="runtime github user get",
    ),
    _rest(
        "org list",
        "Organizations of the authenticated user",
        options=_PAGING,
        scopes=("read:org",),
        routes=("GET /user/orgs",),
        handler=_OPS + "rest_list",
        columns=(("LOGIN", "login"), ("DESCRIPTION", "description")),
        example="runtime github org list",
    ),
    _rest(
        "notification list",
        "Notifications of the authenticated user",
        scopes=("notifications",),
        options=(
            Option("all", "also the notifications marked as read", type="bool"),
            Option("participating", "only those you participate in", type="bool"),
            *_PAGING,
        ),
        routes=("GET /notifications",),
        handler=_OPS + "rest_list",
        columns=(
            ("REPOSITORY", "repository.full_name"),
            ("REASON", "reason"),
            ("TITLE", "subject.title"),
        ),
        example="runtime github notification list all=true",
    ),
    _rest(
        "team list",
        "Teams of ORG (else the context's organization)",
        scopes=("read:org",),
        positionals=(_CONTEXT_ORG,),
        options=_PAGING,
        routes=("GET /orgs/{org}/teams",),
        handler=_OPS + "rest_list",
        columns=(("SLUG", "slug"), ("NAME", "name")),
        example="runtime github team list acme",
    ),
    _rest(
        "repo list",
        "Repositories of ORG (else the context's organization, else your own)",
        positionals=(_CONTEXT_ORG,),
        options=(
            Option(
                "type",
                "which repositories",
                choices=("all", "owner", "public", "private", "forks", "sources", "member"),
            ),
            Option("sort", choices=("created", "updated", "pushed", "full_name")),
            _DIRECTION,
            *_PAGING,
            _json("repo list"),
        ),
        routes=("GET /orgs/{org}/repos", "GET /user/repos"),
        handler=_OPS + "repo_list",
        example="runtime github repo list acme per_page=100",
    ),
    _rest(
        "repo view",
        "One repository",
        positionals=(_REPO,),
        options=(_json("repo view"),),
        routes=("GET /repos/{owner}/{repo}",),
        handler=_OPS + "rest_get",
        columns=_fields(
            "full_name",
            "description",
            "visibility",
            "default_branch",
            "language",
            "stargazers_count",
            "forks_count",
            "open_issues_count",
            "html_url",
        ),
        example="runtime github repo view cli/cli --json name,url",
    ),
    _rest(
        "repo create",
        "Create a repository (in an organization with org=)",
        effect="write",
        scopes=("repo",),
        options=(
            Option("name", required=True),
            Option("org", "the organization to create it in", in_route="{org}"),
            Option("private", type="bool"),
            Option("visibility", choices=("public", "private", "internal")),
            Option("description"),
            Option("homepage"),
            Option("auto_init", type="bool"),
            Option("gitignore_template"),
            Option("license_template"),
            Option("has_issues", type="bool"),
            Option("has_wiki", type="bool"),
            Option("has_projects", type="bool"),
            Option("is_template", type="bool"),
        ),
        routes=("POST /orgs/{org}/repos", "POST /user/repos"),
        handler=_OPS + "repo_create",
        example="runtime github repo create name=demo private=true auto_init=true",
    ),
    _rest(
        "issue list",
        "Open issues of a repository or of an organization's repositories (else the "
        "context's organization, else those assigned to you); never pull requests",
        positionals=(
            Positional(
                "OWNER/REPO|ORG",
                required=False,
                help="OWNER/REPO, or an organization's login (its repositories you can "
                "see as a member)",
                context_default="organization",
                in_route=_ORG_OR_REPO,
                flags=("--repo", "-R"),
            ),
        ),
        options=(
            Option(
                "filter",
                "which issues of an organization's or your own (default: all of an "
                "organization's, those assigned to you of your own)",
                choices=("assigned", "created", "mentioned", "subscribed", "repos", "all"),
            ),
            Option(
                "state", "default: open", choices=("open", "closed", "all"), flags=("--state", "-s")
            ),
            Option("labels", "comma-separated label names", flags=("--label", "-l")),
            # gh's filters of one person and a milestone: GET /repos/{owner}/{repo}/issues
            # takes them, an organization's and your own issues do not (refused there)
            Option(
                "assignee",
                "a repository's issues assigned to this login (@me: you; none; *: anyone)",
                flags=("--assignee", "-a"),
            ),
            Option(
                "creator",
                "a repository's issues opened by this login (@me: you)",
                flags=("--author", "-A"),
            ),
            Option(
                "mentioned",
                "a repository's issues that mention this login (@me: you)",
                flags=("--mention",),
            ),
            Option(
                "milestone",
                "a repository's issues in this milestone: its number, * or none",
                flags=("--milestone", "-m"),
            ),
            Option("sort", choices=("created", "updated", "comments")),
            _DIRECTION,
            Option("since", "only issues updated at or after this time (ISO 8601)"),
            *_PAGING,
            _json("issue list"),
        ),
        routes=("GET /repos/{owner}/{repo}/issues", "GET /orgs/{org}/issues", "GET /issues"),
        handler=_OPS + "issue_list",
        example="runtime github issue list acme/app --state all --limit 20",
        flag_hints=tuple((flag, _ISSUE_SEARCH) for flag in ("--search", "-S")),
    ),
    _rest(
        "file put",
        "Create or update a file's content (the text is base64-encoded for you; an existing "
        "file is updated with its current sha)",
        effect="write",
        scopes=("repo",),
        positionals=(
            _REPO,
            Positional("PATH", help="the file's path in the repository", in_route="{path}"),
        ),
        options=(
            Option("message", "the commit message", required=True),
            Option("content", "the file's new text", required=True),
            Option("branch"),
        ),
        routes=(
            "GET /repos/{owner}/{repo}/contents/{path}",
            "PUT /repos/{owner}/{repo}/contents/{path}",
        ),
        handler=_OPS + "file_put",
        example="runtime github file put acme/site README.md message='Add readme' content='# Site'",
    ),
    _rest(
        "release list",
        "Releases of a repository, newest first",
        positionals=(_REPO._replace(flags=("--repo", "-R")),),
        options=(*_PAGING, _json("release list")),
        routes=("GET /repos/{owner}/{repo}/releases",),
        handler=_OPS + "rest_list",
        columns=(("TAG", "tag_name"), ("NAME", "name"), ("PUBLISHED", "published_at")),
        example="runtime github release list cli/cli --limit 10",
    ),
    _rest(
        "api",
        "Any REST route: GET/DELETE pairs are query parameters, POST/PUT/PATCH a JSON body",
        effect="write",
        positionals=(Positional("METHOD"), Positional("PATH", help="a route GitHub documents")),
        options=None,
        positionals_first=True,
        effect_rules=(
            EffectRule("METHOD", r"^(?i:GET|HEAD)$", "read"),
            EffectRule("METHOD", r"^(?i:DELETE)$", "destroy"),
        ),
        handler=_OPS + "api",
        example="runtime github api GET /repos/cli/cli/community/profile",
        # gh api's filters: api prints the answer's JSON whole, for jq to filter (a
        # jq=... pair would be sent as a query parameter)
        flag_hints=(
            *((flag, _API_JQ) for flag in ("--jq", "-q")),
            *((flag, _API_TEMPLATE) for flag in ("--template", "-t")),
        ),
    ),
    Operation(
        words=("repo", "summary"),
        summary="Description, visibility, default branch, stars, forks, open issues and PRs, "
        "latest release, language (one request)",
        transport="graphql",
        effect="read",
        credential="github",
        positionals=(_REPO,),
        document=REPO_SUMMARY_QUERY,
        handler=_OPS + "repo_summary",
        example="runtime github repo summary cli/cli",
    ),
    Operation(
        words=("graphql",),
        summary="Any GraphQL query or mutation (each mutation with its effect: deleteIssue "
        "destroys); name=value pairs are variables (typed like api)",
        transport="graphql",
        effect="read",
        credential="github",
        positionals=(Positional("QUERY", help="a GraphQL document"),),
        options=None,
        effect_from=_graphql_effect,
        actions_from=_graphql_actions,
        handler=_OPS + "graphql",
        example="runtime github graphql 'query { viewer { login } }'",
    ),
    _gh("pr list", "Pull requests (gh pr list)", example="runtime github pr list --repo cli/cli"),
    _gh(
        "pr view",
        "One pull request (gh pr view)",
        positionals=(Positional("N", help="its number, URL or branch"),),
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
        positionals=(Positional("ID", help="the run's id"),),
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
        positionals=(Positional("WORKFLOW", help="its file name, id or name"),),
        example="runtime github workflow run ci.yml --repo acme/site --ref main",
    ),
)


# What `runtime capability new NAME --provider github` writes: inputs and workflow.
SCAFFOLD = """inputs:
  repository:
    description: Repository to inspect, as <owner>/<repo>
    required: true

workflow:
  # Each step names a provider and the words you would type after
  # `runtime github`; `runtime github --help` lists every operation
  # and the transport the provider uses for it.
  - provider: github
    args: [repo, summary, "${repository}"]

  - provider: github
    args: [api, GET, "/repos/${repository}/community/profile"]
"""


def _gh_environment(token: str, host: str, config_dir: str) -> dict[str, str]:
    from providers.github.endpoints import gh_environment

    return gh_environment(token, host, config_dir)


def _host_from_environ(environ: Mapping[str, str]) -> str | None:
    from providers.github.endpoints import host_from_environ

    return host_from_environ(environ)


CREDENTIALS = (
    CredentialKind(
        name="github",
        variable="RUNTIME_GITHUB_TOKEN",
        variable_setting="github_token_env",
        keyring_service="runtime:github:{host}",
        default_host="github.com",
        host_setting="github_host",
        host_from_environ=_host_from_environ,
        program_environment=_gh_environment,
        host_aliases=lambda host: ("api.github.com",) if host == "github.com" else (),
        login_hint="a GitHub token (classic or fine-grained)",
    ),
)

SETTINGS = (
    SettingKind(
        "github_host",
        "the GitHub host (github.com, or a GitHub Enterprise Server host[:port])",
        host_setting("github_host"),
        in_config=True,
    ),
    SettingKind(
        "organization", "the default organization (ORG of repo list, team list, issue list...)"
    ),
)


# gh reaches the GitHub host and runs git (repo clone, pr checkout); git, as a binary step
# or under gh, reaches the same host: no other network, and no other program
PROGRAMS = (
    GH,
    ProgramProfile("git", hosts_of=("github",)),
)


class GitHubProvider(ProviderBase):
    name = "github"
    summary = "GitHub and GitHub Enterprise Server over REST, GraphQL and the gh CLI"
    operations = OPERATIONS
    credentials = CREDENTIALS
    settings = SETTINGS
    programs = PROGRAMS
    scaffold = SCAFFOLD
    scaffold_network = "public"

    def execute(self, operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
        from providers.github.ops import execute

        return execute(operation, call, env)

    def inspect(self, operation: Operation, call: BoundCall, run: RunContext) -> Inspection:
        from providers.github.ops import inspect

        return inspect(operation, call, run)

    def check(self, operation: Operation, call: BoundCall) -> list[BindingProblem]:
        """Validation (the call bound from the args as authored, a ${reference} a missing
        piece): an ``api`` step whose METHOD and PATH are literal names a route GitHub
        documents; a literal OWNER/REPO or ORG is one a route can take; ``repo create
        visibility=internal`` has an ``org=``. A ${reference} is not known before plan
        time: checked then, with its value (:func:`providers.github.ops.inspect`)."""
        if operation.name == "api":
            from providers.github.routes import check_api

            found, _, _ = check_api(call)
            return found
        problems: list[BindingProblem] = []
        if operation.name == "repo create":
            from providers.github.routes import check_repo_create

            problems += check_repo_create(call)
        if operation.name == "issue list":
            from providers.github.routes import check_issue_list

            problems += check_issue_list(call)
        binding, args = call.binding, call.args
        if binding is None:
            return problems
        declared = {p.name: p.in_route for p in operation.positionals}
        declared.update((o.name, o.in_route) for o in operation.options or ())
        authored = [
            (index, args[index][binding.value_start(index) :], declared[name])
            for name, index in binding.positionals.items()
            if declared.get(name) in _NAMES_IN_ROUTE and "${" not in args[index]
        ] + [
            (index, args[index][binding.value_start(index, key) :], declared[key])
            for key, index in binding.options
            if declared.get(key) in _NAMES_IN_ROUTE and "${" not in args[index]
        ]
        if not authored:
            return problems
        from providers.github.routes import VALUE_KINDS, authored_problems

        return problems + [
            problem
            for index, value, in_route in authored
            for problem in authored_problems(index, value, VALUE_KINDS[str(in_route)])
        ]

    def check_token(
        self, run: RunContext, host: str, token: str, timeout: float
    ) -> dict[str, object]:
        """Read-only: GET /user with the token, no retries and no waits; its login and
        scopes."""
        from providers.github.ops import check_token

        environ = {
            **run.environ,
            "RUNTIME_GITHUB_TIMEOUT": str(timeout),
            "RUNTIME_GITHUB_MAX_WAIT": "0",
        }
        return check_token(environ, run, host, token)

    def ping(self, run: RunContext, host: str, timeout: float, max_bytes: int) -> int:
        """Read-only and bounded: does the host answer? Its HTTP status."""
        from providers.github.ops import ping

        return ping(run.environ, run, host, timeout, max_bytes)


PROVIDER = GitHubProvider()
