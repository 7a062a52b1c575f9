"""The gh CLI transport: the real ``gh`` binary, run without a shell.

gh gets a bounded environment: the policy's allow-listed variables
(including SSL_CERT_FILE / SSL_CERT_DIR for a private CA), the token as
``GH_TOKEN`` (github.com) or ``GH_ENTERPRISE_TOKEN`` (any other host), the
host in ``GH_HOST``, and an empty ``GH_CONFIG_DIR`` of its own, so the
caller's gh login, aliases and extensions are never used. The token is never
in argv. The operation's own flags pass through verbatim. gh runs as every
step's program runs (:meth:`StepEnvironment.run_program`): confined where the
system allows it, and with the engine's hardened git for the git it starts
(``git remote``, ``git status``, ``git push`` in a checkout).
"""

from __future__ import annotations

import contextlib
import shutil

from providers.github.endpoints import Endpoints, gh_environment, rejected_hint
from providers.github.payload import loads
from runtime.provider import BoundCall, Operation, StepEnvironment, StepError, StepOutcome


def run_gh(
    operation: Operation, call: BoundCall, env: StepEnvironment, endpoints: Endpoints
) -> StepOutcome:
    # decided at plan time as gh's call would be in a binary step (the operation declares
    # its program): subcommands, literal options, denied runs, the pinned host
    argv_tail = [*operation.words, *call.args]
    env.check_host(endpoints.api_host)
    path = shutil.which("gh", path=env.environ.get("PATH", ""))
    if path is None:
        raise StepError(
            "the gh CLI is not installed or not on PATH; this operation runs through it",
            hint="install gh (https://cli.github.com, Debian package gh)",
        )
    with env.run.scratch("gh") as config_dir:
        child = env.run.program_environment()
        token = env.run.credential("github", endpoints.host)
        child.update(gh_environment(token, endpoints.host, config_dir))
        result = env.run_program([path, *argv_tail], child, config_dir)
    data: object = {"stdout": result.stdout, "stderr": result.stderr}
    if "--json" in call.args and result.exit_code == 0 and not result.truncated:
        with contextlib.suppress(ValueError, RecursionError):
            data = loads(result.stdout)
    outcome = StepOutcome(
        ok=result.exit_code == 0 and not result.timed_out,
        output=result.stdout + (result.stderr if result.exit_code else ""),
        data=data,
        exit_code=result.exit_code,
        output_bytes=result.stdout_bytes + result.stderr_bytes,
        truncated=result.truncated,
        streamed=True,
    )
    if result.timed_out:
        outcome.error = f"gh timed out after {env.timeout:g} s; its process group was killed"
    elif result.exit_code != 0:
        # gh says what went wrong first, then what to try ("Try authenticating with: gh
        # auth login", which is not how runtime gives gh its token); all of it was shown
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        said = lines[0].strip() if lines else "(no message)"
        outcome.error = f"gh {operation.name} exited with code {result.exit_code}: {said}"
        if result.blocked:
            outcome.error += f"; its network refused a connection: {result.blocked[0]}"
        if "HTTP 401" in said:
            outcome.hint = rejected_hint(
                env.run.default_host("github"),
                endpoints.host,
                "the github credential runtime gave gh",
            )
            outcome.credential_rejected = True  # exit 4, as a REST step's 401 is
    return outcome
