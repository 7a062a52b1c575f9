"""The plan: substitution, binding as authored, and the decision of every step.

``build_plan`` is driven on capabilities built here, with a real Workspace
(its Runtime Home in a temporary folder, its PATH a folder of stand-in
programs, its policy pinned) and real RunServices; nothing runs. The helpers of
``runtime.plan.binary`` read a binary step's args as the program would, and
are checked directly at the end.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from providers.github import PROVIDER as GITHUB
from providers.github.cli_args import gh_api_call, gh_git_clone, gh_targets, option_values
from runtime.document.grammar import check_capability
from runtime.document.loader import parse_document
from runtime.document.model import Capability
from runtime.errors import ExitCode, UsageError
from runtime.execute.services import RunServices
from runtime.plan.binary import git_config_reads, input_misuses, literal_option_uses
from runtime.plan.build import Plan, build_plan
from runtime.plan.gate import decide
from runtime.plan.policy import Policy
from runtime.plan.policy_file import load_policy
from runtime.plan.programs import owned_profile
from runtime.plan.validate import Resolved, check_steps
from runtime.plan.workspace import Workspace
from runtime.provider.operations import Piece
from runtime.redact import Redactor

PROGRAMS = ("echo", "git", "gh", "dash")


@pytest.fixture(scope="module")
def default_policy() -> Policy:
    return load_policy(None)


@pytest.fixture
def ws(tmp_path: Path, default_policy: Policy) -> Workspace:
    programs = tmp_path / "bin"
    programs.mkdir()
    for name in PROGRAMS:
        path = programs / name
        path.write_text("#!/bin/false\n")
        path.chmod(0o755)
    os.symlink(programs / "dash", programs / "mysh")
    work = tmp_path / "work"
    work.mkdir()
    environ = {
        "PATH": str(programs),
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "RUNTIME_HOME": str(tmp_path / "home"),
    }
    workspace = Workspace(environ, work)
    workspace.__dict__["policy"] = default_policy
    return workspace


@pytest.fixture
def services(ws: Workspace) -> RunServices:
    return RunServices(ws, Redactor())


def pin(ws: Workspace, text: str, tmp_path: Path) -> Policy:
    """The default policy with ``text`` as the user's policy file, pinned on ``ws``."""
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    policy = load_policy(path)
    ws.__dict__["policy"] = policy
    return policy


def capability(body: str) -> Capability:
    """The block's first line is line 6 of the file."""
    text = f"# Test\n\nProse.\n\n```runtime\n{body}```\n"
    cap, problems = check_capability(parse_document(text.encode("utf-8"), "cap.md"))
    assert [p for p in problems if p.is_error] == []
    return cap


def inputs_block(*names: str) -> str:
    return "inputs:\n" + "".join(f"  {n}:\n    required: false\n" for n in names)


def plan(
    ws: Workspace,
    services: RunServices,
    steps: str,
    inputs: dict[str, str] | None = None,
    *,
    declared: tuple[str, ...] = (),
    resolved: Resolved | None = None,
) -> Plan:
    names = declared or tuple(inputs or ())
    body = "version: v1\n" + (inputs_block(*names) if names else "") + "workflow:\n" + steps
    planned = build_plan(capability(body), inputs or {}, ws, services, resolved)
    decide(planned, ws, services)  # the policy station's part: each step's decision
    return planned


def refusal(ws: Workspace, services: RunServices, steps: str, inputs: dict[str, str]) -> UsageError:
    with pytest.raises(UsageError) as caught:
        plan(ws, services, steps, inputs)
    return caught.value


# -- substitution ---------------------------------------------------------------------------


def test_substitution_is_literal_and_one_pass(ws: Workspace, services: RunServices) -> None:
    steps = (
        "  - binary: echo\n"
        '    args: ["${a}", "x${b}y", "${a}${b}", "${{ a }}", "${nope}", "$a", "${b}"]\n'
    )
    found = plan(ws, services, steps, {"a": "${b}", "b": "\\1 $0 & ${a}"}, declared=("a", "b"))
    step = found.steps[0]
    assert step.args == [
        "${b}",  # a value is never scanned again
        "x\\1 $0 & ${a}y",
        "${b}\\1 $0 & ${a}",
        "${{ a }}",  # not a reference (GitHub Actions)
        "${nope}",  # not supplied: stays as typed
        "$a",
        "\\1 $0 & ${a}",
    ]
    assert step.step.arg_texts[0] == "${a}"  # the authored text is kept
    assert found.inputs == {"a": "${b}", "b": "\\1 $0 & ${a}"}


