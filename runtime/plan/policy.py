"""Policy: what may run, where files may be touched, and which rule decided.

This module decides; :mod:`runtime.plan.policy_file` loads the policy
(the shipped default, then a user's file on top: what is unioned, what is
replaced, what a user file may not change).

A binary step is decided on what the program will really do, not on the
leading words of its args: the binary's name, its versioned spellings and
the real file a symlink leads to; its subcommand against an allow-list (an
alias or an unknown command is not allowed); the options an input fills;
``git config`` in its reading forms, and setting the repository's identity
(``user.name``, ``user.email``) only; ``gh api`` as the github
provider's ``api`` call it is (method and route), and ``gh api graphql`` also
as its ``graphql`` call, mutation by mutation; and the args gh hands to
``git clone`` (``gh repo clone REPO DIR -- ARGS``) as that git call's own.

A call the provider reads as actions (a GraphQL document's mutations) is
decided action by action too, each as the operation's words and its name
(``github graphql deleteIssue``): a denied_operations entry can deny one
mutation, an allowed_destructive entry allow one, and a document that
destroys runs only when each of its destroying mutations is allowed.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.plan.agents import AgentPolicy
from runtime.plan.binary import git_config_reads, git_config_sets_identity, literal_option_uses
from runtime.plan.programs import owned_profile
from runtime.problems import Problem
from runtime.provider import BoundCall, Decision, Operation, Provider
from runtime.provider.operations import Action, Binding, Piece
from runtime.provider.programs import UNKNOWN, Handover, ProgramProfile, Subcommand

NEVER_BINARIES = frozenset({"runtime"})
# The read-only filters the policy's agents.shell_filters may list: the ones whose
# command line the shell-hook guard knows (runtime/agent/filters.py holds their grammar).
SHELL_FILTERS = ("grep", "head", "jq", "tail", "wc")

# UNKNOWN (runtime.provider) stands for an input's value when a step is decided before
# its inputs are known (validation): a rule that would decide on it does not decide: the
# subcommand, a glob, the reading form of git config are left to plan time, so that what
# is refused here is refused whatever the inputs are.


@dataclass
class Policy:
    allowed_binaries: dict[str, str] = field(default_factory=dict)  # name -> source
    denied_binaries: dict[str, str] = field(default_factory=dict)
    denied_arguments: dict[str, list[tuple[tuple[str, ...], str]]] = field(default_factory=dict)
    denied_operations: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    # operations whose effect is destroy that may run (the shipped default lists none)
    allowed_destructive: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    read_roots: tuple[list[str], str] = (["."], "default")
    write_roots: tuple[list[str], str] = (["."], "default")
    timeout_seconds: tuple[float, str] = (300.0, "default")
    binary_environment: dict[str, str] = field(default_factory=dict)
    binary_credentials: dict[str, tuple[str, str]] = field(default_factory=dict)
    allowed_subcommands: dict[str, dict[str, str]] = field(default_factory=dict)
    literal_options: dict[str, dict[str, str]] = field(default_factory=dict)
    system_paths: dict[str, str] = field(default_factory=dict)
    git_hooks: tuple[bool, str] = (False, "default")
    require_confinement: tuple[bool, str] = (False, "default")
    # binary steps may run where the system cannot confine them (each says so)
    allow_unconfined: tuple[bool, str] = (False, "default")
    # programs a binary's confined step may execute besides its profile's (absolute paths)
    admitted_helpers: dict[str, dict[str, str]] = field(default_factory=dict)
    # hosts a binary may reach through the egress proxy, besides its profile's
    binary_hosts: dict[str, dict[str, str]] = field(default_factory=dict)
    # what an AI assistant is offered through `runtime mcp serve` (runtime.plan.agents)
    agents: AgentPolicy = field(default_factory=AgentPolicy)
    # the bounds on one structured edit of the files provider (file_edits): key ->
    # (value, source); the default's values, which a user policy may only lower
    file_edits: dict[str, tuple[float, str]] = field(default_factory=dict)
    # a user file's only_binaries: the binaries that may run at most (allowed_binaries
    # narrowed to them, as an Engineering Runtime policy's allowed_binaries narrows), and
    # its source; None: allowed_binaries alone decide
    only_binaries: tuple[list[str], str] | None = None
    sources: list[str] = field(default_factory=list)
    # entries of the user file that have no effect (the floor overrides them), at their
    # position: every command that loads the policy says so
    warnings: list[Problem] = field(default_factory=list)

    @property
    def unconfined_allowed(self) -> bool:
        """Whether a step may run where confinement is missing: a policy said so, and
        none demands confinement."""
        return self.allow_unconfined[0] and not self.require_confinement[0]

    # -- binaries -------------------------------------------------------------
    def binary_listed(self, name: str) -> bool:
        return name in self.allowed_binaries and name not in NEVER_BINARIES

    def binary_refusal(self, name: str) -> tuple[str, str, str] | None:
        """Why ``name`` is no binary a step may name, (problem code, message, hint), or
        ``None`` when it is listed in allowed_binaries (the plan then decides the run,
        a denial included). One that is also denied gets a hint that offers no user
        policy: a denied binary stays denied whatever a user policy allows."""
        if self.binary_listed(name):
            return None
        allowed = ", ".join(sorted(self.allowed_binaries))
        denied = self.denied_name(name)
        if denied is not None:
            source = self.denied_binaries[denied]
            return (
                "binary-denied",
                f"binary '{name}' is denied by the policy (denied_binaries of "
                f"{'the default policy' if source == 'default' else source}: {denied})",
                "a denied binary is never run, whatever a user policy allows; use a "
                f"provider operation or an allowed binary: {allowed}",
            )
        narrowed = self.narrowed_out(name)
        if narrowed is not None:
            return ("binary-not-allowed", narrowed[1], f"allowed: {allowed}; {narrowed[2]}")
        return (
            "binary-not-allowed",
            f"binary '{name}' is not in allowed_binaries",
            f"{_guess(name, self.allowed_binaries)}allowed: {allowed}; a user policy can allow "
            "more (allowed_binaries in policy.yaml)",
        )

    def narrowed_out(self, name: str) -> tuple[str, str, str] | None:
        """(rule, message, hint) when ``name`` is no binary that may run because
        only_binaries leaves it out; None otherwise."""
        if self.only_binaries is None or name in self.only_binaries[0]:
            return None
        listed, source = self.only_binaries
        return (
            f"only_binaries ({source})",
            f"binary '{name}' is not among the binaries {source} lets run at most "
            f"({', '.join(listed) or 'none'}: its only_binaries)",
            f"to run it, add {name} to that list in {source} (allowed_binaries of an "
            "Engineering Runtime policy, only_binaries of a runtime one)",
        )

    def denied_name(self, name: str, real_name: str | None = None) -> str | None:
        """The denied_binaries entry ``name`` falls under, if any.

        An entry also covers its versioned names (``python`` covers ``python3.11``,
        ``perl`` covers ``perl5.36``), its variants (``vim`` covers ``vim.basic``) and the real file a symlink resolves to
        (``real_name``: an allowed ``mysh`` that is ``/usr/bin/dash`` is still a shell).
        """
        for candidate in (name, real_name):
            if not candidate:
                continue
            if candidate in self.denied_binaries:
                return candidate
            for entry in self.denied_binaries:
                if not candidate.startswith(entry):
                    continue
                suffix = candidate[len(entry) :]
                if _VERSIONED.fullmatch(suffix) or _VARIANT.fullmatch(suffix):
                    return entry
        return None

    def decide_binary(
        self,
        name: str,
        args: Sequence[str],
        *,
        authored: Sequence[str] | None = None,
        real_name: str | None = None,
        api_owner: Provider | None = None,
    ) -> Decision:
        """The decision for ``name`` run with ``args`` (resolved); ``authored`` are the same
        args as written in the capability (None for a command typed by the user);
        ``api_owner`` the provider that runs the program (github for gh): the program's
        grammar is read from its profile (:func:`runtime.plan.programs.owned_profile`),
        and the program's ``api`` subcommand stands for the owner's ``api`` operation,
        ``gh api graphql`` for its GraphQL operation. Without an owner, only the engine's
        own profiles (git's) are known."""
        if name in NEVER_BINARIES or real_name in NEVER_BINARIES:
            return Decision(
                False, "built-in: runtime never runs itself", "no capability-to-capability calls"
            )
        denied = self.denied_name(name, real_name)
        if denied is not None:
            why = "" if denied == name else f"{name} is {denied} by another name"
            return Decision(
                False,
                f"denied_binaries: {denied} ({self.denied_binaries[denied]})",
                why,
                "a denied binary is never run, whatever a user policy allows",
            )
        if name not in self.allowed_binaries:
            base = os.path.basename(name)
            if "/" in name and self.binary_listed(base):
                return Decision(
                    False,
                    "allowed_binaries",
                    f"{name} is not the {base} found on PATH, the one allowed_binaries "
                    "allows (it names binaries, each run as PATH finds it)",
                    f"run it by its name, {base}; for that file, put "
                    f"{os.path.dirname(name) or '.'} first on PATH",
                )
            narrowed = self.narrowed_out(name)
            if narrowed is not None:
                return Decision(False, *narrowed)
            return Decision(
                False,
                "allowed_binaries",
                f"{name} is not in allowed_binaries",
                _unlisted_hint(name, self.allowed_binaries),
            )
        profile = owned_profile(name, api_owner)
        sub = profile.subcommand(args)
        if name in self.allowed_subcommands:
            decision = self._decide_subcommand(name, args, sub, api_owner, profile)
            if decision is not None:
                return decision
        if profile.refusal is not None:
            refused = profile.refusal(args)
            if refused is not None:
                return refused
        if authored is not None:
            for use in literal_option_uses(
                authored, list(self.literal_options.get(name, {})), sub.name
            ):
                source = self.literal_options[name][use.option]
                return Decision(
                    False,
                    f"literal_options: {name} {use.option} ({source})",
                    f"the value of {use.option.rpartition(' ')[2]} would come from input "
                    + ", ".join(f"'{n}'" for n in use.inputs),
                    "write this option's value in the capability itself; an input never fills it",
                )
        for run, source in self.denied_arguments.get(name, []):
            if run_matches(run, args):
                return Decision(
                    False,
                    f"denied_arguments: {name} {' '.join(run)} ({source})",
                    "the arguments contain a denied run",
                )
        forwarded = profile.hands_over(args) if profile.hands_over is not None else None
        if forwarded is not None:
            refused = self._decide_handover(name, forwarded, args, authored, api_owner)
            if refused is not None:
                return refused
        return Decision(True, f"allowed_binaries: {name} ({self.allowed_binaries[name]})")

    def _decide_handover(
        self,
        name: str,
        forwarded: Handover,
        args: Sequence[str],
        authored: Sequence[str] | None,
        owner: Provider | None,
    ) -> Decision | None:
        """A program that hands args to another (gh runs ``git clone`` with the args after
        its ``--``): they are decided as a binary step's call of that program would be
        (``git clone ARGS``: subcommand, literal options, denied runs: ``--config``,
        ``-c``, ``--upload-pack``...), with its profile (the engine's and ``owner``'s), or
        refused when they cannot be read. None when that decision allows them."""
        command, program = forwarded.command, forwarded.program
        called = " ".join((program, *forwarded.words))
        if forwarded.problem:
            return Decision(
                False,
                f"built-in: {name} {command} hands args to {called}",
                forwarded.problem,
                forwarded.hint,
            )
        handed = [*forwarded.words, *(args[i] for i in forwarded.indexes)]
        handed_authored = (
            [*forwarded.words, *(authored[i] for i in forwarded.indexes)]
            if authored is not None
            else None
        )
        decision = self.decide_binary(program, handed, authored=handed_authored, api_owner=owner)
        if decision.allowed:
            return None
        said = decision.reason or "it is refused"
        run = " ".join(handed)
        run = run if len(run) <= 60 else run[:57] + "..."
        return decision._replace(
            reason=f"{name} {command} runs `{program} {run}` with the args after its `--`: {said}",
            hint=decision.hint
            or f"the args after {name}'s `--` are decided as a {program} step's `{called}` "
            "would be",
        )

    def _decide_subcommand(
        self,
        name: str,
        args: Sequence[str],
        sub: Subcommand,
        api_owner: Provider | None,
        profile: ProgramProfile,
    ) -> Decision | None:
        allowed = self.allowed_subcommands[name]
        listing = ", ".join(sorted(allowed))
        if sub.problem:
            return Decision(
                False,
                f"allowed_subcommands: {name}",
                sub.problem,
                "write the subcommand first, after only the global options runtime knows",
            )
        if sub.name is None:
            return None  # `git --version`: no subcommand runs
        known = UNKNOWN not in sub.name  # not an input's value, to be known at plan time
        if known and sub.name not in allowed:
            return Decision(
                False,
                f"allowed_subcommands: {name}",
                f"'{sub.name}' is not an allowed {name} subcommand "
                "(an alias or an unknown command is never run)",
                f"{_guess(sub.name, allowed)}allowed: {listing}; a user policy can add more "
                "under allowed_subcommands",
            )
        rest = args[sub.position + 1 :]
        if name == "git":
            for arg in args[: sub.position]:
                if arg.partition("=")[0] in ("-c", "--config-env"):
                    return Decision(
                        False,
                        "built-in: git's configuration is not set from the command line",
                        f"'{arg}' sets git configuration for the run, which can make git "
                        "run programs (core.sshCommand, core.pager, ...)",
                        "set configuration in the repository yourself if it is really needed",
                    )
        if (
            name == "git"
            and sub.name == "config"
            and not any(UNKNOWN in arg for arg in rest)
            and not git_config_reads(rest)
            and not git_config_sets_identity(rest)
        ):
            return Decision(
                False,
                "built-in: git config only reads, and sets only the identity",
                "git config may only read (--get, --get-all, --get-regexp, --list, or one "
                "name) or set user.name or user.email in the repository "
                "([config, user.name, NAME])",
                "other configuration written by a capability could make git run programs; "
                "set it in the repository yourself if it is really needed",
            )
        if (
            api_owner is not None
            and profile.read_api is not None
            and profile.api is not None
            and sub.name == profile.api
        ):
            what = f"{name} {sub.name}"
            call = profile.read_api(rest)
            if call.problem:
                return Decision(
                    False, f"built-in: {what} must be readable", call.problem, call.hint
                )
            # DELETE destroys, as the api operation declares it does
            effect = "destroy" if call.method.upper() == "DELETE" else None
            decision = self.decide_operation(
                api_owner.name, ["api", call.method, call.route], effect=effect, operation="api"
            )
            if not decision.allowed:
                return decision._replace(
                    reason=decision.reason or f"{what} {call.method} {call.route}",
                )
            if call.graphql:
                return self._decide_graphql(
                    api_owner, call.documents, call.graphql_problem, f"{what} graphql"
                )
        return None

    def _decide_graphql(
        self, owner: Provider, documents: Sequence[str], problem: str, what: str
    ) -> Decision | None:
        """``gh api graphql`` (``what``): each document decided as the owner's GraphQL
        operation would decide it (``github graphql DOCUMENT``); None when each is
        allowed."""
        hint = (
            "write the document in the capability, as -f query='...'; or use the "
            f"{owner.name} provider's graphql operation"
        )
        if problem:
            return Decision(False, f"built-in: {what} must be readable", problem, hint)
        if not documents:
            return None  # no document: GitHub has nothing to run
        operation = document_operation(owner)
        if operation is None:
            return Decision(
                False,
                f"built-in: {what} must be readable",
                f"the {owner.name} provider declares no GraphQL operation that reads the "
                "document, so what it does cannot be decided",
                hint,
            )
        for document in documents:
            call = document_call(operation, document)
            decision = self._decide_actions(
                owner.name, operation, call, [*operation.words, document]
            )
            if not decision.allowed:
                return decision._replace(reason=decision.reason or what)
        return None

    # -- operations -----------------------------------------------------------
    def decide_call(
        self,
        provider: Provider,
        operation: Operation,
        call: BoundCall,
        *,
        authored: Sequence[str] | None = None,
    ) -> Decision:
        """An operation step's decision, on its bound call: the operation and its
        positionals (METHOD and PATH for api), never whatever leading words the args
        happen to have; its effect (api DELETE destroys), and each of its actions (a
        GraphQL document's mutations); and for an operation that runs a program (gh),
        that program's call as a binary step's would be decided. ``authored``: the args
        after the operation words as written (None for a command typed by the user)."""
        bound_words = [*operation.words]
        bound_words += [
            call.positionals[p.name] for p in operation.positionals if p.name in call.positionals
        ]
        decision = self._decide_actions(provider.name, operation, call, bound_words)
        if decision.allowed and operation.program is not None:
            decision = self.decide_binary(
                operation.program,
                [*operation.words, *call.args],
                authored=[*operation.words, *authored] if authored is not None else None,
                api_owner=provider,
            )
        return decision

    def _decide_actions(
        self, provider: str, operation: Operation, call: BoundCall, words: Sequence[str]
    ) -> Decision:
        """The call decided on ``words`` (its operation words and positionals) and its
        effect, then action by action: each as the operation's words and its name
        (``github graphql deleteIssue``), with its own effect. A destroy the actions
        account for is allowed when each destroying action is; the call's words are
        still matched against denied_operations."""
        actions = operation.known_actions(call)
        effect = operation.known_effect(call)
        if any(action.effect == "destroy" for action in actions):
            effect = None  # decided action by action below
        decision = self.decide_operation(provider, words, effect=effect, operation=operation.name)
        if not decision.allowed:
            return decision
        allowance: Decision | None = None
        for action in actions:
            decided = self.decide_operation(
                provider,
                [*operation.words, action.name],
                effect=action.effect,
                operation=f"{operation.name} {action.name}",
            )
            if not decided.allowed:
                why = f" ({action.kind} {action.name}: {action.why})" if action.why else ""
                return decided._replace(reason=decided.reason + why)
            if action.effect == "destroy" and allowance is None:
                allowance = decided
        return allowance or decision

    def decide_operation(
        self,
        provider: str,
        args: Sequence[str],
        *,
        effect: str | None = None,
        operation: str | None = None,
    ) -> Decision:
        """Denied when a denied_operations entry's words match the leading args (the
        operation's words and positionals); a word with ``*`` or ``?`` is a glob (``github
        api put */secrets/*``), every match case-insensitive. An ``effect`` of ``destroy``
        (the declared effect, or the bound call's) is refused unless an allowed_destructive
        entry matches the same way: a destructive operation is safe by default."""
        tokens = [provider.casefold(), *(a.casefold() for a in args)]

        def matching(
            entries: list[tuple[tuple[str, ...], str]], unknown: bool
        ) -> tuple[str, str] | None:
            # ``unknown``: whether an input's value not known yet counts as matching
            for words, source in entries:
                if len(words) <= len(tokens) and all(
                    _word_matches(w, t, unknown) for w, t in zip(words, tokens, strict=False)
                ):
                    return " ".join(words), source
            return None

        # decided before the inputs are known, a denial must hold whatever they are, and
        # an allowance that might hold leaves the destroy undecided
        denied = matching(self.denied_operations, unknown=False)
        if denied is not None:
            return Decision(False, f"denied_operations: {denied[0]} ({denied[1]})")
        if effect != "destroy":
            return Decision(True, "no denied_operations entry matches")
        allowed = matching(self.allowed_destructive, unknown=True)
        if allowed is not None:
            return Decision(True, f"allowed_destructive: {allowed[0]} ({allowed[1]})")
        call = " ".join([provider, *args])
        named = f"{provider} {operation}" if operation else call
        # (a call too long to be an entry, a whole GraphQL document, is not offered as one)
        offer = UNKNOWN not in call and call != named and len(call) <= 200
        this_one = f", ['{call}'] this one only" if offer else ""
        return Decision(
            False,
            "effect destroy (allowed_destructive)",
            f"'{named}' destroys what it names, and no allowed_destructive entry lists it",
            f"to allow it deliberately, list it in your policy file: allowed_destructive: "
            f"['{named}'] allows every call{this_one}",
        )

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
            # the user file's entries the floor overrides, at their positions
            "warnings": [w.to_json() for w in self.warnings],
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
            "allowed_destructive": [
                {"operation": " ".join(w), "source": s} for w, s in self.allowed_destructive
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
            "allowed_subcommands": [
                {"binary": b, "subcommand": c, "source": s}
                for b, subs in sorted(self.allowed_subcommands.items())
                for c, s in sorted(subs.items())
            ],
            "literal_options": [
                {"binary": b, "option": o, "source": s}
                for b, opts in sorted(self.literal_options.items())
                for o, s in opts.items()
            ],
            "system_paths": [{"path": p, "source": s} for p, s in self.system_paths.items()],
            "git_hooks": {"value": self.git_hooks[0], "source": self.git_hooks[1]},
            "require_confinement": {
                "value": self.require_confinement[0],
                "source": self.require_confinement[1],
            },
            "allow_unconfined": {
                "value": self.allow_unconfined[0],
                "source": self.allow_unconfined[1],
            },
            "admitted_helpers": [
                {"binary": b, "path": p, "source": s}
                for b, paths in sorted(self.admitted_helpers.items())
                for p, s in paths.items()
            ],
            "binary_hosts": [
                {"binary": b, "host": h, "source": s}
                for b, hosts in sorted(self.binary_hosts.items())
                for h, s in hosts.items()
            ],
            "agents": self.agents.to_json(),
            "file_edits": {
                key: {"value": _number(value), "source": source}
                for key, (value, source) in self.file_edits.items()
            },
            "only_binaries": {
                "value": self.only_binaries[0] if self.only_binaries else None,
                "source": self.only_binaries[1] if self.only_binaries else None,
            },
        }


def _number(value: float) -> float | int:
    """A bound as the policy file writes it: 100, not 100.0."""
    return int(value) if value.is_integer() else value


def _guess(word: str, names: Iterable[str]) -> str:
    """``did you mean 'git'? `` for a misspelled binary or subcommand (or nothing)."""
    from runtime.plan.binding import did_you_mean
    from runtime.text import nearest

    return did_you_mean(nearest(word, names, limit=2))


def _unlisted_hint(name: str, allowed: Iterable[str]) -> str:
    return (
        f"{_guess(name, allowed)}a user policy can allow more binaries "
        "(allowed_binaries in policy.yaml)"
    )


_SHORT_CLUSTER = re.compile(r"^-[A-Za-z0-9]+$")
_LEADING_LETTERS = re.compile(r"[A-Za-z0-9]+")
# What may follow a denied binary's name in a versioned spelling: python3.11, perl5.36, node-18
_VERSIONED = re.compile(r"[-.]?[0-9][0-9.]*")
# ... and in a Debian alternatives variant: vim.basic, vim.tiny, nc.openbsd
_VARIANT = re.compile(r"\.[a-z][a-z0-9_-]*")


def _word_matches(pattern: str, word: str, unknown: bool = False) -> bool:
    if UNKNOWN in word:  # holds an input's value, not known yet: only `*` matches any
        return unknown or pattern == "*"
    if "*" in pattern or "?" in pattern:
        return fnmatch.fnmatchcase(word, pattern)
    return pattern == word


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
    if _SHORT_CLUSTER.match(rule) and arg.startswith("-") and not arg.startswith("--"):
        # a cluster (-fd) or a short option with its value attached (-Oless, -n5): the
        # letters before the first other character are options, any of them the rule's
        letters = _LEADING_LETTERS.match(arg[1:])
        return letters is not None and set(rule[1:]) <= set(letters.group(0))
    return False


def run_matches(run: Sequence[str], args: Sequence[str]) -> bool:
    """True when the tokens of ``run`` appear in ``args`` in order."""
    i = 0
    for arg in args:
        if i < len(run) and _token_matches(run[i], arg):
            i += 1
    return i == len(run)


def document_operation(provider: Provider) -> Operation | None:
    """The provider's operation that sends a GraphQL document of the author's own (github
    ``graphql``): what ``gh api graphql`` stands for."""
    for operation in provider.operations:
        if (
            operation.transport == "graphql"
            and operation.document is None
            and operation.positionals
            and operation.effect_from is not None
        ):
            return operation
    return None


def document_call(operation: Operation, document: str) -> BoundCall:
    """``operation`` called with ``document`` as its first positional (an input's value not
    known yet, :data:`UNKNOWN`, leaves the call's effect to plan time)."""
    name = operation.positionals[0].name
    return BoundCall(
        positionals={name: document},
        options=(),
        passthrough=(),
        args=(document,),
        pieces=((Piece(document, None, UNKNOWN in document),),),
        binding=Binding(positionals={name: 0}),
    )


def program_actions(name: str, args: Sequence[str], owner: Provider | None) -> tuple[Action, ...]:
    """What a binary step's call does, action by action, as its owner reads it: the
    mutations of the documents ``gh api graphql`` sends (for the plan to show), read by
    the program's profile (its ``api`` subcommand's ``read_api``)."""
    if owner is None:
        return ()
    profile = owned_profile(name, owner)
    if profile.api is None or profile.read_api is None:
        return ()
    sub = profile.subcommand(args)
    if sub.name != profile.api or sub.problem:
        return ()
    request = profile.read_api(args[sub.position + 1 :])
    operation = document_operation(owner)
    if not request.graphql or operation is None:
        return ()
    found: dict[str, Action] = {}
    for document in request.documents:
        for action in operation.known_actions(document_call(operation, document)):
            found.setdefault(action.name, action)
    return tuple(found.values())
