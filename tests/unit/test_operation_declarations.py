"""Operations are the single source: what every consumer reads from the declarations.

- every declaration is whole: its handler resolves, its REST routes' parameters are
  each filled by a declared argument, the declared effect is at least what each route
  does (an operation with a DELETE route is a destroy, so the policy refuses it), a context default names a setting the provider
  declares, a path argument names its access;
- argument types and choices are checked as declared (and a value not known yet is not);
- the policy refuses a destroy unless an allowed_destructive entry matches it;
- the operation tables of specs/files.md and specs/github.md are what the declarations
  make (`make specs`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from providers.files import PROVIDER as FILES
from providers.github import PROVIDER as GITHUB
from providers.github import routes
from runtime.cli.spec_tables import BEGIN, END, operations_markdown, rewrite
from runtime.plan.binding import argument_problems, bind, resolve_call, value_problem
from runtime.plan.policy import Policy
from runtime.plan.policy_file import load_policy
from runtime.provider import BoundCall, Operation, Option, Positional
from runtime.provider.operations import Piece

ROOT = Path(__file__).resolve().parents[2]
PROVIDERS = (FILES, GITHUB)
ALL = [(p.name, op) for p in PROVIDERS for op in p.operations]
IDS = [f"{name} {op.name}" for name, op in ALL]
RANK = {"read": 0, "write": 1, "destroy": 2}


@pytest.mark.parametrize(("provider", "op"), ALL, ids=IDS)
def test_every_handler_resolves(provider: str, op: Operation) -> None:
    assert op.handler is not None
    assert callable(op.implementation)


@pytest.mark.parametrize(("provider", "op"), ALL, ids=IDS)
def test_routes_agree_with_arguments_and_effect(provider: str, op: Operation) -> None:
    if op.transport != "rest":
        assert op.routes == ()
        return
    filled = {
        n for arg in op.arguments if arg.in_route for n in re.findall(r"{(\w+)}", arg.in_route)
    }
    for method, template in op.rest_routes:
        assert set(re.findall(r"{(\w+)}", template)) <= filled, (method, template)
        # the declared effect is at least what each route does (a DELETE route destroys)
        wanted = {"GET": "read", "HEAD": "read", "DELETE": "destroy"}.get(method, "write")
        strongest = max(RANK[e] for e in op.possible_effects())
        assert RANK[wanted] <= strongest, f"{method} {template} is a {wanted}"
    for arg in op.arguments:
        assert arg.in_route is None or arg.in_route in routes.VALUE_KINDS, arg


@pytest.mark.parametrize(("provider", "op"), ALL, ids=IDS)
def test_arguments_are_declared_consistently(provider: str, op: Operation) -> None:
    settings = {s.name for p in PROVIDERS if p.name == provider for s in p.settings}
    for arg in op.arguments:
        assert arg.range is None or arg.type == "int", arg
        assert (arg.type == "path") == (arg.access is not None), arg
        if isinstance(arg, Positional):
            assert arg.context_default is None or arg.context_default in settings, arg
    if provider == "files":  # one path, a positional's or (an edit's --dir) an option's
        (target,) = [a for a in op.arguments if a.access]
        assert target.access == ("read" if op.effect == "read" else "write")


def test_value_problems() -> None:
    per_page = Option("per_page", type="int", range=(1, 100))
    assert value_problem(per_page, "100") is None
    assert value_problem(per_page, "0") == "is out of range (it must be from 1 to 100)"
    assert value_problem(per_page, "ten") == "is not an integer"
    assert value_problem(Option("limit", type="int", range=(1, None)), "-1") == (
        "is out of range (it must be at least 1)"
    )
    assert value_problem(Option("all", type="bool"), "yes") == "is not true or false"
    state = Option("state", choices=("open", "closed", "all"))
    assert value_problem(state, "open") is None
    assert value_problem(state, "Open") == "is not one of open, closed, all"


def _call(op: Operation, args: list[str], inputs: dict[str, str] | None = None) -> BoundCall:
    """``args`` as authored; a ``${name}`` takes ``inputs[name]``, or is unknown."""
    binding, problems = bind(op, args)
    assert problems == []
    pieces: list[tuple[Piece, ...]] = []
    resolved: list[str] = []
    for arg in args:
        found = re.search(r"\$\{(\w+)\}", arg)
        if found is None:
            pieces.append((Piece(arg),))
            resolved.append(arg)
            continue
        name = found.group(1)
        value = (inputs or {}).get(name)
        head, tail = arg[: found.start()], arg[found.end() :]
        middle = Piece(found.group(0), name, True) if value is None else Piece(value, name)
        pieces.append(tuple(p for p in (Piece(head), middle, Piece(tail)) if p.text))
        resolved.append(head + (found.group(0) if value is None else value) + tail)
    return resolve_call(binding, resolved, pieces)


def test_argument_problems_point_at_the_arg_and_name_the_input() -> None:
    (op,) = [op for op in GITHUB.operations if op.name == "issue list"]
    problems = argument_problems(op, _call(op, ["acme", "state=opened", "per_page=${n}"]))
    assert [(p.arg_index, p.code) for p in problems] == [(1, "bad-value")]  # ${n}: not known
    assert problems[0].message == "state=opened is not one of open, closed, all"
    assert problems[0].hint == "'issue list' takes state=open|closed|all"
    (problem,) = argument_problems(op, _call(op, ["per_page=${n}"], {"n": "101"}))
    assert problem.arg_index == 0
    assert (
        problem.message
        == "per_page=101 (from input 'n') is out of range (it must be from 1 to 100)"
    )


# -- the policy decides a destroy by its effect ---------------------------------------------


def test_a_destroy_is_refused_unless_allowed_deliberately() -> None:
    policy = load_policy(None)
    assert policy.allowed_destructive == []
    refused = policy.decide_operation(
        "files", ["delete", "a.txt"], effect="destroy", operation="delete"
    )
    assert not refused.allowed
    assert refused.rule == "effect destroy (allowed_destructive)"
    assert "allowed_destructive: ['files delete'] allows every call" in refused.hint
    assert "['files delete a.txt'] this one only" in refused.hint
    # the same words without the effect are not a destroy
    assert policy.decide_operation("files", ["delete", "a.txt"]).allowed
    policy.allowed_destructive.append((("files", "delete", "a.txt"), "mine.yaml"))
    allowed = policy.decide_operation("files", ["delete", "a.txt"], effect="destroy")
    assert (allowed.allowed, allowed.rule) == (
        True,
        "allowed_destructive: files delete a.txt (mine.yaml)",
    )
    assert not policy.decide_operation("files", ["delete", "b.txt"], effect="destroy").allowed


def test_denied_operations_win_over_allowed_destructive() -> None:
    policy = Policy()
    policy.denied_operations.append((("github", "api", "delete", "*/secrets/*"), "default"))
    policy.allowed_destructive.append((("github", "api", "delete"), "mine.yaml"))
    secret = ["api", "DELETE", "/repos/a/b/actions/secrets/X"]
    assert not policy.decide_operation("github", secret, effect="destroy").allowed
    assert policy.decide_operation(
        "github", ["api", "DELETE", "/repos/a/b"], effect="destroy"
    ).allowed


def test_gh_api_delete_is_a_destroy_too() -> None:
    policy = load_policy(None)
    decision = policy.decide_binary("gh", ["api", "-X", "DELETE", "repos/a/b"], api_owner=GITHUB)
    assert (decision.allowed, decision.rule) == (False, "effect destroy (allowed_destructive)")
    get = policy.decide_binary("gh", ["api", "repos/a/b"], api_owner=GITHUB)
    assert get.allowed, get


# -- the spec tables ----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda p: p.name)
def test_the_committed_spec_table_is_the_generated_one(provider: object) -> None:
    path = ROOT / "specs" / f"{provider.name}.md"  # type: ignore[attr-defined]
    text = path.read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    assert rewrite(text, provider) == text, f"{path} is stale: run `make specs`"


def test_the_table_shows_types_choices_routes_and_effects() -> None:
    table = operations_markdown(GITHUB)
    assert (
        "| `release list OWNER/REPO [OPTION=value...]` | rest | read | GET /repos/{owner}/{repo}/releases |"
        in table
    )
    assert "`state=open\\|closed\\|all (--state, -s)`" in table
    assert "default: the context's organization" in table
    files = operations_markdown(FILES)
    assert (
        "| `delete PATH` | destroy | `PATH`: a path under a write root; file to delete |" in files
    )
