"""Engineering Runtime policy files (``schema_version: 3``), read as runtime policies.

Engineering Runtime (ER), the Go tool whose capability format runtime reads,
has policy files of its own. One is accepted wherever a runtime user policy
is (``RUNTIME_POLICY_FILE``, Home's ``policy.yaml``) and mapped key by key
onto the runtime policy it means (``runtime policy import FILE`` prints it):

=====================================  ============================================
ER                                     runtime
=====================================  ============================================
``allowed_binaries``                   ``allowed_binaries``, and ``only_binaries``:
                                       ER's list is the whole list, so nothing else
                                       runs (it narrows runtime's default list too)
``command_policy.denied_binaries``     ``denied_binaries``
``command_policy.rules.B.denied``      ``denied_arguments: {B: [[word, ...]]}``
``command_policy.admitted_helpers``    ``admitted_helpers``
``file_policy.read_roots``             ``read_roots`` (read, list)
``file_policy.write_roots``            ``write_roots`` (write, append, mkdir, delete),
                                       and ``allowed_destructive: [files delete]``
                                       unless ``providers.files.denied`` denies it:
                                       ER's write roots allow delete
``file_policy.max_edit_files`` ...     ``file_edits.max_files`` ... (lowered only)
``providers.P.denied``                 ``denied_operations: ["P OPERATION"]``
=====================================  ============================================

ER's rule holds: a policy file narrows the compiled safety profile, never
widens it. Here that profile is the shipped default's floor: a binary it
denies stays denied (an ``allowed_binaries`` entry for one is a warning, as
in a runtime file), a bound of ``file_edits`` may only be lowered (raising
one is an error), and nothing in an ER file lifts a denied run or operation.
Any key that cannot be honoured is an error at its position, naming it: a
key runtime has no counterpart for, a provider that is not installed, an
operation that provider does not have.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from runtime.problems import Problem
from runtime.yamldoc.schema import Int, List, Map, Msg, Number, Text, check

if TYPE_CHECKING:
    from runtime.plan.policy import Policy
    from runtime.yamldoc.yamlnode import Node

SCHEMA_VERSION = 3

# ER's bounds on a structured edit, and runtime's file_edits key for each
EDIT_LIMITS = {
    "max_edit_files": "max_files",
    "max_edit_batch_bytes": "max_bytes",
    "max_edit_matches": "max_matches",
    "max_edit_diff_bytes": "max_diff_bytes",
    "max_edit_seconds": "max_seconds",
}

# runtime's keys in the order of the shipped default, for `policy import`'s text, each
# with what it says where the ER key alone would not
_ORDER = {
    "allowed_binaries": "",
    "only_binaries": "ER's list is the whole list: nothing else runs",
    "denied_binaries": "",
    "denied_arguments": "each run of words, in order, anywhere in the args",
    "denied_operations": "",
    "allowed_destructive": "ER's write roots allow delete",
    "read_roots": "read and list",
    "write_roots": "write, append, mkdir, and delete where it is allowed",
    "admitted_helpers": "",
    "file_edits": "the bounds on one structured edit, lowered only",
}


class Imported(NamedTuple):
    """An ER policy as the runtime policy it maps to."""

    data: dict[str, Any]  # runtime's keys, as a parsed runtime policy file holds them
    origins: dict[str, tuple[str, ...]]  # each runtime key: the ER keys it came from
    warnings: list[Problem]  # entries the floor overrides, at their positions in the file


def is_er_policy(root: Node) -> bool:
    """Whether a parsed policy file is ER's: a mapping with ``schema_version``."""
    return root.kind == "map" and any(key.text == "schema_version" for key, _ in root.pairs)


def _unknown(where: str) -> Msg:
    return Msg(
        f"'{where}{{key}}' has no runtime counterpart, so it cannot be honoured",
        "the Engineering Runtime keys runtime maps here: {allowed} (`runtime policy spec`, "
        "Engineering Runtime policy files); remove it, or write a runtime policy",
    )


