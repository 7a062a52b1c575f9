"""Loading the policy: the shipped default, then a user's file on top.

The shipped default (``policies/default.yaml``) is loaded first; a user
policy is applied on top. Lists of allowed things and denied things are
unioned, so a user policy can allow more binaries and deny more, but no
denial of the default can be lifted. Scalars and roots are replaced. A
credential the default hands a binary cannot be changed: a user file that
tries is refused at that entry. A user file that others may write is refused,
as ssh refuses such keys. What the loaded :class:`~runtime.plan.policy.Policy`
decides is :mod:`runtime.plan.policy`'s.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import InvalidPolicy
from runtime.plan.agents import EFFECTS, AgentPolicy
from runtime.plan.policy import SHELL_FILTERS, Policy
from runtime.plan.policy_checks import (
    denied_binary_check,
    overridden,
    raise_errors,
    raised_bound,
)
from runtime.problems import Problem
from runtime.reading import kind, position, read_file
from runtime.yamldoc.schema import (
    NULLS,
    Bool,
    Hook,
    List,
    Map,
    Message,
    Msg,
    Number,
    Text,
    check,
    parse_yaml,
)

if TYPE_CHECKING:
    from runtime.plan.er_policy import Imported

_WORDS = List(Text())
# folders, as config.yaml's capability_sources: YAML reads a plain 5 or true as a number
# or a boolean, which is no folder name ("quote it")
_FOLDERS = List(Text(string=True))
# a step's time limit, in seconds: the policy file's timeout_seconds and --timeout
TIMEOUT_SECONDS = Number(above=0, maximum=86400)


# The bounds on one structured edit of the files provider (file_edits): a count of
# files, bytes or matches is a whole number; the time, seconds as timeout_seconds.
EDIT_LIMITS = ("max_files", "max_bytes", "max_matches", "max_diff_bytes", "max_seconds")


def _whole(node: Any, value: Any, scope: Any) -> Msg | None:
    if scope.key != "max_seconds" and isinstance(value, float) and not value.is_integer():
        return Msg(
            "file_edits.{key} must be a whole number, not {text}", "write it without a fraction"
        )
    return None


def _edit_bounds(narrows: Hook | None = None) -> Map:
    """file_edits' shape; ``narrows``: a user file's check that a bound is not raised."""

    def check(node: Any, value: Any, scope: Any) -> Message | None:
        return _whole(node, value, scope) or (narrows(node, value, scope) if narrows else None)

    return Map(
        {
            key: Number(above=0, maximum=86400 if key == "max_seconds" else None, check=check)
            for key in EDIT_LIMITS
        },
        unknown=Msg("unknown file_edits key '{key}'", "known keys: {allowed}"),
    )


# The policy file's schema (runtime.yamldoc.schema): closed, every problem at its position.
POLICY_SCHEMA = Map(
    {
        "version": Text(
            choices=("v1",), bad=Msg("unsupported policy version '{text}'", "use version: v1")
        ),
        "allowed_binaries": _WORDS,
        "denied_binaries": _WORDS,
        "denied_arguments": Map(extra=List(_WORDS)),
        "denied_operations": _WORDS,
        "allowed_destructive": _WORDS,
        "read_roots": _FOLDERS,
        "write_roots": _FOLDERS,
        "timeout_seconds": TIMEOUT_SECONDS,
        "binary_environment": _WORDS,
        "binary_credentials": Map(extra=Text()),
        "allowed_subcommands": Map(extra=_WORDS),
        "literal_options": Map(extra=_WORDS),
        "system_paths": _FOLDERS,
        # as a capability's flags: True and TRUE are YAML's booleans too (a Go tool's files)
        "git_hooks": Bool(ignore_case=True),
        "require_confinement": Bool(ignore_case=True),
        "allow_unconfined": Bool(ignore_case=True),
        "admitted_helpers": Map(
            extra=List(Text(string=True, pattern=r"/.*", means="an absolute path"))
        ),
        "binary_hosts": Map(extra=_WORDS),
        "agents": Map(
            {
                # globs of capability names: YAML's plain * is an alias, so quote it
                "capabilities": List(Text(string=True)),
                "execute_own_text": Bool(ignore_case=True),
                "operations": Text(choices=EFFECTS),
                "confirm": List(Text(choices=EFFECTS)),
                # what `runtime agent hook` lets an assistant pipe runtime's output into
                "shell_filters": List(Text(choices=SHELL_FILTERS)),
            },
            unknown=Msg("unknown key '{key}' of agents", "known keys: {allowed}"),
        ),
        "file_edits": _edit_bounds(),
        # the binaries that may run at most: allowed_binaries narrowed to these (what an
        # Engineering Runtime policy's allowed_binaries means: runtime.plan.er_policy)
        "only_binaries": _WORDS,
    },
    unknown=Msg("unknown policy key '{key}'", "known keys: {allowed}"),
)


def _user_schema(floor: Policy) -> Map:
    """The policy schema for a user file, on top of ``floor`` (the default policy): a
    binary the default hands a credential keeps it, refused at the entry rather than the
    entry dropped without a word; and an entry the default's denials override (an
    allowed binary that is denied, a subcommand a denied run always refuses) is a
    warning at the entry, naming the rule: it has no effect."""
    fixed_credentials = {b: credential for b, (credential, _) in floor.binary_credentials.items()}

    def keeps(node: Any, value: Any, scope: Any) -> Msg | None:
        fixed = fixed_credentials.get(scope.key or "")
        if fixed is None or value == fixed:
            return None
        return Msg(
            "binary_credentials: '{key}' gets the '" + fixed + "' credential from the "
            "default policy, which a user policy cannot change",
            "remove '{key}' from binary_credentials in this file",
        )

    def denied_subcommand(node: Any, value: Any, scope: Any) -> Msg | None:
        binary = scope.parent.key if scope.parent is not None else None
        runs = [run for run, _ in floor.denied_arguments.get(binary or "", [])]
        if (value,) not in runs:
            return None
        return overridden(
            f"allowed_subcommands entry '{binary} {value}'",
            f"denied_arguments of the default policy refuses every `{binary} {value}`",
            f"remove it from allowed_subcommands: {binary} in this file",
        )

    def narrows(node: Any, value: Any, scope: Any) -> Msg | None:
        key = scope.key or ""
        shown = raised_bound(floor, key, value)
        if shown is None:
            return None
        return Msg(
            f"file_edits.{key} is {{text}}, above the default policy's {shown}: a user "
            "policy may lower the bounds on an edit, never raise them",
            f"write a value of at most {shown}, or remove file_edits.{key} from this file",
        )

    return Map(
        {
            **POLICY_SCHEMA.fields,
            "file_edits": _edit_bounds(narrows),
            "allowed_binaries": List(Text(check=denied_binary_check(floor))),
            "allowed_subcommands": Map(extra=List(Text(check=denied_subcommand))),
            "binary_credentials": Map(extra=Text(check=keeps)),
        },
        unknown=POLICY_SCHEMA.unknown,
    )


def parse_policy_text(text: str, label: str, floor: Policy | None = None) -> dict[str, Any]:
    """Parse one policy file; raise :class:`InvalidPolicy` with positioned problems.

    ``floor``: for a user file, the default policy it goes on top of."""
    return _parse(text, label, floor)[0]


def _parse(text: str, label: str, floor: Policy | None) -> tuple[dict[str, Any], list[Problem]]:
    """The file's values and its warnings (what the floor overrides); its errors raise.

    A user file may be an Engineering Runtime policy (``schema_version: 3``): it is read
    as the runtime policy it maps to (:mod:`runtime.plan.er_policy`), its problems at
    their positions in it."""
    root, problems = parse_yaml(text, label, code="invalid-policy")
    # ER's files are told by their schema_version (the module is imported only for one)
    if (
        floor is not None
        and root is not None
        and root.kind == "map"
        and any(key.text == "schema_version" for key, _ in root.pairs)
    ):
        from runtime.plan.er_policy import convert

        raise_errors(problems, label)
        imported = convert(root, label, floor)
        return imported.data, imported.warnings
    if root is None or (root.kind == "scalar" and root.plain and root.text in NULLS):
        data: Any = {}
    else:
        schema = _user_schema(floor) if floor is not None else POLICY_SCHEMA
        data, found = check(root, schema, file=label, code="invalid-policy")
        problems += found
    raise_errors(problems, label)
    return dict(data), [p for p in problems if not p.is_error]


def _apply(policy: Policy, data: Mapping[str, Any], source: str, *, is_default: bool) -> None:
    for name in data.get("allowed_binaries", []):
        policy.allowed_binaries.setdefault(name, source)
    for name in data.get("denied_binaries", []):
        policy.denied_binaries.setdefault(name, source)
    for binary, runs in data.get("denied_arguments", {}).items():
        bucket = policy.denied_arguments.setdefault(binary, [])
        for run in runs:
            if run and tuple(run) not in [r for r, _ in bucket]:
                bucket.append((tuple(run), source))
    for entry in data.get("denied_operations", []):
        words = tuple(w.casefold() for w in entry.split())
        if words and words not in [w for w, _ in policy.denied_operations]:
            policy.denied_operations.append((words, source))
    for entry in data.get("allowed_destructive", []):
        words = tuple(w.casefold() for w in entry.split())
        if words and words not in [w for w, _ in policy.allowed_destructive]:
            policy.allowed_destructive.append((words, source))
    if "read_roots" in data:
        policy.read_roots = (list(data["read_roots"]), source)
    if "write_roots" in data:
        policy.write_roots = (list(data["write_roots"]), source)
    if "timeout_seconds" in data:
        policy.timeout_seconds = (float(data["timeout_seconds"]), source)
    for name in data.get("binary_environment", []):
        policy.binary_environment.setdefault(name, source)
    for binary, credential in data.get("binary_credentials", {}).items():
        # a user file cannot change the default's (refused when it was parsed); the same
        # mapping written again keeps the default as its source
        policy.binary_credentials.setdefault(binary, (credential, source))
    for binary, names in data.get("allowed_subcommands", {}).items():
        known = policy.allowed_subcommands.setdefault(binary, {})
        for name in names:
            known.setdefault(name, source)
    for binary, options in data.get("literal_options", {}).items():
        listed = policy.literal_options.setdefault(binary, {})
        for option in options:
            listed.setdefault(" ".join(option.split()), source)
    for path in data.get("system_paths", []):
        policy.system_paths.setdefault(path, source)
    if "git_hooks" in data:
        policy.git_hooks = (bool(data["git_hooks"]), source)
    if "require_confinement" in data:
        # a user policy may demand confinement; it cannot waive a demand made before it
        policy.require_confinement = (
            bool(data["require_confinement"]) or policy.require_confinement[0],
            source if data["require_confinement"] else policy.require_confinement[1],
        )
    if "allow_unconfined" in data:
        policy.allow_unconfined = (bool(data["allow_unconfined"]), source)
    for binary, paths in data.get("admitted_helpers", {}).items():
        admitted = policy.admitted_helpers.setdefault(binary, {})
        for path in paths:
            admitted.setdefault(os.path.normpath(path), source)
    for binary, hosts in data.get("binary_hosts", {}).items():
        listed = policy.binary_hosts.setdefault(binary, {})
        for host in hosts:
            listed.setdefault(host.lower(), source)
    _apply_agents(policy.agents, data.get("agents", {}), source)
    for key, value in data.get("file_edits", {}).items():
        # a user file's value is at most the default's (refused when it was parsed)
        policy.file_edits[key] = (float(value), source)
    if "only_binaries" in data:
        # applied last: it narrows what the default and this file allow together
        keep = list(dict.fromkeys(data["only_binaries"]))
        policy.only_binaries = (keep, source)
        for name in [n for n in policy.allowed_binaries if n not in keep]:
            del policy.allowed_binaries[name]
    policy.sources.append(source)


def _apply_agents(agents: AgentPolicy, data: Mapping[str, Any], source: str) -> None:
    """Each key of the agents section replaces what came before it: a user policy may
    narrow what an assistant is offered as well as widen it."""
    if "capabilities" in data:
        agents.capabilities = (list(data["capabilities"]), source)
    if "execute_own_text" in data:
        agents.execute_own_text = (bool(data["execute_own_text"]), source)
    if "operations" in data:
        agents.operations = (str(data["operations"]), source)
    if "confirm" in data:
        agents.confirm = (list(dict.fromkeys(data["confirm"])), source)
    if "shell_filters" in data:
        agents.shell_filters = (list(dict.fromkeys(data["shell_filters"])), source)


def default_policy_data() -> dict[str, Any]:
    """The shipped default policy, parsed.

    Parsing the default policy costs more than the rest of a small `validate`
    (ARCHITECTURE.md, "Measured choices"), so the package also ships
    ``policies/default.json``: the same policy parsed, with the sha256 of the YAML
    it came from. It is used only when that sha256 matches the YAML next to it
    (both are package files, never user-writable); otherwise the YAML is parsed.
    `make policy-json` rewrites it.
    """
    import hashlib
    import json

    from runtime.home.resources import default_policy_file

    yaml_file = default_policy_file()
    raw = yaml_file.read_bytes()
    try:
        parsed = json.loads(yaml_file.with_suffix(".json").read_text(encoding="utf-8"))
        if parsed.get("sha256") == hashlib.sha256(raw).hexdigest() and isinstance(
            parsed.get("data"), dict
        ):
            return dict(parsed["data"])
    except (OSError, ValueError, AttributeError):
        pass
    return parse_policy_text(raw.decode("utf-8"), "default")


def default_policy_json() -> str:
    """The content of ``policies/default.json`` for the shipped ``default.yaml``."""
    import hashlib
    import json

    from runtime.home.resources import default_policy_file

    raw = default_policy_file().read_bytes()
    doc = {
        "sha256": hashlib.sha256(raw).hexdigest(),
        "data": parse_policy_text(raw.decode("utf-8"), "default"),
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def load_policy(user_file: Path | None, *, explicit: bool = False) -> Policy:
    """The effective policy: the shipped default, then the user's file if any.

    ``explicit``: the file was named by RUNTIME_POLICY_FILE, so it must exist (a
    stricter policy that silently went missing would fail open). A file that
    others may write is refused, as ssh refuses such keys: whoever can write it
    decides what runs.
    """
    policy = default_policy()
    if user_file is None:
        return policy
    variable = "RUNTIME_POLICY_FILE" if explicit else None
    try:
        st = os.stat(user_file)
    except FileNotFoundError:
        if explicit:
            raise InvalidPolicy(
                f"RUNTIME_POLICY_FILE names {user_file}, which does not exist",
                hint="create the file, fix the path, or unset RUNTIME_POLICY_FILE",
            ) from None
        if not os.path.islink(user_file):
            return policy
        # a link to nothing is a broken policy, not no policy: a stricter policy that
        # silently went missing would fail open
        raise InvalidPolicy(
            f"policy file {user_file} is a symbolic link to {os.readlink(user_file)}, "
            "which does not exist",
            hint=f"point the link at the policy, or remove {user_file} to run under the "
            "default policy alone",
        ) from None
    except OSError as exc:
        raise InvalidPolicy(
            f"cannot read policy file {user_file}: {exc.strerror or exc}",
            hint=_fix_hint(user_file, variable),
        ) from None
    _check_owner_and_mode(user_file, st, variable)
    text = read_policy_text(user_file, variable)
    parsed, policy.warnings = _parse(text, str(user_file), policy)
    _apply(policy, parsed, str(user_file), is_default=False)
    return policy


def default_policy() -> Policy:
    """The shipped default policy alone: the floor a user file goes on top of."""
    policy = Policy()
    _apply(policy, default_policy_data(), "default", is_default=True)
    return policy


def read_policy_text(path: Path, variable: str | None = None) -> str:
    """A policy file's text (read without waiting on a FIFO); a file that cannot be read,
    or is not UTF-8, raises :class:`InvalidPolicy` saying so (``variable``: the
    environment variable that named it, a way out)."""
    try:
        data = read_file(path)
    except OSError as exc:
        raise InvalidPolicy(
            f"cannot read policy file {path}: {exc.strerror or exc}",
            hint=_fix_hint(path, variable),
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = position(data, exc.start)
        raise InvalidPolicy(
            f"{path}:{line}:{column}: the policy file is not UTF-8 text "
            f"(byte 0x{data[exc.start]:02x})",
            hint=f"{_fix_hint(path, variable)} (saved as UTF-8: iconv -f LATIN1 -t UTF-8)",
        ) from None


def _fix_hint(path: Path, variable: str | None) -> str:
    """Fix the file; the variable that named it is a way out only when it is set."""
    return f"fix {path}" + (f", or unset {variable}" if variable else "")


def _check_owner_and_mode(path: Path, st: os.stat_result, variable: str | None) -> None:
    what = kind(st.st_mode)
    if what is not None:
        raise InvalidPolicy(
            f"policy file {path} is {what}, not a regular file", hint=_fix_hint(path, variable)
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "anyone" if st.st_mode & stat.S_IWOTH else "its group"
        raise InvalidPolicy(
            f"policy file {path} can be written by {who} (mode {stat.S_IMODE(st.st_mode):04o}), "
            "so it is not trusted",
            hint=f"chmod go-w {path}",
        )
    if hasattr(os, "getuid") and st.st_uid not in (os.getuid(), 0):
        raise InvalidPolicy(
            f"policy file {path} belongs to another user (uid {st.st_uid}), so it is not trusted",
            hint=f"use a policy file of your own (chown it, or copy it to {path.name} in a "
            "folder you own)",
        )
    parent = path.resolve().parent
    try:
        pst = os.stat(parent)
    except OSError:
        return
    if pst.st_mode & stat.S_IWOTH and not pst.st_mode & stat.S_ISVTX:
        raise InvalidPolicy(
            f"policy file {path} is in {parent}, a folder anyone can write, so anyone could "
            "replace it",
            hint=f"move the policy file to a folder only you can write (or chmod o-w {parent})",
        )


def import_er_file(path: Path) -> Imported:
    """``runtime policy import FILE``: the ER policy at ``path`` as the runtime policy it
    maps to, on top of the shipped default (its floor). A file that is not an ER policy
    (a runtime one, or no mapping) is an error saying what it is."""
    from runtime.plan.er_policy import SCHEMA_VERSION, convert, is_er_policy

    if not path.exists():
        raise InvalidPolicy(f"no such file: {path}", hint="check the path")
    if path.is_dir():
        raise InvalidPolicy(f"{path} is a folder", hint="name an Engineering Runtime policy file")
    text = read_policy_text(path)
    root, problems = parse_yaml(text, str(path), code="invalid-policy")
    raise_errors(problems, str(path))
    if root is None or not is_er_policy(root):
        runtime_own = (
            root is not None
            and root.kind == "map"
            and any(key.text == "version" for key, _ in root.pairs)
        )
        raise InvalidPolicy(
            f"{path}:1:1: not an Engineering Runtime policy file (it has no schema_version)",
            hint="it is a runtime policy already (version: v1): use it as it is"
            if runtime_own
            else f"an Engineering Runtime policy file starts with schema_version: {SCHEMA_VERSION}",
        )
    return convert(root, str(path), default_policy())