def test_a_provider_call_knows_which_text_came_from_an_input(
    ws: Workspace, services: RunServices
) -> None:
    steps = '  - provider: files\n    args: [write, "${path}", "pre-${v}-post"]\n'
    found = plan(ws, services, steps, {"path": "out.txt", "v": "${path}"})
    call = found.steps[0].call
    assert call is not None
    assert call.positionals == {"PATH": "out.txt", "CONTENT": "pre-${path}-post"}
    assert call.pieces_of("PATH") == (Piece("out.txt", "path"),)
    assert call.pieces_of("CONTENT") == (
        Piece("pre-"),
        Piece("${path}", "v"),
        Piece("-post"),
    )


def test_an_unsupplied_input_is_a_missing_piece(ws: Workspace, services: RunServices) -> None:
    steps = '  - provider: files\n    args: [write, out.txt, "${v}"]\n'
    found = plan(ws, services, steps, {}, declared=("v",))
    call = found.steps[0].call
    assert call is not None
    assert call.pieces_of("CONTENT") == (Piece("${v}", "v", True),)


# -- an input never becomes an option ----------------------------------------------------------


def test_an_input_that_would_become_an_option_is_refused_at_its_position(
    ws: Workspace, services: RunServices
) -> None:
    steps = (
        '  - binary: echo\n    args: [ok]\n  - binary: git\n    args: [fetch, origin, "${ref}"]\n'
    )
    failure = refusal(ws, services, steps, {"ref": "--upload-pack=touch /tmp/x"})
    assert failure.code == "input-as-option"
    assert failure.exit_code == ExitCode.INVALID == 2
    assert failure.message == (
        "input 'ref' would become an option of a program (step 2); nothing ran"
    )
    [problem] = failure.problems
    # line 6 version, 7-9 inputs, 10 workflow, 11-12 step 1, 13-14 step 2
    assert (problem.file, problem.line, problem.column, problem.code) == (
        "cap.md",
        14,
        27,
        "input-as-option",
    )
    assert problem.message == (
        "step 2 (git): the value of input 'ref' starts with '-', so the program would read it "
        "as an option"
    )
    assert failure.hint is not None and 'put "--" before it' in failure.hint


def test_every_misuse_is_reported_once_per_input_and_step(
    ws: Workspace, services: RunServices
) -> None:
    steps = (
        '  - binary: git\n    args: [log, "-n${count}", "--${name}=1", "${count}", "${x}"]\n'
        '  - binary: echo\n    args: ["${x}"]\n'
    )
    failure = refusal(ws, services, steps, {"count": "-5", "name": "output", "x": "-e"})
    assert failure.message == (
        "input 'count', 'name', 'x' would become an option of a program (steps 1, 2); nothing ran"
    )
    assert [(p.line, p.column, p.message.split(": ", 1)[1]) for p in failure.problems] == [
        (16, 17, "input 'count' is part of the short option '-n${count}'"),
        (16, 31, "input 'name' would choose the option name in '--${name}=1'"),
        (
            16,
            58,
            "the value of input 'x' starts with '-', so the program would read it as an option",
        ),
        (
            18,
            12,
            "the value of input 'x' starts with '-', so the program would read it as an option",
        ),
    ]


@pytest.mark.parametrize(
    "args",
    [
        '[log, --, "${path}"]',  # after an authored separator
        '[log, "--format=${path}"]',  # the value of an option the author wrote
        '[log, "x${path}"]',  # does not start with '-'
        '[log, "--", "-n", "${path}"]',
    ],
)
def test_places_where_an_input_stays_a_value(
    ws: Workspace, services: RunServices, args: str
) -> None:
    found = plan(ws, services, f"  - binary: git\n    args: {args}\n", {"path": "-weird name"})
    assert found.steps[0].decision.allowed, found.steps[0].decision


def test_a_provider_operation_that_runs_a_program_is_held_to_the_same_rule(
    ws: Workspace, services: RunServices
) -> None:
    failure = refusal(
        ws, services, '  - provider: github\n    args: [pr, list, "${who}"]\n', {"who": "--web"}
    )
    assert failure.code == "input-as-option"
    assert failure.problems[0].message.startswith("step 1 (github pr list): ")
    # an operation that starts no program takes the value as it is
    found = plan(ws, services, '  - provider: files\n    args: [read, "${p}"]\n', {"p": "-x"})
    assert found.steps[0].args == ["read", "-x"]


