"""Preflight's checks of the network: the capability's network rule, the hosts its
steps contact, context sources, MCP servers, and how the rule is enforced.

Offline, a host or URL is only checked against the rule; ``--live`` adds a
bounded, read-only request (a provider's ping, a HEAD, an MCP discovery).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from runtime.document.requirements import Requirement, sanitize_url
from runtime.preflight.programs import run_launcher
from runtime.preflight.report import (
    FALSE,
    LIVE_MAX_BYTES,
    LIVE_TIMEOUT,
    TRUE,
    UNKNOWN,
    Check,
    Context,
    timestamp,
)
from runtime.tls import CertificateSetupError


def check_network(req: Requirement, ctx: Context) -> Check:
    rule = ctx.network
    if rule is None:
        return Check(req, FALSE, FALSE, f"malformed network value {req.target.get('rule')!r}")
    if not ctx.hosts:
        return Check(req, TRUE, TRUE, f"{rule.describe()}; no step contacts a network host")
    verdicts = [(h, *rule.check(h, resolve=False)) for h in ctx.hosts]
    refused = [f"{h} ({why})" for h, ok, why in verdicts if ok is False]
    if refused:
        return Check(
            req,
            TRUE,
            FALSE,
            f"{rule.describe()}, but steps contact: {'; '.join(refused)}",
            "remove those steps, or change requires.network deliberately",
        )
    unknown = [h for h, ok, _ in verdicts if ok is None]
    if unknown:
        return Check(
            req,
            TRUE,
            UNKNOWN,
            f"{rule.describe()}; cannot tell offline whether {', '.join(unknown)} "
            "is local (enforced when the step runs)",
        )
    from runtime.plan.network import scope

    # each host with what it counts as (127.0.0.1 is local, whichever rule allows it)
    hosts = ", ".join(f"{h} ({scope(h)})" for h in ctx.hosts)
    return Check(req, TRUE, TRUE, f"{rule.describe()} covers {hosts}")


def check_host(req: Requirement, ctx: Context) -> Check:
    host = req.target["host"]
    verdict: tuple[bool | None, str] = (True, "no network rule declared")
    if ctx.network is not None:
        verdict = ctx.network.check(host, resolve=False)
    if verdict[0] is False:
        return Check(req, TRUE, FALSE, verdict[1], "change requires.network, or the steps")
    if not ctx.live:
        return Check(req, TRUE, UNKNOWN if verdict[0] is None else TRUE, verdict[1])
    return _live_host(req, ctx, host)


def _live_host(req: Requirement, ctx: Context, host: str) -> Check:
    """A bounded, read-only GET of the API root: does the host answer at all?"""
    from runtime.errors import StepError

    stamp = timestamp(ctx)
    planned = next((s for s in ctx.plan.steps if s.index == req.step), None)
    provider = ctx.ws.registry.get(planned.provider or "") if planned is not None else None
    try:
        if provider is None:
            raise NotImplementedError
        status = provider.ping(ctx.services, host, LIVE_TIMEOUT, LIVE_MAX_BYTES)
    except NotImplementedError:
        return Check(req, TRUE, UNKNOWN, f"no live check for {host}", checked_at=stamp)
    except StepError:
        return Check(
            req,
            TRUE,
            FALSE,
            f"{host} did not answer",
            "check the network and the host",
            checked_at=stamp,
        )
    return Check(req, TRUE, TRUE, f"{host} answered (HTTP {status})", checked_at=stamp)


def check_context_source(req: Requirement, ctx: Context) -> Check:
    if "path" in req.target:
        raw = req.target["path"]
        p = Path(os.path.expanduser(raw))
        p = p if p.is_absolute() else ctx.ws.cwd / p
        if p.exists() and os.access(p, os.R_OK):
            return Check(req, TRUE, TRUE, f"{raw} is readable")
        return Check(
            req, TRUE, FALSE, f"{raw} is not readable" if p.exists() else f"{raw} does not exist"
        )
    url = req.target["url"]
    shown = sanitize_url(url)
    if not ctx.live:
        return Check(req, TRUE, UNKNOWN, f"{shown} is checked only with --live")
    import httpx

    from runtime.errors import StepError

    stamp = timestamp(ctx)
    try:
        verify = _verify(ctx)
        with httpx.Client(timeout=LIVE_TIMEOUT, verify=verify, trust_env=False) as http:
            status = http.head(url).status_code
    except (httpx.HTTPError, StepError, ValueError, CertificateSetupError):
        return Check(req, TRUE, FALSE, f"{shown} did not answer", checked_at=stamp)
    if status < 400:
        return Check(req, TRUE, TRUE, f"{shown} answered HEAD with HTTP {status}", checked_at=stamp)
    return Check(req, TRUE, FALSE, f"{shown} answered HEAD with HTTP {status}", checked_at=stamp)


def _verify(ctx: Context) -> Any:
    from runtime.tls import ssl_context

    return ssl_context(ctx.ws.environ)


MCP_EXTRA = "pip install 'runtime-engine[mcp]'"


def _mcp_timeout(ctx: Context) -> float:
    """RUNTIME_MCP_TIMEOUT (seconds, for the whole discovery of one requirement), else 10."""
    try:
        value = float(ctx.ws.environ.get("RUNTIME_MCP_TIMEOUT", "10"))
    except ValueError:
        return 10.0
    return value if 0 < value < float("inf") else 10.0


def check_mcp(req: Requirement, ctx: Context) -> Check:
    url = req.target["serverUrl"]
    shown = sanitize_url(url)
    if not ctx.live:
        return Check(req, TRUE, UNKNOWN, f"MCP server {shown} is checked only with --live")
    try:  # the official SDK, an optional extra: imported here, on the --live path only
        from runtime.preflight.mcp import discover
    except ImportError as exc:
        missing = (exc.name or "mcp").partition(".")[0]
        if missing == "runtime":
            raise
        reason = "live MCP checks need the mcp SDK, an optional extra that is not installed"
        if missing != "mcp":
            reason = f"live MCP checks need the mcp SDK, which is incomplete ({missing} is missing)"
        return Check(req, TRUE, UNKNOWN, reason, MCP_EXTRA)

    stamp = timestamp(ctx)
    kind = {"mcpServer": "server", "mcpTool": "tools", "mcpResource": "resources"}[req.type]
    wanted = req.target.get("name") if req.type == "mcpTool" else req.target.get("uri")
    try:
        verify = _verify(ctx)
    except CertificateSetupError as exc:
        return Check(
            req, TRUE, FALSE, str(exc), "fix SSL_CERT_FILE / SSL_CERT_DIR", checked_at=stamp
        )
    found = discover(url, kind, find=wanted, verify=verify, timeout=_mcp_timeout(ctx))  # type: ignore[arg-type]
    if not found.ok:
        return Check(req, TRUE, FALSE, found.reason, checked_at=stamp)
    if req.type == "mcpServer":
        return Check(req, TRUE, TRUE, f"MCP server {shown} answered", checked_at=stamp)
    what = "tool" if req.type == "mcpTool" else "resource"
    if wanted in found.names:
        return Check(req, TRUE, TRUE, f"{shown} lists the {what} {wanted}", checked_at=stamp)
    if found.cut_off:
        return Check(
            req,
            TRUE,
            UNKNOWN,
            f"{what} {wanted} not among the first {found.pages} pages of {shown} "
            "(discovery stops there)",
            checked_at=stamp,
        )
    return Check(req, TRUE, FALSE, f"{shown} does not list the {what} {wanted}", checked_at=stamp)


def check_network_enforcement(req: Requirement, ctx: Context) -> Check:
    rule = ctx.network
    if rule is None:
        return Check(req, FALSE, FALSE, "the capability's network rule cannot be read")
    if req.target.get("kind") != "binary":
        return Check(
            req,
            TRUE,
            TRUE,
            f"{rule.describe()}: checked by the provider before every connection it makes",
        )
    if run_launcher(ctx).confined:
        return Check(
            req,
            TRUE,
            TRUE,
            f"{rule.describe()}: the program runs in a network namespace of its own and "
            "reaches, through runtime's proxy, only the hosts its profile and the policy "
            "name that the rule allows",
        )
    if rule.kind == "public":
        return Check(req, TRUE, TRUE, "public: an unconfined program's network is not restricted")
    return Check(
        req,
        TRUE,
        FALSE,
        f"{rule.describe()}: cannot be enforced without OS confinement; the step is refused",
        "install bubblewrap and allow unprivileged user namespaces, or drop the binary step",
    )
