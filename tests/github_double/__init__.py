"""A loopback GitHub double for tests: REST v3, GraphQL v4 and the real ``gh`` CLI.

:class:`GitHubDouble` runs a real HTTP/1.1 server (``http.server``, keep-alive,
always ``Content-Length``) on ``127.0.0.1`` with an ephemeral port, backed by
in-memory state that tests seed from Python::

    with GitHubDouble(token="ghp_test", tls=False) as gh:
        gh.add_org("acme")
        gh.add_repo("acme", "payments-api", description="Payments", language="Python")
        gh.add_pull("acme", "payments-api", "Add retries", head="retries")
        gh.base_url     # http://127.0.0.1:PORT
        gh.api_url      # REST base; REST is served at / and at /api/v3/
        gh.graphql_url  # http://127.0.0.1:PORT/graphql (also /api/graphql)
        gh.host         # "127.0.0.1:PORT"

Requests need ``Authorization: token T`` or ``Bearer T``; anything else gets
401 ``{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}``.
GraphQL documents are validated against GitHub's published schema (npm
``@octokit/graphql-schema``, see :mod:`tests.github_double.schema`) and
executed against the same state.

Faults (``gh.inject(...)`` and the ``inject_*`` helpers), request and
connection counters (``gh.requests``, ``gh.connections``) let tests check how a
client behaves under errors, rate limits, slow or broken responses and
redirects, and how economically it uses the network.

Running the real ``gh`` CLI against the double
=============================================

``gh`` treats any host other than ``github.com`` as GitHub Enterprise Server
and then only speaks HTTPS, to ``https://HOST/api/v3/`` (REST) and
``https://HOST/api/graphql`` (GraphQL).  Start the double with ``tls=True``:
it creates a throwaway CA plus a certificate for ``localhost``/``127.0.0.1``
(``gh.ca_file`` is the CA's PEM file).  Verified with gh 2.23.0 (Debian
package ``gh``; ``apt-get update && apt-get install -y gh``), running
``gh pr list --repo OWNER/REPO --json number,title``, ``gh pr view N --repo
OWNER/REPO``, ``gh run list --repo OWNER/REPO`` and ``gh workflow run
WORKFLOW --repo OWNER/REPO``.  The exact environment::

    GH_HOST=localhost:PORT          # a host *with a port* works; 127.0.0.1:PORT works too
    GH_ENTERPRISE_TOKEN=<token>     # gh only sends GH_ENTERPRISE_TOKEN / GITHUB_ENTERPRISE_TOKEN
                                    # to enterprise hosts; GH_TOKEN is ignored there (-> 401)
    SSL_CERT_FILE=<gh.ca_file>      # Go's TLS stack trusts the throwaway CA (without it:
                                    # "x509: certificate signed by unknown authority")
    GH_CONFIG_DIR=<empty temp dir>  # keep gh away from the developer's config / hosts.yml
    GH_NO_UPDATE_NOTIFIER=1 GH_PROMPT_DISABLED=1 GH_PAGER=cat NO_COLOR=1   # quiet, non-interactive

``gh.gh_env()`` returns exactly these (plus ``GITHUB_ENTERPRISE_TOKEN`` and
blanked ``GH_TOKEN``/``GITHUB_TOKEN``); merge it over ``os.environ``::

    with GitHubDouble(token="ghp_test", tls=True) as gh:
        gh.add_repo("acme", "payments-api")
        env = {**os.environ, **gh.gh_env()}
        subprocess.run(["gh", "pr", "list", "--repo", "acme/payments-api",
                        "--json", "number,title"], env=env, check=True)

Instead of ``GH_HOST`` the host may be put in the repository argument:
``--repo localhost:PORT/acme/payments-api``.  ``gh pr list``/``pr view`` use
GraphQL (``PullRequestList`` / ``PullRequestByNumber`` queries); ``run list``
uses ``GET actions/runs`` and ``GET actions/workflows``; ``workflow run`` uses
the GraphQL ``RepositoryInfo`` query (for the default branch), ``GET
actions/workflows/{file}`` and ``POST .../dispatches`` (the double records the
dispatch in ``repo.dispatches`` and queues a new run, like GitHub).
"""

from .double import DEFAULT_SCOPES, GitHubDouble
from .faults import Fault, FaultKind
from .http_types import RecordedRequest
from .schema import INSTALL_COMMAND, SchemaNotInstalledError, load_schema, schema_path
from .state import (
    Issue,
    Notification,
    Org,
    PullRequest,
    Release,
    Repo,
    Run,
    State,
    Team,
    User,
    Workflow,
)

__all__ = [
    "DEFAULT_SCOPES",
    "INSTALL_COMMAND",
    "Fault",
    "FaultKind",
    "GitHubDouble",
    "Issue",
    "Notification",
    "Org",
    "PullRequest",
    "RecordedRequest",
    "Release",
    "Repo",
    "Run",
    "SchemaNotInstalledError",
    "State",
    "Team",
    "User",
    "Workflow",
    "load_schema",
    "schema_path",
]