# -- values the operation declares, checked once substituted --------------------------------


def test_an_input_value_of_the_wrong_type_is_refused_at_its_position(
    ws: Workspace, services: RunServices
) -> None:
    steps = '  - provider: github\n    args: [repo, list, acme, "per_page=${n}"]\n'
    with pytest.raises(UsageError) as caught:
        plan(ws, services, steps, {"n": "lots"})
    failure = caught.value
    assert failure.code == "bad-value"
    [problem] = failure.problems
    assert (problem.line, problem.column) == (12, 30)
    assert "per_page=lots (from input 'n') is not an integer" in problem.message


def test_an_input_that_would_change_a_rest_route_is_refused(
    ws: Workspace, services: RunServices
) -> None:
    steps = '  - provider: github\n    args: [api, GET, "/repos/${r}"]\n'
    with pytest.raises(UsageError) as caught:
        plan(ws, services, steps, {"r": "acme/app/../../user"})
    assert caught.value.code == "input-in-route"
    assert "nothing ran" in caught.value.message


# -- provider steps are decided on the bound call ------------------------------------------


@pytest.mark.parametrize("method", ["DELETE", "delete", "Delete"])
def test_an_api_delete_is_refused_as_a_destroy(
    ws: Workspace, services: RunServices, method: str
) -> None:
    found = plan(
        ws, services, f"  - provider: github\n    args: [api, {method}, /repos/acme/app]\n"
    )
    step = found.steps[0]
    assert step.effect == "destroy"
    assert not step.decision.allowed
    assert step.decision.rule == "effect destroy (allowed_destructive)"
    assert found.refused == [step]


def test_an_option_before_the_method_is_a_binding_problem_and_never_allowed(
    ws: Workspace, services: RunServices
) -> None:
    steps = "  - provider: github\n    args: [api, x=1, DELETE, /repos/acme/app]\n"
    cap = capability("version: v1\nworkflow:\n" + steps)
    resolved: Resolved = {}
    problems = check_steps(cap, ws.registry, ws.policy, resolved)
    assert [(p.line, p.column, p.code) for p in problems] == [(9, 17, "option-before-positional")]
    assert "write METHOD and PATH first" in (problems[0].hint or "")
    assert resolved == {}  # a step that does not bind is not planned from validation
    planned = build_plan(cap, {}, ws, services, resolved)
    decide(planned, ws, services)
    step = planned.steps[0]
    assert step.call is not None and step.call.positionals["METHOD"] == "DELETE"
    assert not step.decision.allowed and step.effect == "destroy"


def test_a_step_decided_from_the_validation_binding(ws: Workspace, services: RunServices) -> None:
    cap = capability(
        "version: v1\nworkflow:\n  - provider: github\n    args: [api, GET, /repos/acme/app]\n"
    )
    resolved: Resolved = {}
    assert check_steps(cap, ws.registry, ws.policy, resolved) == []
    planned = build_plan(cap, {}, ws, services, resolved)
    decide(planned, ws, services)
    step = planned.steps[0]
    assert (step.label, step.effect, step.decision.allowed) == ("github api", "read", True)
    assert step.transport == "rest" and step.credential == "github"


def test_an_api_write_to_secrets_is_a_denied_operation(
    ws: Workspace, services: RunServices
) -> None:
    steps = '  - provider: github\n    args: [api, PUT, "/repos/${r}/actions/secrets/T"]\n'
    step = plan(ws, services, steps, {"r": "acme/app"}).steps[0]
    assert not step.decision.allowed
    assert step.decision.rule == "denied_operations: github api put */secrets/* (default)"


def test_a_policy_allows_a_destroy_deliberately(
    ws: Workspace, services: RunServices, tmp_path: Path
) -> None:
    pin(ws, "allowed_destructive: ['github api DELETE /repos/acme/*/releases/*']\n", tmp_path)
    found = plan(
        ws,
        services,
        "  - provider: github\n    args: [api, DELETE, /repos/acme/app/releases/7]\n"
        "  - provider: github\n    args: [api, DELETE, /repos/acme/app]\n",
    )
    first, second = found.steps
    assert first.decision.allowed and first.decision.rule.startswith("allowed_destructive:")
    assert not second.decision.allowed