def _schema(floor: Policy) -> Map:
    from runtime.plan.policy_checks import denied_binary_check, raised_bound

    def lowered(node: Any, value: Any, scope: Any) -> Msg | None:
        key = scope.key or ""
        if key != "max_edit_seconds" and isinstance(value, float) and not value.is_integer():
            return Msg(f"file_policy.{key} must be a whole number, not {{text}}")
        shown = raised_bound(floor, EDIT_LIMITS[key], value)
        if shown is None:
            return None
        return Msg(
            f"file_policy.{key} is {{text}}, above runtime's {shown} "
            f"(file_edits.{EDIT_LIMITS[key]} of the default policy): a policy file narrows "
            "the bounds on an edit, never widens them",
            f"write a value of at most {shown}, or remove file_policy.{key} from this file",
        )

    words = List(Text())
    absolute = List(Text(string=True, pattern=r"/.*", means="an absolute path"))
    return Map(
        {
            "schema_version": Int(
                bad=Msg(
                    f"schema_version {{text}} is not one runtime reads: Engineering Runtime "
                    f"policy files are read in schema_version {SCHEMA_VERSION}",
                    f"write it in schema_version {SCHEMA_VERSION}, or as a runtime policy "
                    "(version: v1)",
                ),
                minimum=SCHEMA_VERSION,
                maximum=SCHEMA_VERSION,
            ),
            "allowed_binaries": List(Text(check=denied_binary_check(floor))),
            "command_policy": Map(
                {
                    "denied_binaries": words,
                    "rules": Map(
                        extra=Map(
                            {
                                "denied": List(
                                    Text(
                                        pattern=r"\s*\S.*",
                                        bad=Msg(
                                            "{where} must be a run of words, not '{text}'",
                                            "write the words of the run (push --force), or "
                                            "remove the entry",
                                        ),
                                    )
                                )
                            },
                            name="rule",
                            unknown=_unknown("command_policy.rules.{rule.key}."),
                        )
                    ),
                    "admitted_helpers": Map(extra=absolute),
                },
                unknown=_unknown("command_policy."),
            ),
            "file_policy": Map(
                {
                    "read_roots": List(Text(string=True)),
                    "write_roots": List(Text(string=True)),
                    **{
                        key: Number(
                            above=0,
                            maximum=86400 if key == "max_edit_seconds" else None,
                            check=lowered,
                        )
                        for key in EDIT_LIMITS
                    },
                },
                unknown=_unknown("file_policy."),
            ),
            "providers": Map(
                extra=Map(
                    {"denied": List(Text(check=_operation_check))},
                    name="provider",
                    check=_provider_check,
                    unknown=_unknown("providers.{provider.key}."),
                )
            ),
        },
        required={
            "schema_version": Msg(
                "an Engineering Runtime policy file has no schema_version",
                f"write schema_version: {SCHEMA_VERSION}",
            )
        },
        unknown=_unknown(""),
        lookalikes={
            "version": Msg(
                "'version' is a runtime policy's key, and this file is an Engineering "
                "Runtime policy (it has schema_version)",
                "a policy file is one or the other: remove version, or write the file as "
                "a runtime policy (`runtime policy import FILE` prints one)",
            )
        },
        code="invalid-policy",
    )


def _operations(provider: str) -> list[tuple[str, ...]] | None:
    """The operation words of an installed provider; None when none of that name is."""
    from runtime.home.registry import load_registry

    found = load_registry().get(provider)
    return None if found is None else [op.words for op in found.operations]


def _provider_check(node: Any, value: Any, scope: Any) -> Msg | None:
    from runtime.home.registry import load_registry

    name = scope.key or ""
    if _operations(name) is not None:
        return None
    return Msg(
        f"providers.{name}: no provider named '{name}' is installed, so its denials cannot "
        "be honoured",
        f"installed: {', '.join(load_registry().names())}; remove providers.{name}, or "
        "install the provider",
    )


def _names(entry: str, operation: Sequence[str]) -> bool:
    """Whether a denied entry's words (globs) name ``operation``, or it and its leading
    arguments, as denied_operations matches them."""
    words = entry.casefold().split()
    pairs = zip(words, operation, strict=False)
    return all(fnmatch.fnmatchcase(op.casefold(), word) for word, op in pairs)


def _operation_check(node: Any, value: Any, scope: Any) -> Msg | None:
    provider = scope.parent.parent.key if scope.parent and scope.parent.parent else None
    operations = _operations(provider or "")
    if operations is None or not value.split():
        return None if operations is None else Msg("an empty entry names no operation")
    if any(_names(value, op) for op in operations):
        return None
    return Msg(
        f"providers.{provider}.denied entry '{value}' names no {provider} operation, so it "
        "cannot be honoured",
        f"the operations of {provider}: {', '.join(' '.join(op) for op in operations)}",
    )


