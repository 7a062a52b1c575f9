"""What the shell-hook guard reads of the policy and ``config.yaml``, kept in Home.

The guard needs little of them: the policy's ``agents.shell_filters`` and the binaries
it allows (for what to run instead), and ``config.yaml``'s audit rotation. Loading them
imports the YAML reader and the policy's machinery, several times the cost of the rest
of a decision, which is made on every shell command an assistant issues. So the first
decision after any of those files changes loads them the ordinary way
(:func:`runtime.plan.policy_file.load_policy`, :func:`runtime.home.config.load_config`:
every check and refusal they make), and keeps what the guard needs in Home's
``agent-hook.json`` with the identity of each file it came from (device, inode, size,
modification and change times, and runtime's version); the next decisions read that
while every file is as it was. A write to a file, a ``chmod`` or a replacement changes
its change time, so the next decision loads it again (ARCHITECTURE.md, "Measured
choices").

Where Home is, when ``RUNTIME_HOME`` does not say: :func:`home_folder` applies
platformdirs' rule for Linux where it is unambiguous, and otherwise asks platformdirs
(``tests/unit/test_agent_settings.py`` holds the two equal).
"""

from __future__ import annotations

import json
import os
import sys

from runtime import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

CACHE = "agent-hook.json"


class SettingsError(Exception):
    """The policy or config.yaml cannot be used (the message names the file, the hint
    what to do)."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


def home_folder(environ: Mapping[str, str]) -> str:
    """Runtime Home, as :func:`runtime.home.layout.home_path` finds it."""
    explicit = environ.get("RUNTIME_HOME")
    if explicit:
        return os.path.expanduser(explicit)
    if sys.platform.startswith("linux"):
        data = environ.get("XDG_DATA_HOME", "")
        if data.startswith("/") and data == data.strip():
            return os.path.join(data, "runtime")
        home = environ.get("HOME", "")
        if not data and home.startswith("/") and home == home.strip():
            return os.path.join(home, ".local", "share", "runtime")
    from runtime.home.layout import home_path

    try:
        return str(home_path(environ))
    except Exception as exc:  # a UsageError: no HOME, no home in the password database
        raise SettingsError(str(exc), getattr(exc, "hint", "") or "") from None


def _identity(path: str | None) -> list[Any]:
    if path is None:
        return [None]
    try:
        st = os.stat(path)
    except OSError as exc:
        return [path, exc.errno, os.path.islink(path)]
    return [path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _default_policy() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    package = os.path.dirname(here)
    installed = os.path.join(package, "_data", "policies", "default.yaml")
    if os.path.exists(installed):
        return installed
    return os.path.join(os.path.dirname(package), "policies", "default.yaml")


def load(environ: Mapping[str, str], home: str) -> dict[str, Any]:
    """The guard's settings: ``shell_filters``, ``allowed_binaries``, ``audit_max_bytes``,
    ``audit_keep``; :class:`SettingsError` when the policy or config.yaml is refused."""
    explicit = environ.get("RUNTIME_POLICY_FILE")
    if explicit:
        policy_file: str | None = os.path.expanduser(explicit)
    else:
        policy_file = os.path.join(home, "policy.yaml")
        if not os.path.lexists(policy_file):
            policy_file = None
    key = [
        __version__,
        bool(explicit),
        _identity(_default_policy()),
        _identity(policy_file),
        _identity(os.path.join(home, "config.yaml")),
    ]
    cache = os.path.join(home, CACHE)
    try:
        with open(cache, "rb") as fh:
            kept = json.loads(fh.read())
        if kept.get("key") == json.loads(json.dumps(key)):
            return dict(kept["settings"])
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        pass
    settings = _read(home, policy_file, bool(explicit))
    _keep(cache, {"key": key, "settings": settings})
    return settings


def _read(home: str, policy_file: str | None, explicit: bool) -> dict[str, Any]:
    """The settings from the files themselves, with every check their loaders make."""
    from pathlib import Path

    from runtime.errors import InvalidPolicy
    from runtime.home.config import load_config
    from runtime.home.layout import Home
    from runtime.home.registry import load_registry
    from runtime.plan.policy_file import load_policy

    try:
        policy = load_policy(Path(policy_file) if policy_file else None, explicit=explicit)
        config = load_config(Home(Path(home)), load_registry())
    except InvalidPolicy as exc:
        raise SettingsError(exc.message, exc.hint or "") from None
    allowed = sorted(name for name in policy.allowed_binaries if policy.denied_name(name) is None)
    return {
        "shell_filters": list(policy.agents.shell_filters[0]),
        "allowed_binaries": allowed,
        "audit_max_bytes": config.audit.max_bytes,
        "audit_keep": config.audit.keep,
    }


def _keep(path: str, doc: dict[str, Any]) -> None:
    """Write the cache; a Home that cannot take it only costs the next decision a load."""
    import contextlib
    from pathlib import Path

    from runtime.home.layout import atomic_write

    with contextlib.suppress(OSError):
        atomic_write(Path(path), (json.dumps(doc, sort_keys=True) + "\n").encode(), 0o600)
