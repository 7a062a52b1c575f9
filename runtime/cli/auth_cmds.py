"""auth login / status / logout and context list / show / use / set."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from runtime.cli.completion import context_names
from runtime.cli.render import emit_json, err, out
from runtime.cli.session import ensure_home, json_mode, workspace
from runtime.errors import ExitCode, MissingCredential, StepError, UsageError

if TYPE_CHECKING:
    from runtime.execute.services import RunServices
    from runtime.home.auth import Credential
    from runtime.plan.workspace import Workspace
    from runtime.provider import CredentialKind

auth_app = typer.Typer(
    rich_markup_mode=None,
    help="Credentials: log in (token into the OS keyring), status, log out.",
    no_args_is_help=True,
)
context_app = typer.Typer(
    rich_markup_mode=None,
    help="Named Runtime Contexts: the defaults providers read (a host, an organization).",
    no_args_is_help=True,
)


def _credential(name: str | None) -> str:
    """The credential a command is about: named, or the only one the providers declare."""
    from runtime.home.registry import load_registry

    known = load_registry().credential_names()
    if name is None:
        if len(known) == 1:
            return known[0]
        raise UsageError(
            "name the credential: " + (", ".join(known) or "no provider declares one"),
            hint="runtime auth login NAME",
        )
    if name not in known:
        raise UsageError(
            f"no credentials are kept for '{name}'", hint="known: " + (", ".join(known) or "none")
        )
    return name


def _services(ws: Workspace) -> RunServices:
    from runtime.execute.services import Services
    from runtime.redact import Redactor

    return Services(ws, Redactor())


def _check_host(host: str | None) -> None:
    """Refuse ``--host`` unless it is ``name[:port]`` (a URL would be sent a token as a
    host named "https"): exit 2, before anything is read or sent."""
    from runtime.provider.hosts import host_error

    problem = None if host is None else host_error("--host", host)
    if problem is not None:
        raise UsageError(problem, hint="give the host alone: --host ghe.example.com")


def _session(name: str | None, host: str | None) -> tuple[Workspace, RunServices, str, str]:
    """Workspace, services, credential and host for an auth command (Home refreshed)."""
    _check_host(host)
    credential = _credential(name)
    ws = workspace()
    ensure_home(ws)
    services = _services(ws)
    return ws, services, credential, host or services.auth.default_host(credential)


def _read_stdin() -> str:
    """What was piped on stdin, as text; bytes that are not UTF-8 are a clear refusal."""
    from runtime.home.auth import InvalidCredential

    try:
        return sys.stdin.read()
    except UnicodeDecodeError:
        raise InvalidCredential(
            "the token on stdin is not UTF-8 text (a token is ASCII letters, digits and "
            "punctuation); nothing was stored",
            hint="pipe the token alone, e.g. runtime auth login NAME < token.txt",
        ) from None


def _check_token(services: RunServices, credential: str, host: str, token: str) -> dict[str, Any]:
    """The host's word on the token: its login and scopes. A 401 is a token the host does
    not accept (exit 4); any other failure (no answer, a 5xx, a rate limit) says nothing
    about the token, so it is a failure to check it (exit 1), never "not accepted"."""
    from runtime.errors import StepError

    provider = services.workspace.registry.credential_owner(credential)
    assert provider is not None  # the credential is one a provider declares (_credential)
    services.redactor.add(token)
    try:
        # what the host says is untrusted: a proxy or a server that echoes the request's
        # Authorization header in the login must not print the token
        answer = provider.check_token(services, host, token, 30.0)
        return services.redactor.data(answer)  # type: ignore[no-any-return]
    except NotImplementedError:
        return {"login": None, "scopes": None}
    except StepError as exc:
        red = services.redactor
        hint = red.text(exc.hint) if exc.hint else None
        if exc.http_status == 401:
            raise MissingCredential(
                f"the token was not accepted by {host}: {red.text(exc.message)}", hint=hint
            ) from None
        raise StepError(
            f"cannot check the token with {host}: {red.text(exc.message)}", hint=hint
        ) from None


@auth_app.command("login")
def login_cmd(
    name: str = typer.Argument(
        None, help="The credential to store (default: the only one the providers declare)."
    ),
    host: str = typer.Option(
        None,
        "--host",
        help="Host (default: the active context's, config.yaml's, what the environment names, else the provider's default).",
    ),
) -> None:
    """Store a token in the OS keyring: read from stdin when piped, else a hidden prompt. Never an argument."""
    from runtime.home.auth import KeyringUnavailable, clean_token

    ws, services, name, host = _session(name, host)
    auth = services.auth
    variable = auth.token_env(name)
    hint = "give the token alone (surrounding spaces and newlines are ignored); nothing was stored"
    token = ""
    if not sys.stdin.isatty():
        token = clean_token(_read_stdin(), "stdin", hint, services.redactor)
    elif sys.stdout.isatty() or sys.stderr.isatty():
        import getpass

        what = auth.kind(name).login_hint or "a token"
        prompt = f"Paste {what} for {host} (input hidden): "
        token = clean_token(getpass.getpass(prompt), "the prompt", hint, services.redactor)
    if not token:
        raw = ws.environ.get(variable)
        if raw and raw.strip():
            env_token = clean_token(raw, variable, auth.env_hint(name), services.redactor)
            user = _check_token(services, name, host, env_token)
            message = (
                f"no token on stdin; {variable} is set and valid for {host} "
                f"(login {user.get('login')}); nothing stored"
            )
            if json_mode():
                emit_json(
                    {
                        "ok": True,
                        "host": host,
                        "source": f"environment variable {variable}",
                        "login": user.get("login"),
                        "stored": False,
                    }
                )
            else:
                out(message)
            return
        raise MissingCredential(
            f"no token given: pipe {auth.kind(name).login_hint or 'a token'} on stdin "
            f"(runtime auth login {name} < token.txt) or run it in a terminal",
            hint=f"in a pipeline, export {variable}=<token> instead",
        )
    try:
        user = _check_token(services, name, host, token)
    except StepError as exc:
        raise StepError(f"{exc.message}; nothing was stored", hint=exc.hint) from None
    try:
        auth.store(name, host, token)
    except KeyringUnavailable as exc:
        raise MissingCredential(
            f"cannot store the token: {exc}", hint=f"export {variable}=<token> instead"
        ) from None
    except Exception as exc:
        raise MissingCredential(
            f"the keyring refused the token ({type(exc).__name__})",
            hint=f"export {variable}=<token> instead",
        ) from None
    if json_mode():
        emit_json(
            {
                "ok": True,
                "host": host,
                "source": "keyring",
                "login": user.get("login"),
                "stored": True,
            }
        )
    else:
        who = f" as {user.get('login')}" if user.get("login") else ""
        out(f"logged in to {host}{who}; the token is in the keyring")


@auth_app.command("status")
def status_cmd(
    name: str = typer.Argument(
        None, help="The credential (default: the only one the providers declare)."
    ),
    host: str = typer.Option(None, "--host", help="Only this host."),
    live: bool = typer.Option(
        False, "--live", help="Also ask the host what the token is: its login and scopes."
    ),
) -> None:
    """Where each host's credential comes from (environment variable, keyring); never the token."""
    _check_host(host)
    _ws, services, name, default = _session(name, None)
    kind = services.auth.kind(name)
    hosts = (
        [host] if host else sorted({default, kind.default_host, *_context_hosts(services, kind)})
    )
    rows = []
    ok, unchecked = True, False
    for h in hosts:
        found = services.auth.lookup(name, h)
        row: dict[str, Any] = {
            "host": h,
            "source": found.credential.source if found.credential else None,
            "looked_in": list(found.tried),
            "problem": found.problem,
        }
        if found.invalid is not None:  # a value that cannot be a token: a broken credential
            row.update({"valid": False, "error": found.invalid.message, "fix": found.invalid.hint})
            ok = False
        elif live and found.credential is not None and _not_for(found.credential, h, default, host):
            # a variable's token is not one host's: it goes where runs send it now, and to
            # another host only when --host names it (an Enterprise token never goes to
            # github.com because status lists it)
            row["note"] = (
                f"not checked: a token from the {found.credential.source} goes only to "
                f"{default}, the current host; `runtime auth status --live --host {h}` "
                "checks it there"
            )
        elif live and found.credential is not None:
            try:
                user = _check_token(services, name, h, found.credential.value)
                row.update(
                    {"login": user.get("login"), "scopes": user.get("scopes"), "valid": True}
                )
            except MissingCredential as exc:
                row.update({"valid": False, "error": exc.message})
                ok = False
            except StepError as exc:  # no word on the token: neither valid nor not
                row.update({"error": exc.message})
                unchecked = True
        rows.append(row)
    if json_mode():
        emit_json({"ok": ok and not unchecked, "provider": name, "hosts": rows})
    else:
        for row in rows:
            where = row["source"] or "no credential"
            line = f"{row['host']}: {where}"
            if row.get("valid"):
                line += f"; logged in as {row['login']}; scopes: {', '.join(row.get('scopes') or []) or '(none reported)'}"
            elif row.get("valid") is False:
                line += f"; NOT valid: {row['error']}"
            elif row.get("error"):
                line += f"; {row['error']}"
            out(line)
            if row.get("note"):
                out(f"  note: {row['note']}")
            if row.get("fix"):
                out(f"  hint: {row['fix']}")
            elif row["problem"]:
                out(f"  note: {row['problem']}; use {services.auth.token_env(name)} instead")
    if not ok:
        raise typer.Exit(int(ExitCode.MISSING_CREDENTIAL))
    if unchecked:
        raise typer.Exit(int(ExitCode.STEP_FAILED))