# -- effects -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "effect"),
    [
        ("# a comment\nmutation { addStar(input: {}) { clientMutationId } }", "write"),
        ("query A { viewer { login } }\nmutation B { x }", "destroy"),  # x: not GitHub's
        ("query A { viewer { login } }\nmutation B { closeIssue(input: {}) { a } }", "write"),
        (
            "mutation A { addStar(input: {}) { a } }\nmutation B { deleteRef(input: {}) { a } }",
            "destroy",
        ),
        ("subscription { x }", "write"),
        ("{ viewer { login } }", "read"),
        ("# mutation { x }\nquery { viewer { login } }", "read"),
    ],
)
def test_a_graphql_step_has_the_effect_of_its_document(
    ws: Workspace, services: RunServices, document: str, effect: str
) -> None:
    block = "".join(f"        {line}\n" for line in document.splitlines())
    steps = f"  - provider: github\n    args:\n      - graphql\n      - |\n{block}"
    assert plan(ws, services, steps).steps[0].effect == effect


def test_a_graphql_document_from_an_input_is_read_once_substituted(
    ws: Workspace, services: RunServices
) -> None:
    steps = '  - provider: github\n    args: [graphql, "${q}"]\n'
    found = plan(ws, services, steps, {"q": "# innocent\nmutation { deleteIssue }"})
    assert found.steps[0].effect == "destroy"


def test_declared_effects(ws: Workspace, services: RunServices) -> None:
    found = plan(
        ws,
        services,
        "  - provider: files\n    args: [read, a.txt]\n"
        "  - provider: files\n    args: [write, a.txt, x]\n"
        "  - binary: echo\n    args: [x]\n",
    )
    assert [s.effect for s in found.steps] == ["read", "write", "write"]


# -- binary steps ------------------------------------------------------------------------------


def test_a_binary_step_is_resolved_on_path_when_allowed(
    ws: Workspace, services: RunServices, tmp_path: Path
) -> None:
    found = plan(ws, services, "  - binary: git\n    args: [status]\n")
    step = found.steps[0]
    assert step.decision.allowed
    assert step.binary_path == str(tmp_path / "bin" / "git")
    assert (step.transport, step.credential) == ("process", None)
    refused = plan(ws, services, "  - binary: git\n    args: [push, --force]\n").steps[0]
    assert not refused.decision.allowed
    assert refused.binary_path == step.binary_path  # plan names what would have run


def test_an_allowed_binary_missing_from_path_is_a_missing_binary(
    ws: Workspace, services: RunServices
) -> None:
    found = plan(ws, services, "  - binary: jq\n    args: [.]\n")
    assert found.steps[0].decision.allowed
    assert found.missing_binaries == found.steps


def test_a_binary_is_decided_by_the_real_file_it_leads_to(
    ws: Workspace, services: RunServices, tmp_path: Path
) -> None:
    pin(ws, "allowed_binaries: [mysh]\n", tmp_path)
    step = plan(ws, services, "  - binary: mysh\n    args: [-c, id]\n").steps[0]
    assert not step.decision.allowed
    assert step.decision.rule == "denied_binaries: dash (default)"
    assert step.decision.reason == "mysh is dash by another name"


def test_gh_api_in_a_binary_step_is_decided_like_the_providers_api(
    ws: Workspace, services: RunServices
) -> None:
    step = plan(ws, services, "  - binary: gh\n    args: [api, -X, DELETE, /repos/a/b]\n").steps[0]
    assert not step.decision.allowed
    assert step.decision.rule == "effect destroy (allowed_destructive)"


def test_literal_options_are_checked_on_the_args_as_authored(
    ws: Workspace, services: RunServices
) -> None:
    steps = '  - binary: gh\n    args: [pr, list, --jq, "${q}"]\n'
    step = plan(ws, services, steps, {"q": ".[].title"}).steps[0]
    assert not step.decision.allowed
    assert step.decision.rule == "literal_options: gh --jq (default)"
    written = plan(ws, services, "  - binary: gh\n    args: [pr, list, --jq, '.[].title']\n")
    assert written.steps[0].decision.allowed


