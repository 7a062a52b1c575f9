"""Preflight's checks of credentials: found where the Auth Engine looks, and with
``--live`` accepted by their host, with the scopes the capability needs.

A report names where a credential came from, never its value.
"""

from __future__ import annotations

from runtime.document.requirements import Requirement
from runtime.preflight.report import FALSE, LIVE_TIMEOUT, TRUE, UNKNOWN, Check, Context, timestamp


def check_credential(req: Requirement, ctx: Context) -> Check:
    auth = ctx.services.auth
    if "env" in req.target:  # declared typed credential: only whether the variable is set
        var = req.target["env"]
        if ctx.ws.environ.get(var):
            return Check(req, TRUE, TRUE, f"{var} is set")
        return Check(req, TRUE, FALSE, f"{var} is not set", f"export {var}=...")
    host = req.target.get("host") or auth.default_host(req.target["name"])
    found = auth.lookup(req.target["name"], host)
    if found.credential is None:
        why = f" ({found.problem})" if found.problem else ""
        return Check(
            req,
            TRUE,
            FALSE,
            f"no {req.target['name']} credential for {host}: looked in "
            f"{', '.join(found.tried)}{why}",
            auth.fix_hint(req.target["name"], host, found.problem is not None),
        )
    if not ctx.live:
        return Check(
            req,
            TRUE,
            TRUE,
            f"{req.target['name']} credential for {host} from {found.credential.source}",
        )
    return _live_credential(req, ctx, host, found.credential.value, found.credential.source)


SCOPE_PARENTS = {
    "public_repo": "repo",
    "repo:status": "repo",
    "repo_deployment": "repo",
    "repo:invite": "repo",
    "read:org": "admin:org",
    "write:org": "admin:org",
    "notifications": "repo",
}


def _covered(scope: str, granted: set[str]) -> bool:
    if scope in granted:
        return True
    parent = SCOPE_PARENTS.get(scope)
    if parent and parent in granted:
        return True
    return scope == "read:org" and "write:org" in granted


def _live_credential(req: Requirement, ctx: Context, host: str, token: str, source: str) -> Check:
    from runtime.errors import StepError

    stamp = timestamp(ctx)
    name = req.target["name"]
    provider = ctx.ws.registry.credential_owner(name)
    try:
        if provider is None:
            raise NotImplementedError
        user = provider.check_token(ctx.services, host, token, LIVE_TIMEOUT)
    except NotImplementedError:
        return Check(req, TRUE, UNKNOWN, f"no live check of {name} tokens", checked_at=stamp)
    except StepError as exc:
        status = exc.http_status
        if status == 401:
            return Check(
                req,
                TRUE,
                FALSE,
                f"the token from {source} was rejected by {host} (401)",
                ctx.services.auth.fix_hint(name, host),
                checked_at=stamp,
            )
        if status is not None:
            return Check(
                req, TRUE, FALSE, f"{host} answered {status} to the token check", checked_at=stamp
            )
        return Check(
            req,
            TRUE,
            FALSE,
            f"{host} did not answer",
            "check the network and the host",
            checked_at=stamp,
        )
    needed = req.target.get("scopes") or []
    scopes: list[str] | None = user.get("scopes")  # type: ignore[assignment]
    login = user.get("login")
    if needed and scopes is None:
        return Check(
            req,
            TRUE,
            UNKNOWN,
            f"valid for {host} (login {login}); the token reports no scopes "
            f"(fine-grained?), so {', '.join(needed)} cannot be checked",
            checked_at=stamp,
        )
    missing = [s for s in needed if not _covered(s, set(scopes or []))]
    if missing:
        return Check(
            req,
            TRUE,
            FALSE,
            f"valid for {host} (login {login}) but lacks scope {', '.join(missing)}",
            f"create a token with {', '.join(missing)}",
            checked_at=stamp,
        )
    return Check(
        req,
        TRUE,
        TRUE,
        f"valid for {host} (login {login})" + (f" with {', '.join(needed)}" if needed else ""),
        checked_at=stamp,
    )