def _not_for(credential: Credential, host: str, current: str, named: str | None) -> bool:
    """Whether ``credential``, found for ``host``, is not to be sent there by ``--live``:
    a credential of no one host (the environment variable's), for a host that is neither
    the current one nor the one ``--host`` named."""
    return credential.source != "keyring" and host != current and host != named


def _context_hosts(services: RunServices, kind: CredentialKind) -> list[str]:
    """The hosts the contexts name for a credential (its provider's host setting)."""
    if not kind.host_setting:
        return []
    hosts = []
    for context in services.contexts.names():
        value = services.contexts.get(context).get(kind.host_setting)
        if value:
            hosts.append(value)
    return hosts


@auth_app.command("logout")
def logout_cmd(
    name: str = typer.Argument(
        None, help="The credential (default: the only one the providers declare)."
    ),
    host: str = typer.Option(
        None,
        "--host",
        help="Host (default: the active context's, config.yaml's, what the environment names, else the provider's default).",
    ),
) -> None:
    """Remove the token from the OS keyring."""
    from runtime.home.auth import KeyringUnavailable, NoKeyring

    ws, services, name, host = _session(name, host)
    try:
        removed = services.auth.delete(name, host)
        said = (
            f"removed the {host} token from the keyring"
            if removed
            else f"no {host} token was in the keyring"
        )
    except NoKeyring as exc:  # nothing can have been stored: logged out already
        removed, said = False, f"no {host} token is stored: {exc}"
    except KeyringUnavailable as exc:  # a keyring that fails may still hold the token
        raise UsageError(f"cannot reach the keyring: {exc}") from None
    variable = services.auth.token_env(name)
    still_used = bool(ws.environ.get(variable, "").strip())
    if json_mode():
        doc: dict[str, object] = {"ok": True, "host": host, "removed": removed}
        if still_used:
            doc["still_used"] = variable
        emit_json(doc)
    else:
        out(said)
    if still_used:  # a note, on stderr in either mode: the variable still logs this user in
        err(
            f"note: {variable} is still set in this environment and is used; "
            f"`unset {variable}` to stop using it"
        )