# -- gh is pinned to its host ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "what"),
    [
        ("[pr, list, --repo, otherhost/a/b]", "--repo otherhost/a/b"),
        ("[pr, list, --repo=otherhost/a/b]", "--repo otherhost/a/b"),
        ("[pr, list, -R, otherhost/a/b]", "--repo otherhost/a/b"),
        ("[pr, view, 'https://OtherHost/a/b/pull/1']", "https://OtherHost/a/b/pull/1"),
        ("[api, 'https://evil.example/x']", "https://evil.example/x"),
        ("[repo, view, otherhost/a/b]", "otherhost/a/b"),
        ("[repo, clone, otherhost/a/b, ./into]", "otherhost/a/b"),
        ("[repo, view, --web, otherhost/a/b]", "otherhost/a/b"),
    ],
)
def test_a_gh_binary_step_is_pinned_to_its_host(
    ws: Workspace, services: RunServices, args: str, what: str
) -> None:
    step = plan(ws, services, f"  - binary: gh\n    args: {args}\n").steps[0]
    assert not step.decision.allowed
    assert step.decision.rule == "built-in: gh is pinned to its host"
    assert step.decision.reason.startswith(f"'{what}' names the host ")
    assert "not github.com, which gh's token is for" in step.decision.reason
    assert step.credential == "github"


@pytest.mark.parametrize(
    "args",
    [
        "[pr, list, --repo, a/b]",
        "[pr, list, --repo, github.com/a/b]",
        "[pr, list, --repo, GitHub.com/a/b]",
        "[api, 'https://api.github.com/user']",  # github.com's other name
        "[pr, view, 'https://github.com/a/b/pull/1']",
        "[repo, view, a/b]",
        "[repo, view, github.com/a/b]",
        "[repo, clone, a/b, ./out/a/b]",  # a local folder written as a path
        "[release, upload, v1, dist/a/b.tgz]",  # not a repo command: a file path
    ],
)
def test_gh_may_name_its_own_host(ws: Workspace, services: RunServices, args: str) -> None:
    step = plan(ws, services, f"  - binary: gh\n    args: {args}\n").steps[0]
    assert step.decision.allowed, step.decision


def test_the_github_providers_gh_operations_are_pinned_too(
    ws: Workspace, services: RunServices
) -> None:
    steps = "  - provider: github\n    args: [pr, list, --repo, otherhost/a/b]\n"
    step = plan(ws, services, steps).steps[0]
    assert not step.decision.allowed
    assert step.decision.rule == "built-in: gh is pinned to its host"


def test_the_pinned_host_follows_the_configured_host(ws: Workspace, services: RunServices) -> None:
    ws.home.root.mkdir(parents=True, exist_ok=True)
    (ws.home.root / "config.yaml").write_text("github_host: ghe.example.com\n")
    allowed = plan(ws, services, "  - binary: gh\n    args: [pr, list, -R, ghe.example.com/a/b]\n")
    assert allowed.steps[0].decision.allowed
    refused = plan(ws, services, "  - binary: gh\n    args: [pr, list, -R, github.com/a/b]\n")
    assert "not ghe.example.com" in refused.steps[0].decision.reason


# -- runtime.plan.binary -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("authored", "resolved", "expected"),
    [
        (["${a}"], ["-x"], [(0, ("a",), "starts with '-'")]),
        (["${a}${b}"], ["-x"], [(0, ("a", "b"), "starts with '-'")]),
        (["${a}"], ["x"], []),
        (["${a}"], ["-"], [(0, ("a",), "starts with '-'")]),
        (["-"], ["-"], []),
        (["--", "${a}"], ["--", "-x"], []),
        (["${a}", "--", "${a}"], ["-x", "--", "-x"], [(0, ("a",), "starts with '-'")]),
        (["--opt=${a}"], ["--opt=-x"], []),
        (["--${a}"], ["--x"], [(0, ("a",), "option name")]),
        (["--o${a}=1"], ["--ox=1"], [(0, ("a",), "option name")]),
        (["-n${a}"], ["-n5"], [(0, ("a",), "short option")]),
        (["-${a}"], ["-x"], [(0, ("a",), "short option")]),
        (["x", "${a}"], ["x", "--"], [(1, ("a",), "starts with '-'")]),
        (["-n", "${a}"], ["-n", "-5"], [(1, ("a",), "starts with '-'")]),
    ],
)
def test_input_misuses(
    authored: list[str], resolved: list[str], expected: list[tuple[int, tuple[str, ...], str]]
) -> None:
    found = input_misuses(authored, resolved)
    assert [(m.arg_index, m.inputs) for m in found] == [(i, n) for i, n, _ in expected]
    for misuse, (_, _, text) in zip(found, expected, strict=True):
        assert text in misuse.message


