"""Policy: what may run, where files may be touched, and which rule decided.

The shipped default (``policies/default.yaml``) is loaded first; a user
policy is applied on top. Lists of allowed things and denied things are
unioned, so a user policy can allow more binaries and deny more, but no
denial of the default can be lifted. Scalars and roots are replaced.
Both files are parsed by strictyaml under a closed schema.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from runtime.errors import InvalidPolicy
from runtime.problems import Problem

NEVER_BINARIES = frozenset({"runtime"})


class Decision(NamedTuple):
    allowed: bool
    rule: str  # which rule decided, e.g. "allowed_binaries: git (default)"
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"allowed": self.allowed, "rule": self.rule, "reason": self.reason}


@dataclass
class Policy:
    allowed_binaries: dict[str, str] = field(default_factory=dict)  # name -> source
    denied_binaries: dict[str, str] = field(default_factory=dict)
    denied_arguments: dict[str, list[tuple[tuple[str, ...], str]]] = field(default_factory=dict)
    denied_operations: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    read_roots: tuple[list[str], str] = (["."], "default")
    write_roots: tuple[list[str], str] = (["."], "default")
    timeout_seconds: tuple[float, str] = (300.0, "default")
    binary_environment: dict[str, str] = field(default_factory=dict)
    binary_credentials: dict[str, tuple[str, str]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    # -- binaries -------------------------------------------------------------
    def binary_listed(self, name: str) -> bool:
        return name in self.allowed_binaries and name not in NEVER_BINARIES

    def decide_binary(self, name: str, args: Sequence[str]) -> Decision:
        if name in NEVER_BINARIES:
            return Decision(
                False, "built-in: runtime never runs itself", "no capability-to-capability calls"
            )
        if name in self.denied_binaries:
            return Decision(False, f"denied_binaries: {name} ({self.denied_binaries[name]})")
        if name not in self.allowed_binaries:
            return Decision(False, "allowed_binaries", f"{name} is not in allowed_binaries")
        for run, source in self.denied_arguments.get(name, []):
            if run_matches(run, args):
                return Decision(
                    False,
                    f"denied_arguments: {name} {' '.join(run)} ({source})",
                    "the arguments contain a denied run",
                )
        return Decision(True, f"allowed_binaries: {name} ({self.allowed_binaries[name]})")

    # -- operations -----------------------------------------------------------
    def decide_operation(self, provider: str, args: Sequence[str]) -> Decision:
        tokens = [provider.casefold(), *(a.casefold() for a in args)]
        for words, source in self.denied_operations:
            if len(words) <= len(tokens) and tuple(tokens[: len(words)]) == words:
                return Decision(False, f"denied_operations: {' '.join(words)} ({source})")
        return Decision(True, "no denied_operations entry matches")

    # -- files ----------------------------------------------------------------
    def roots(self, access: str, cwd: Path) -> list[Path]:
        entries = self.read_roots[0] if access == "read" else self.write_roots[0]
        out: list[Path] = []
        for entry in entries:
            p = Path(os.path.expanduser(entry))
            if not p.is_absolute():
                p = cwd / p
            out.append(Path(os.path.realpath(p)))
        return out

    def timeout(self) -> float:
        return self.timeout_seconds[0]

    def credential_for_binary(self, name: str) -> str | None:
        entry = self.binary_credentials.get(name)
        return entry[0] if entry else None

    def to_json(self) -> dict[str, Any]:
        return {
            "sources": self.sources,
            "allowed_binaries": [
                {"name": n, "source": s} for n, s in sorted(self.allowed_binaries.items())
            ],
            "denied_binaries": [
                {"name": n, "source": s} for n, s in sorted(self.denied_binaries.items())
            ],
            "denied_arguments": [
                {"binary": b, "run": list(run), "source": s}
                for b, runs in sorted(self.denied_arguments.items())
                for run, s in runs
            ],
            "denied_operations": [
                {"operation": " ".join(w), "source": s} for w, s in self.denied_operations
            ],
            "read_roots": {"value": self.read_roots[0], "source": self.read_roots[1]},
            "write_roots": {"value": self.write_roots[0], "source": self.write_roots[1]},
            "timeout_seconds": {
                "value": self.timeout_seconds[0],
                "source": self.timeout_seconds[1],
            },
            "binary_environment": [
                {"name": n, "source": s} for n, s in sorted(self.binary_environment.items())
            ],
            "binary_credentials": [
                {"binary": b, "credential": c, "source": s}
                for b, (c, s) in sorted(self.binary_credentials.items())
            ],
        }


_SHORT_CLUSTER = re.compile(r"^-[A-Za-z0-9]+$")


def _token_matches(rule: str, arg: str) -> bool:
    if rule == arg:
        return True
    if rule.endswith("*") and len(rule) > 1:  # a prefix pattern, e.g. "+*" (a forced refspec)
        return arg.startswith(rule[:-1])
    if rule.startswith("--") and arg.startswith("--") and len(arg) > 3:
        # long options also match when abbreviated (git accepts --force-w for
        # --force-with-lease) or given a value (--force=yes)
        name = arg.split("=", 1)[0]
        return rule.startswith(name) or name == rule
    if _SHORT_CLUSTER.match(rule) and _SHORT_CLUSTER.match(arg):
        return set(rule[1:]) <= set(arg[1:])
    return False


def run_matches(run: Sequence[str], args: Sequence[str]) -> bool:
    """True when the tokens of ``run`` appear in ``args`` in order."""
    i = 0
    for arg in args:
        if i < len(run) and _token_matches(run[i], arg):
            i += 1
    return i == len(run)


POLICY_SCHEMA: dict[str, Any] = {
    "version": "str",
    "allowed_binaries": ("list", "str"),
    "denied_binaries": ("list", "str"),
    "denied_arguments": ("map", ("list", ("list", "str"))),
    "denied_operations": ("list", "str"),
    "read_roots": ("list", "str"),
    "write_roots": ("list", "str"),
    "timeout_seconds": "number",
    "binary_environment": ("list", "str"),
    "binary_credentials": ("map", "str"),
}
POLICY_KEYS = tuple(POLICY_SCHEMA)


def parse_policy_text(text: str, label: str) -> dict[str, Any]:
    """Parse one policy file; raise :class:`InvalidPolicy` with positioned problems."""
    from runtime.yamlschema import load

    data, problems = load(text, label, POLICY_SCHEMA, "policy")
    if problems:
        first = problems[0]
        raise InvalidPolicy(
            f"{label}:{first.line}:{first.column}: {first.message}",
            hint=first.hint,
            problems=problems,
        )
    version = data.get("version", "v1")
    if version != "v1":
        problem = Problem(
            label,
            1,
            1,
            "error",
            "invalid-policy",
            f"unsupported policy version '{version}'",
            "use version: v1",
        )
        raise InvalidPolicy(problem.message, hint=problem.hint, problems=[problem])
    timeout = data.get("timeout_seconds")
    if timeout is not None and not (0 < float(timeout) <= 86400):
        problem = Problem(
            label,
            1,
            1,
            "error",
            "invalid-policy",
            "timeout_seconds must be between 0 and 86400",
            None,
        )
        raise InvalidPolicy(problem.message, problems=[problem])
    return data


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
    if "read_roots" in data:
        policy.read_roots = (list(data["read_roots"]), source)
    if "write_roots" in data:
        policy.write_roots = (list(data["write_roots"]), source)
    if "timeout_seconds" in data:
        policy.timeout_seconds = (float(data["timeout_seconds"]), source)
    for name in data.get("binary_environment", []):
        policy.binary_environment.setdefault(name, source)
    for binary, credential in data.get("binary_credentials", {}).items():
        if is_default or binary not in policy.binary_credentials:
            policy.binary_credentials[binary] = (credential, source)
    policy.sources.append(source)


def default_policy_data() -> dict[str, Any]:
    """The shipped default policy, parsed.

    Parsing the default policy costs more than the rest of a small `validate`
    (bench/ figure 2), so the package also ships ``policies/default.json``: the
    same policy parsed, with the sha256 of the YAML it came from. It is used only
    when that sha256 matches the YAML next to it (both are package files, never
    user-writable); otherwise the YAML is parsed. `make policy-json` rewrites it.
    """
    import hashlib
    import json

    from runtime.resources import default_policy_file

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

    from runtime.resources import default_policy_file

    raw = default_policy_file().read_bytes()
    doc = {
        "sha256": hashlib.sha256(raw).hexdigest(),
        "data": parse_policy_text(raw.decode("utf-8"), "default"),
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def load_policy(user_file: Path | None) -> Policy:
    """The effective policy: the shipped default, then the user's file if any."""
    policy = Policy()
    _apply(policy, default_policy_data(), "default", is_default=True)
    if user_file is not None and user_file.exists():
        try:
            text = user_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidPolicy(
                f"cannot read policy file {user_file}: {exc}",
                hint="fix the file or unset RUNTIME_POLICY_FILE",
            ) from None
        _apply(policy, parse_policy_text(text, str(user_file)), str(user_file), is_default=False)
    return policy