def convert(root: Node, label: str, floor: Policy) -> Imported:
    """The runtime policy the ER policy ``root`` (a parsed file) maps to; its errors raise
    :class:`~runtime.errors.InvalidPolicy`, at their positions in ``label``."""
    from runtime.plan.policy_checks import raise_errors

    value, problems = check(root, _schema(floor), file=label, code="invalid-policy")
    raise_errors(problems, label)
    data: dict[str, Any] = {}
    origins: dict[str, tuple[str, ...]] = {}

    def put(key: str, item: Any, *came_from: str) -> None:
        data[key] = item
        origins[key] = came_from

    if "allowed_binaries" in value:
        put("allowed_binaries", list(value["allowed_binaries"]), "allowed_binaries")
        put("only_binaries", list(value["allowed_binaries"]), "allowed_binaries")
    command = value.get("command_policy", {})
    if "denied_binaries" in command:
        put("denied_binaries", list(command["denied_binaries"]), "command_policy.denied_binaries")
    runs = {
        binary: [entry.split() for entry in rule.get("denied", [])]
        for binary, rule in command.get("rules", {}).items()
    }
    if any(runs.values()):
        put(
            "denied_arguments",
            {b: r for b, r in runs.items() if r},
            "command_policy.rules.BINARY.denied",
        )
    if command.get("admitted_helpers"):
        put(
            "admitted_helpers",
            {b: list(p) for b, p in command["admitted_helpers"].items()},
            "command_policy.admitted_helpers",
        )
    files = value.get("file_policy", {})
    for key in ("read_roots", "write_roots"):
        if key in files:
            put(key, list(files[key]), f"file_policy.{key}")
    bounds = {EDIT_LIMITS[k]: v for k, v in files.items() if k in EDIT_LIMITS}
    if bounds:
        put(
            "file_edits",
            {k: int(v) if float(v).is_integer() else v for k, v in bounds.items()},
            "file_policy.max_edit_*",
        )
    denied = [
        f"{provider} {' '.join(entry.split())}"
        for provider, section in value.get("providers", {}).items()
        for entry in section.get("denied", [])
    ]
    if denied:
        put("denied_operations", denied, "providers.PROVIDER.denied")
    deletes = value.get("providers", {}).get("files", {}).get("denied", [])
    if "write_roots" in files and not any(_names(e, ("delete",)) for e in deletes):
        # ER's write roots allow delete, which runtime allows only where a policy says so
        put("allowed_destructive", ["files delete"], "file_policy.write_roots")
    return Imported(data, origins, [p for p in problems if not p.is_error])


# -- runtime policy text --------------------------------------------------------------------


def runtime_text(imported: Imported, label: str) -> str:
    """The runtime policy file ``imported`` is, with a comment naming where each key came
    from: what ``runtime policy import`` prints (it parses back to ``imported.data``)."""
    from runtime.text import printable

    lines = [
        "# A runtime policy, converted by `runtime policy import` from this Engineering",
        f"# Runtime policy (schema_version: {SCHEMA_VERSION}):",
        f"#   {printable(label)}",
        "# `runtime policy spec` says how each key maps; the shipped default is applied",
        "# beneath it, as beneath any user policy.",
        "version: v1",
    ]
    data = imported.data
    for key in sorted(data, key=list(_ORDER).index):
        lines.append("")
        lines.append(f"# from {', '.join(imported.origins[key])}")
        if _ORDER[key]:
            lines[-1] += f": {_ORDER[key]}"
        item = data[key]
        if isinstance(item, list):
            lines.append(f"{key}: {_flow(item)}")
        else:
            lines.append(f"{key}:")
            for sub, inner in item.items():
                if key == "denied_arguments":
                    lines.append(f"  {_scalar(sub)}:")
                    lines.extend(f"    - {_flow(run)}" for run in inner)
                elif isinstance(inner, list):
                    lines.append(f"  {_scalar(sub)}: {_flow(inner)}")
                else:
                    lines.append(f"  {_scalar(sub)}: {inner}")
    return "\n".join(lines) + "\n"


def _flow(items: Sequence[Any]) -> str:
    return "[" + ", ".join(_scalar(i) for i in items) + "]"


# words YAML (1.1 or 1.2) may read as a boolean or null, in any case: always quoted
_YAML_WORDS = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n"})


def _scalar(value: Any) -> str:
    """``value`` as a YAML scalar that reads back as that text: plain when it is a word
    that cannot be taken for anything else, else JSON-quoted (which YAML reads as is)."""
    import json
    import re

    text = str(value)
    if re.fullmatch(r"[A-Za-z_/][A-Za-z0-9_./@-]*|--?[A-Za-z][A-Za-z0-9-]*", text) and (
        text.lower() not in _YAML_WORDS
    ):
        return text
    return json.dumps(text, ensure_ascii=False)