@pytest.mark.parametrize(
    ("authored", "resolved", "expected"),
    [
        # after gh's `--` in repo clone, git clone's options: an input is an option again
        (["repo", "clone", "a/b", "--", "${v}"], ["repo", "clone", "a/b", "--", "-x"], [4]),
        (
            ["repo", "clone", "a/b", "d", "--", "${v}"],
            ["repo", "clone", "a/b", "d", "--", "-x"],
            [5],
        ),
        (
            ["repo", "fork", "a/b", "--", "--depth=${v}"],
            ["repo", "fork", "a/b", "--", "--depth=1"],
            [],
        ),
        (["gist", "clone", "g", "--", "--${v}"], ["gist", "clone", "g", "--", "--x"], [4]),
        # ... until git's own `--`
        (
            ["repo", "clone", "a/b", "--", "--", "${v}"],
            ["repo", "clone", "a/b", "--", "--", "-x"],
            [],
        ),
        # a `--` that is a gh flag's value is not gh's `--`
        (
            ["repo", "clone", "-u", "--", "a/b", "--", "${v}"],
            ["repo", "clone", "-u", "--", "a/b", "--", "-x"],
            [6],
        ),
        # other gh commands hand nothing to git: gh's `--` ends the options for good
        (["pr", "list", "--", "${v}"], ["pr", "list", "--", "-x"], []),
    ],
)
def test_input_misuses_after_ghs_separator(
    authored: list[str], resolved: list[str], expected: list[int]
) -> None:
    found = input_misuses(authored, resolved, owned_profile("gh", GITHUB))
    assert [m.arg_index for m in found] == expected
    jq = owned_profile("jq", GITHUB)
    assert [m.arg_index for m in input_misuses(authored, resolved, jq)] == []
    # without its owner, gh's grammar is not known: nothing is handed over
    assert [m.arg_index for m in input_misuses(authored, resolved, owned_profile("gh", None))] == []


@pytest.mark.parametrize(
    ("args", "command", "git", "dash"),
    [
        (["repo", "clone", "a/b"], "repo clone", [], None),
        (["repo", "clone", "a/b", "dir"], "repo clone", ["dir"], None),
        (["repo", "clone", "a/b", "dir", "--", "--depth=1"], "repo clone", ["--depth=1", "dir"], 4),
        (["repo", "clone", "a/b", "--", "--depth=1"], "repo clone", ["--depth=1"], 3),
        # the first of git's args, when it is no option, is the directory (after the URL)
        (["repo", "clone", "a/b", "--", "dir", "--bare"], "repo clone", ["--bare", "dir"], 3),
        (["repo", "clone", "-u", "up", "a/b", "--", "-q"], "repo clone", ["-q"], 5),
        (
            ["repo", "clone", "--upstream-remote-name=up", "a/b", "--", "-q"],
            "repo clone",
            ["-q"],
            4,
        ),
        (["repo", "clone", "-u", "--", "a/b", "--", "-q"], "repo clone", ["-q"], 5),
        (["repo", "fork", "a/b", "--clone", "--", "-q"], "repo fork", ["-q"], 4),
        (["repo", "fork", "--org=acme", "a/b", "--", "-q"], "repo fork", ["-q"], 4),
        (["gist", "clone", "g", "d", "--", "-q"], "gist clone", ["-q", "d"], 4),
    ],
)
def test_gh_git_clone_reads_the_args_gh_hands_to_git(
    args: list[str], command: str, git: list[str], dash: int | None
) -> None:
    found = gh_git_clone(args)
    assert found is not None and not found.problem, found
    assert found.command == command
    assert [args[i] for i in found.indexes] == git
    assert found.dash == dash


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["repo", "clone", "--depth", "1", "a/b"], "'--depth' is not a flag runtime knows"),
        (["repo", "clone", "-x", "a/b", "--", "-q"], "'-x' is not a flag runtime knows"),
        (["repo", "--help", "clone", "a/b"], "an option comes between 'gh repo' and 'clone'"),
    ],
)
def test_gh_git_clone_args_it_cannot_read(args: list[str], problem: str) -> None:
    found = gh_git_clone(args)
    assert found is not None and problem in found.problem, found


@pytest.mark.parametrize(
    "args",
    [["repo", "view", "a/b", "--", "x"], ["pr", "checkout", "1"], ["repo"], ["api", "/x"]],
)
def test_gh_git_clone_is_none_for_other_gh_calls(args: list[str]) -> None:
    assert gh_git_clone(args) is None


GIT_ENTRIES = ["--upload-pack", "clone -u", "--output", "grep -O"]