# -- contexts -------------------------------------------------------------------------------


@context_app.command("list")
def context_list_cmd() -> None:
    """List contexts; the active one is marked."""
    ws = workspace()
    ensure_home(ws)
    store = _services(ws).contexts
    active = store.active_name()
    names = store.names()
    if json_mode():
        emit_json(
            {
                "ok": True,
                "active": active,
                "contexts": [{"name": n, **store.get(n, check=False).values} for n in names],
            }
        )
        return
    if not names:
        out(
            "no contexts; create one with `runtime context set NAME KEY=VALUE ...` "
            f"(keys: {', '.join(store.settings)})"
        )
    for n in names:
        values = " ".join(f"{k}={v}" for k, v in sorted(store.get(n, check=False).values.items()))
        out(f"{'*' if n == active else ' '} {n}  {values}")


@context_app.command("show")
def context_show_cmd(
    name: str = typer.Argument(
        None,
        help="Context name (default: the effective context: the active one's values, "
        "and config.yaml's where it sets none).",
        autocompletion=context_names,
    ),
) -> None:
    """Show the effective context (what providers read), or context NAME.

    Without NAME: the active context's values, and config.yaml's where it sets none."""
    ws = workspace()
    ensure_home(ws)
    store = _services(ws).contexts
    if name is not None:
        ctx = store.get(name, check=False)  # shown as stored, so that a wrong value can be seen
        active = ctx.name == store.active_name()
        if json_mode():
            emit_json({"ok": True, "name": ctx.name, "active": active, "values": ctx.values})
            return
        out(f"{ctx.name}{' (active)' if active else ''}")
        for k, v in sorted(ctx.values.items()):
            out(f"  {k}: {v}")
        return
    current = store.active(check=False)
    settings = store.effective(ws.config.settings, check=False)
    if json_mode():
        emit_json(
            {
                "ok": True,
                "name": current.name if current else None,
                "active": current is not None,
                "values": {k: s.value for k, s in settings.items()},
                "sources": {k: s.origin for k, s in settings.items()},
            }
        )
        return
    out(f"{current.name} (active)" if current else "no active context")
    for k, s in sorted(settings.items()):
        out(f"  {k}: {s.value}" + ("" if s.context else f" ({s.origin})"))
    if not settings:
        out("  (no values; `runtime context set NAME key=value` creates a context)")


@context_app.command("use")
def context_use_cmd(
    name: str = typer.Argument(None, help="Context to make active.", autocompletion=context_names),
    none: bool = typer.Option(
        False, "--none", help="Turn the active context off: no context is active."
    ),
) -> None:
    """Make a context the active one; --none turns the active one off."""
    if name is not None and none:
        raise UsageError("name a context or give --none, not both", hint="runtime context use NAME")
    if name is None and not none:
        raise UsageError(
            "name the context to use, or give --none",
            hint="`runtime context list` lists the contexts",
        )
    ws = workspace()
    ensure_home(ws)
    _services(ws).contexts.use(name)
    if json_mode():
        emit_json({"ok": True, "active": name})
    else:
        out(f"active context: {name}" if name else "no context is active now")


@context_app.command("delete")
def context_delete_cmd(
    name: str = typer.Argument(..., help="Context to delete.", autocompletion=context_names),
) -> None:
    """Delete a context (deleting the active one also turns it off)."""
    ws = workspace()
    ensure_home(ws)
    store = _services(ws).contexts
    was_active = store.delete(name)
    if json_mode():
        emit_json({"ok": True, "deleted": name, "active": store.active_name()})
    elif was_active:
        out(f"deleted context '{name}'; it was the active context, so no context is active now")
    else:
        out(f"deleted context '{name}'")


@context_app.command("set")
def context_set_cmd(
    pairs: list[str] = typer.Argument(
        ..., help="[NAME] key=value ... (the keys the providers declare; an empty value removes)."
    ),
) -> None:
    """Set values of a context (the active one, or NAME given first); creates it if needed."""
    ws = workspace()
    ensure_home(ws)
    name = None
    if pairs and "=" not in pairs[0]:
        name, pairs = pairs[0], pairs[1:]
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"'{pair}' is not key=value", hint="for example organization=acme")
        values[key] = value
    ctx = _services(ws).contexts.set(name, values)
    if json_mode():
        emit_json({"ok": True, "name": ctx.name, "values": ctx.values})
    else:
        out(
            f"{ctx.name}: "
            + (" ".join(f"{k}={v}" for k, v in sorted(ctx.values.items())) or "(empty)")
        )