@pytest.mark.parametrize(
    ("authored", "subcommand", "expected"),
    [
        (["fetch", "--upload-pack=${p}"], "fetch", [("--upload-pack", 1, ("p",))]),
        (["fetch", "--upload-pack", "${p}"], "fetch", [("--upload-pack", 1, ("p",))]),
        (["fetch", "--upload=${p}"], "fetch", [("--upload-pack", 1, ("p",))]),
        (["fetch", "--up=${p}"], "fetch", [("--upload-pack", 1, ("p",))]),
        (["fetch", "--u=${p}"], "fetch", []),  # too short to be one option
        (["fetch", "--upload-pack=git-upload-pack"], "fetch", []),
        (["fetch", "--upload-pack", "x${p}"], "fetch", [("--upload-pack", 1, ("p",))]),
        (["clone", "-u", "${p}", "url"], "clone", [("clone -u", 1, ("p",))]),
        (["clone", "-u${p}", "url"], "clone", [("clone -u", 1, ("p",))]),
        (["clone", "-qu", "${p}", "url"], "clone", [("clone -u", 1, ("p",))]),
        (["push", "-u", "${p}"], "push", []),
        (["grep", "-O${p}", "x"], "grep", [("grep -O", 1, ("p",))]),
        (["log", "--", "--output=${p}"], "log", []),
        (["log", "--output=${a}${b}"], "log", [("--output", 1, ("a", "b"))]),
    ],
)
def test_literal_option_uses(
    authored: list[str], subcommand: str, expected: list[tuple[str, int, tuple[str, ...]]]
) -> None:
    found = literal_option_uses(authored, GIT_ENTRIES, subcommand)
    assert [(u.option, u.arg_index, u.inputs) for u in found] == expected


def test_literal_option_uses_without_entries_for_the_subcommand() -> None:
    assert literal_option_uses(["push", "-u", "${p}"], ["clone -u"], "push") == []
    assert literal_option_uses(["fetch", "--x=${p}"], [], "fetch") == []


@pytest.mark.parametrize(
    ("binary", "args", "name", "position", "problem"),
    [
        ("git", ["status"], "status", 0, ""),
        ("git", ["-C", "dir", "log"], "log", 2, ""),
        ("git", ["-C", "log", "status"], "status", 2, ""),  # -C takes the next arg
        ("git", ["--git-dir=x", "status"], "status", 1, ""),
        ("git", ["--git-dir", "x", "status"], "status", 2, ""),
        ("git", ["--no-pager", "-p", "show"], "show", 2, ""),
        ("git", ["--version"], None, 1, ""),
        ("git", [], None, 0, ""),
        ("git", ["-"], "-", 0, ""),
        ("git", ["--frob", "status"], None, 0, "'--frob' before the subcommand"),
        ("git", ["-Cdir", "status"], None, 0, "'-Cdir' before the subcommand"),
        ("gh", ["--help", "pr", "list"], "pr", 1, ""),
        ("gh", ["-R", "a/b", "pr"], None, 0, "'-R' before the subcommand"),
        ("jq", [".", "file"], ".", 0, ""),
        ("jq", ["-r", "."], None, 0, "'-r' before the subcommand"),
    ],
)
def test_find_subcommand(
    binary: str, args: list[str], name: str | None, position: int, problem: str
) -> None:
    # the engine knows git's global options, the github provider gh's
    found = owned_profile(binary, GITHUB).subcommand(args)
    assert (found.name, found.position) == (name, position)
    assert found.problem.startswith(problem) and bool(found.problem) == bool(problem)


@pytest.mark.parametrize(
    ("args", "reads"),
    [
        (["user.name"], True),
        (["--get", "user.name", "value-regex"], True),
        (["--get-urlmatch", "http", "https://x"], True),
        (["get", "--all", "user.name"], True),
        (["list", "--show-scope"], True),
        (["-z", "--list"], True),
        (["--default=x", "user.name"], True),
        (["--blob", "HEAD:.gitmodules", "--list"], True),
        (["--", "user.name"], True),
        ([], False),
        (["user.name", "x"], False),
        (["--bool", "core.x", "true"], False),
        (["--unset-all", "x.y"], False),
        (["--rename-section", "a", "b"], False),
        (["--remove-section", "a"], False),
        (["--comment=x", "a.b", "c"], False),
        (["rename-section", "a", "b"], False),
        (["remove-section"], False),
        (["set"], False),
        (["--get", "--unset", "a.b"], False),
        (["-lz"], False),  # a cluster runtime does not read
        (["-f", "user.name"], False),  # -f takes the name as its file: no name is left
    ],
)
def test_git_config_reads(args: list[str], reads: bool) -> None:
    assert git_config_reads(args) is reads


@pytest.mark.parametrize(
    ("args", "method", "route"),
    [
        (["/user"], "GET", "/user"),
        (["user"], "GET", "/user"),
        (["repos/a/b/issues", "-f", "title=x"], "POST", "/repos/a/b/issues"),
        (["-F", "n=1", "repos/a/b"], "POST", "/repos/a/b"),
        (["--raw-field=x=1", "repos/a/b"], "POST", "/repos/a/b"),
        (["--input", "body.json", "repos/a/b"], "POST", "/repos/a/b"),
        (["-X", "GET", "-F", "q=1", "search/issues"], "GET", "/search/issues"),
        (["-XPATCH", "repos/a/b"], "PATCH", "/repos/a/b"),
        (["repos/a/b", "--method", "put"], "PUT", "/repos/a/b"),
        (["--method=delete", "repos/a/b"], "DELETE", "/repos/a/b"),
        (["-iX", "DELETE", "repos/a/b"], "DELETE", "/repos/a/b"),
        (["--paginate", "--slurp", "-H", "Accept: x", "repos/a/b"], "GET", "/repos/a/b"),
        (["--jq", ".[]", "-q", ".x", "--cache=1h", "repos/a/b"], "GET", "/repos/a/b"),
        (["--", "repos/a/b"], "GET", "/repos/a/b"),
        (["https://ghe.example.com/api/v3/user"], "GET", "https://ghe.example.com/api/v3/user"),
        (["/first", "/second"], "GET", "/first"),
        (["-X", "DELETE", "-X", "GET", "/x"], "GET", "/x"),
    ],
)
def test_gh_api_call(args: list[str], method: str, route: str) -> None:
    assert gh_api_call(args)[:3] == (method, route, "")


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ([], "gh api names no route"),
        (["-X", "GET"], "gh api names no route"),
        (["--"], "gh api names no route"),
        (["--frob", "/x"], "gh api option '--frob' is not one runtime can read"),
        (["-iZ", "/x"], "gh api option '-Z' is not one runtime can read"),
    ],
)
def test_gh_api_calls_runtime_cannot_read(args: list[str], problem: str) -> None:
    assert gh_api_call(args).problem == problem


@pytest.mark.parametrize(
    ("args", "targets"),
    [
        (["pr", "list", "--repo", "a/b"], []),
        (
            ["pr", "list", "--repo", "host.example/a/b"],
            [("--repo host.example/a/b", "host.example")],
        ),
        (["pr", "list", "--repo=Host.Example/a/b"], [("--repo Host.Example/a/b", "host.example")]),
        (
            ["pr", "list", "-R", "h.example:8443/a/b"],
            [("--repo h.example:8443/a/b", "h.example:8443")],
        ),
        (["pr", "list", "-Rh.example/a/b"], [("--repo h.example/a/b", "h.example")]),
        (
            ["pr", "list", "--repo", "https://h.example/a/b"],
            [("--repo https://h.example/a/b", "h.example")],
        ),
        (["api", "--hostname", "h.example", "/user"], [("--hostname h.example", "h.example")]),
        (["api", "https://user@h.example/x"], [("https://user@h.example/x", "h.example")]),
        (["repo", "clone", "git@h.example:a/b.git"], [("git@h.example:a/b.git", "h.example")]),
        (["pr", "view", "--", "--repo", "h.example/a/b"], []),
    ],
)
def test_gh_targets(args: list[str], targets: list[tuple[str, str]]) -> None:
    assert gh_targets(args) == targets


@pytest.mark.parametrize(
    ("args", "values"),
    [
        (["--jq", ".a"], [".a"]),
        (["--jq=.a"], [".a"]),
        (["--jq="], [""]),
        (["-q", ".a"], [".a"]),
        (["-q.a"], [".a"]),
        (["-iq", ".a"], [".a"]),
        (["--jq", ".a", "-q", ".b"], [".a", ".b"]),
        (["--jq"], []),  # no value follows
        (["--", "--jq", ".a"], []),
        (["--jqx", ".a"], []),
        (["--json", "title"], []),
    ],
)
def test_option_values(args: list[str], values: list[str]) -> None:
    assert option_values(args, "--jq", "-q") == values
