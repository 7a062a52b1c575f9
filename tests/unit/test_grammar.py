"""The closed grammar of a capability, checked on documents built here.

``check_capability`` takes a loaded document and gives the typed model of its
valid parts together with every problem, each at the line and column of the
Markdown file. The CLI tests (tests/cli/test_validate.py) cover how problems are
shown; these cover what the grammar itself accepts and refuses.

In a document made by :func:`capability` without frontmatter, the runtime
block's first line is line 6 of the file.
"""

from __future__ import annotations

import pytest

from runtime.document.grammar import check_capability
from runtime.document.loader import parse_document
from runtime.document.model import Capability
from runtime.problems import Problem

FIRST = 6  # the line of the block's first line, without frontmatter
ONE_STEP = "version: v1\nworkflow:\n  - binary: echo\n    args: [a]\n"


def capability(body: str, frontmatter: str | None = None, fence: str = "```runtime") -> str:
    head = f"---\n{frontmatter}---\n\n" if frontmatter is not None else ""
    close = fence.split("runtime")[0]
    return f"{head}# Test\n\nProse.\n\n{fence}\n{body}{close}\n"


def check(body: str, frontmatter: str | None = None) -> tuple[Capability, list[Problem]]:
    doc = parse_document(capability(body, frontmatter).encode("utf-8"), "cap.md")
    return check_capability(doc)


def where(problems: list[Problem]) -> list[tuple[int, int, str, str]]:
    """Each problem as (line, column, severity, code), in the order reported."""
    return [(p.line, p.column, p.severity, p.code) for p in problems]


def only(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, problems
    return problems[0]


# -- a valid block: the model ----------------------------------------------------------------


def test_a_valid_block_builds_inputs_and_steps_with_their_positions() -> None:
    body = (
        "version: v1\n"  # 6
        "inputs:\n"  # 7
        "  org:\n"  # 8
        "    description: The organization\n"  # 9
        "    required: TRUE\n"  # 10
        "  verbose:\n"  # 11
        "workflow:\n"  # 12
        "  - provider: github\n"  # 13
        '    args: [repo, list, "${org}"]\n'  # 14
        "  - binary: git\n"  # 15
        "    args:\n"  # 16
        "      - status\n"  # 17
    )
    cap, problems = check(body)
    assert problems == []
    assert cap.version == "v1"
    org, verbose = cap.inputs["org"], cap.inputs["verbose"]
    assert (org.description, org.required, org.line, org.column) == ("The organization", True, 8, 3)
    assert (verbose.description, verbose.required) == (None, False)  # `verbose:` alone
    first, second = cap.steps
    assert (first.index, first.kind, first.target, first.line, first.column) == (
        1,
        "provider",
        "github",
        13,
        5,
    )
    assert first.arg_texts == ["repo", "list", "${org}"]
    assert [(a.line, a.column) for a in first.args] == [(14, 12), (14, 18), (14, 24)]
    assert (second.index, second.kind, second.binary, second.provider) == (2, "binary", "git", None)
    assert [(a.text, a.line, a.column) for a in second.args] == [("status", 17, 9)]


@pytest.mark.parametrize("required", ["true", "True", "TRUE", "false", "False"])
def test_required_is_true_or_false_in_any_case(required: str) -> None:
    body = f"version: v1\ninputs:\n  a:\n    required: {required}\n" + ONE_STEP.split("\n", 1)[1]
    cap, problems = check(body)
    assert problems == []
    assert cap.inputs["a"].required is (required.lower() == "true")


def test_an_empty_args_list_is_a_step_without_args() -> None:
    for args in ("[]", ""):
        cap, problems = check(f"version: v1\nworkflow:\n  - provider: files\n    args: {args}\n")
        assert problems == [], args
        assert cap.steps[0].args == ()


# -- args are text, as typed -------------------------------------------------------------


def test_flow_list_scalars_stay_text_as_typed() -> None:
    cap, problems = check(
        "version: v1\nworkflow:\n  - binary: echo\n"
        "    args: [-5, true, null, ~, 0x10, 1e3, 007, 1.0, '', \"${a}\", 'x y']\n"
    )
    assert problems == []
    assert cap.steps[0].arg_texts == [
        "-5",
        "true",
        "null",
        "~",
        "0x10",
        "1e3",
        "007",
        "1.0",
        "",
        "${a}",
        "x y",
    ]


def test_block_list_scalars_stay_text_and_comments_are_not_args() -> None:
    body = (
        "version: v1\nworkflow:\n  - binary: echo\n    args:\n"
        "      - -5\n"  # 10
        "      - true\n"
        "      - null\n"
        "      - 'quoted # not a comment'\n"
        '      - "tab\\there"\n'
        "      - -x  # a comment\n"  # 15
    )
    cap, problems = check(body)
    assert problems == []
    assert [(a.text, a.line, a.column) for a in cap.steps[0].args] == [
        ("-5", 10, 9),
        ("true", 11, 9),
        ("null", 12, 9),
        ("quoted # not a comment", 13, 9),
        ("tab\there", 14, 9),
        ("-x", 15, 9),
    ]


def test_multi_line_literal_blocks_keep_lines_and_indentation() -> None:
    body = (
        "version: v1\nworkflow:\n  - provider: files\n    args:\n"
        "      - write\n"  # 10
        "      - ./README.md\n"
        "      - |\n"  # 12
        "        # Title\n"
        "          indented -5 true null\n"
        "\n"
        "        last\n"
        "      - |-\n"  # 17
        "        no newline\n"
        "      - >\n"  # 19
        "        folded\n"
        "        line\n"
    )
    cap, problems = check(body)
    assert problems == []
    texts = cap.steps[0].arg_texts
    assert texts[2] == "# Title\n  indented -5 true null\n\nlast\n"
    assert texts[3] == "no newline"
    assert texts[4] == "folded line\n"
    assert [(a.line, a.column) for a in cap.steps[0].args][2:] == [(12, 9), (17, 9), (19, 9)]


def test_an_arg_that_is_a_mapping_or_a_list_is_refused_at_its_position() -> None:
    cap, problems = check(
        "version: v1\nworkflow:\n  - provider: files\n    args: [list, {a: b}, [c]]\n"
    )
    assert where(problems) == [(9, 18, "error", "wrong-type"), (9, 26, "error", "wrong-type")]
    assert "each arg of step 1 must be a single value, not a mapping" in problems[0].message
    assert problems[0].hint == "quote it if it is meant as text"
    assert cap.steps == []  # a step with a wrong part is not planned


# -- the closed grammar: unknown keys and their look-alikes -------------------------------


def test_an_unknown_key_names_the_allowed_keys_at_its_position() -> None:
    body = (
        "version: v1\n"
        "colour: red\n"  # 7
        "inputs:\n"
        "  a:\n"
        "    descr: x\n"  # 10
        "workflow:\n"
        "  - provider: files\n"
        "    argz: [list]\n"  # 13
        "    args: [list, .]\n"
    )
    cap, problems = check(body)
    assert where(problems) == [
        (7, 1, "error", "unknown-key"),
        (10, 5, "error", "unknown-key"),
        (13, 5, "error", "unknown-key"),
    ]
    top, in_input, in_step = problems
    assert top.message == "unknown key 'colour' in the runtime block"
    assert top.hint == "allowed keys: version, inputs, workflow"
    assert in_input.message == "unknown key 'descr' in input 'a'"
    assert in_input.hint == "allowed keys: description, required"
    assert in_step.message == "unknown key 'argz' in step 1"
    assert in_step.hint == "allowed keys: provider, binary, args"
    # an unknown key is reported, then ignored: the step and the input are still there
    assert cap.steps[0].arg_texts == ["list", "."]
    assert "a" in cap.inputs


LOOKALIKE_TEXT = {
    "transport": ("the provider owns that decision", "remove it"),
    "steps": ("it is 'workflow'", "rename 'steps:' to 'workflow:'"),
    "command": ("retired command registry", "rewrite the step as 'provider:'"),
    "capability": ("there is no capability step", "Lineage"),
}


@pytest.mark.parametrize("key", sorted(LOOKALIKE_TEXT))
@pytest.mark.parametrize("place", ["top", "step", "input"])
def test_look_alike_keys_get_their_own_message_wherever_they_are(key: str, place: str) -> None:
    if place == "top":
        body = f"version: v1\n{key}: x\n" + ONE_STEP.split("\n", 1)[1]
        position = (7, 1)
    elif place == "step":
        body = f"version: v1\nworkflow:\n  - binary: echo\n    {key}: x\n    args: [a]\n"
        position = (9, 5)
    else:
        body = f"version: v1\ninputs:\n  a:\n    {key}: x\n" + ONE_STEP.split("\n", 1)[1]
        position = (9, 5)
    _, problems = check(body)
    problem = only(problems)
    message, hint = LOOKALIKE_TEXT[key]
    assert (problem.line, problem.column, problem.code) == (*position, "unknown-key")
    assert message in problem.message
    assert problem.hint is not None and hint in problem.hint


# -- version --------------------------------------------------------------------------------


def test_a_missing_version_is_reported_at_the_start_of_the_block() -> None:
    _, problems = check("workflow:\n  - binary: echo\n    args: [a]\n")
    problem = only(problems)
    assert (problem.line, problem.column, problem.code) == (FIRST, 1, "missing-key")
    assert problem.message == "missing 'version'"
    assert problem.hint == "add 'version: v1'"


@pytest.mark.parametrize("version", ["v2", "1", "V1", "v1.0"])
def test_an_unsupported_version_is_reported_at_its_value_and_kept_as_written(
    version: str,
) -> None:
    cap, problems = check(f"version: {version}\n" + ONE_STEP.split("\n", 1)[1])
    problem = only(problems)
    assert (problem.line, problem.column, problem.code) == (FIRST, 10, "unsupported-version")
    assert problem.message == f"unsupported version '{version}'"
    assert problem.hint == "supported versions: v1"
    assert cap.version == version


def test_a_version_that_is_not_a_single_value_is_the_wrong_type() -> None:
    _, problems = check("version: [v1]\n" + ONE_STEP.split("\n", 1)[1])
    problem = only(problems)
    assert (problem.line, problem.column, problem.code) == (FIRST, 10, "wrong-type")
    assert "'version' must be a single value, not a list" in problem.message


# -- inputs ---------------------------------------------------------------------------------


def test_input_problems_are_at_their_key_or_value() -> None:
    body = (
        "version: v1\n"
        "inputs:\n"
        "  1bad:\n"  # 8
        "    description: [a, b]\n"  # 9
        "    required: maybe\n"  # 10
        "  good:\n"
        "    required: yes\n"  # 12
        "  scalar: text\n"  # 13
        "workflow:\n  - binary: echo\n    args: [a]\n"
    )
    cap, problems = check(body)
    assert where(problems) == [
        (8, 3, "error", "bad-input-name"),
        (9, 18, "error", "wrong-type"),
        (10, 15, "error", "wrong-type"),
        (12, 15, "error", "wrong-type"),
        (13, 11, "error", "wrong-type"),
    ]
    assert problems[0].message == "'1bad' is not a valid input name"
    assert problems[1].message == "the description of '1bad' must be a single value, not a list"
    assert problems[2].message == "'required' of input '1bad' must be true or false, not 'maybe'"
    assert problems[3].message == "'required' of input 'good' must be true or false, not 'yes'"
    assert problems[4].message == "input 'scalar' must be a mapping with description and required"
    # every input named is declared, whatever is wrong with it: a reference to one is not
    # a second problem
    assert set(cap.inputs) == {"1bad", "good", "scalar"}


@pytest.mark.parametrize("name", ["a", "_a", "A_b-c9", "snake_case", "kebab-case"])
def test_valid_input_names(name: str) -> None:
    cap, problems = check(f"version: v1\ninputs:\n  {name}:\n" + ONE_STEP.split("\n", 1)[1])
    assert problems == []
    assert list(cap.inputs) == [name]


@pytest.mark.parametrize("name", ["9a", "-a", "a.b", "a b", "é"])
def test_invalid_input_names(name: str) -> None:
    _, problems = check(f"version: v1\ninputs:\n  '{name}':\n" + ONE_STEP.split("\n", 1)[1])
    assert [p.code for p in problems] == ["bad-input-name"]


def test_inputs_must_be_a_mapping() -> None:
    _, problems = check("version: v1\ninputs: [a, b]\n" + ONE_STEP.split("\n", 1)[1])
    problem = only(problems)
    assert (problem.line, problem.column, problem.code) == (7, 9, "wrong-type")
    assert problem.message == "'inputs' must be a mapping of input names, not a list"


# -- steps ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "code", "text"),
    [
        (
            "  - provider: files\n    binary: git\n    args: [status]\n",
            "provider-and-binary",
            "both",
        ),
        ("  - args: [status]\n", "no-provider-or-binary", "neither"),
        ("  - provider: files\n", "missing-key", "step 1 has no 'args'"),
    ],
)
def test_a_step_sets_exactly_one_of_provider_and_binary_and_has_args(
    step: str, code: str, text: str
) -> None:
    cap, problems = check("version: v1\nworkflow:\n" + step)
    problem = only(problems)
    assert (problem.line, problem.column, problem.code) == (8, 5, code)
    assert text in problem.message
    assert cap.steps == []


@pytest.mark.parametrize(
    ("workflow", "position", "code", "text"),
    [
        ("workflow: []\n", (7, 11), "empty-workflow", "'workflow' has no steps"),
        ("workflow: files\n", (7, 11), "wrong-type", "must be a list of steps, not a value"),
        ("workflow:\n  - files\n", (8, 5), "wrong-type", "step 1 must be a mapping"),
        (
            "workflow:\n  - provider: [a]\n    args: []\n",
            (8, 15),
            "wrong-type",
            "'provider' of step 1",
        ),
        (
            "workflow:\n  - binary: git\n    args: status\n",
            (9, 11),
            "wrong-type",
            "'args' of step 1 must be a list",
        ),
        ("inputs: {}\n", (FIRST, 1), "missing-key", "missing 'workflow'"),
    ],
)
def test_workflow_shapes(workflow: str, position: tuple[int, int], code: str, text: str) -> None:
    cap, problems = check("version: v1\n" + workflow)
    problem = only(problems)
    assert ((problem.line, problem.column), problem.code) == (position, code)
    assert text in problem.message
    assert cap.steps == []


def test_a_wrong_step_is_left_out_and_the_others_keep_their_numbers() -> None:
    body = (
        "version: v1\nworkflow:\n"
        "  - binary: echo\n    args: [a]\n"
        "  - binary: echo\n    args: {a: b}\n"
        "  - provider: files\n    binary: git\n    args: [c]\n"
        "  - binary: echo\n    args: [d]\n"
    )
    cap, problems = check(body)
    assert [p.code for p in problems] == ["wrong-type", "provider-and-binary"]
    assert [(s.index, s.arg_texts) for s in cap.steps] == [(1, ["a"]), (4, ["d"])]


def test_the_block_must_be_a_mapping() -> None:
    _, problems = check("- version: v1\n")
    problem = only(problems)
    assert (problem.line, problem.column, problem.code) == (FIRST, 1, "wrong-type")
    assert problem.message == "the runtime block must be a mapping of keys, not a list"


def test_an_empty_block_is_reported_at_its_fence() -> None:
    for body in ("", "# only a comment\n"):
        _, problems = check(body)
        problem = only(problems)
        assert (problem.line, problem.column, problem.code) == (5, 1, "empty-block")


# -- every problem, each at its position -------------------------------------------------


def test_every_problem_in_one_document_is_reported_at_its_position() -> None:
    body = (
        "version: v9\n"  # 6
        "steps: []\n"  # 7
        "inputs:\n"  # 8
        "  x y:\n"  # 9
        "    required: perhaps\n"  # 10
        "workflow:\n"  # 11
        "  - provider: files\n"  # 12
        "    transport: rest\n"  # 13
        "    args: [read, {k: v}]\n"  # 14
        "  - binary: git\n"  # 15
        "    provider: files\n"  # 16
        "    args: [status]\n"  # 17
        "  - command: run\n"  # 18
        "  - binary: echo\n"  # 19
        "    args: [fine]\n"  # 20
    )
    cap, problems = check(body)
    assert sorted(where(problems)) == [
        (6, 10, "error", "unsupported-version"),
        (7, 1, "error", "unknown-key"),
        (9, 3, "error", "bad-input-name"),
        (10, 15, "error", "wrong-type"),
        (13, 5, "error", "unknown-key"),
        (14, 18, "error", "wrong-type"),
        (15, 5, "error", "provider-and-binary"),
        (18, 5, "error", "unknown-key"),  # one problem: not also "no args", "neither"
    ]
    assert [(s.index, s.arg_texts) for s in cap.steps] == [(4, ["fine"])]


def test_yaml_problems_are_positioned_in_the_markdown_file() -> None:
    anchor = "version: v1\nworkflow:\n  - provider: &p files\n    args: [list]\n"
    problem = only(check(anchor)[1])
    assert (problem.line, problem.column, problem.code) == (8, 15, "yaml")
    duplicate = check("version: v1\nversion: v1\n" + ONE_STEP.split("\n", 1)[1])[1]
    problem = only(duplicate)
    assert (problem.line, problem.column, problem.code) == (7, 1, "duplicate-key")
    assert problem.message == "duplicate key 'version' (first on line 6)"


def test_columns_of_an_indented_block_are_columns_of_the_markdown_file() -> None:
    text = (
        "# X\n\n"
        "  ```runtime\n"  # 3
        "  version: v1\n"
        "  workflow:\n"
        "    - provider: files\n"
        "      bogus: 1\n"  # 7
        "      args: [list, .]\n"  # 8
        "  ```\n"
    )
    cap, problems = check_capability(parse_document(text.encode(), "cap.md"))
    assert where(problems) == [(7, 7, "error", "unknown-key")]
    assert [(a.line, a.column) for a in cap.steps[0].args] == [(8, 14), (8, 20)]


def test_crlf_line_ends_keep_the_same_positions() -> None:
    body = "version: v1\nworkflow:\n  - provider: files\n    bogus: 1\n    args: [list, .]\n"
    text = capability(body).replace("\n", "\r\n")
    _, problems = check_capability(parse_document(text.encode(), "cap.md"))
    assert where(problems) == [(9, 5, "error", "unknown-key")]


# -- the frontmatter ---------------------------------------------------------------------


def fm_check(frontmatter: str) -> tuple[Capability, list[Problem]]:
    return check(ONE_STEP, frontmatter)


def test_the_frontmatter_is_open_and_its_known_fields_are_kept() -> None:
    cap, problems = fm_check(
        "name: audit-repos\n"
        "description: Audit things\n"
        "x-custom: [anything, {goes: here}]\n"
        "metadata:\n"
        "  vendor:\n"
        "    key: value\n"
    )
    assert problems == []
    assert cap.frontmatter["name"] == "audit-repos"
    assert cap.frontmatter["description"] == "Audit things"
    assert cap.frontmatter["x-custom"] == ["anything", {"goes": "here"}]


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ("name: Bad_Name\n", (2, 7, "error", "bad-name")),
        ("name: " + "a" * 65 + "\n", (2, 7, "error", "bad-name")),
        ("name: a--b\n", (2, 7, "error", "bad-name")),
        ("description: [a, b]\n", (2, 14, "error", "wrong-type")),
        ("metadata: 5\n", (2, 11, "error", "wrong-type")),
        ("metadata:\n  vendor: 5\n", (3, 11, "error", "wrong-type")),
        ("metadata:\n  runtime:\n    other: 1\n", (4, 5, "error", "unknown-key")),
    ],
)
def test_frontmatter_fields_are_checked_at_their_position(
    frontmatter: str, expected: tuple[int, int, str, str]
) -> None:
    _, problems = fm_check(frontmatter)
    assert where(problems) == [expected]


# -- metadata.mda.requires ----------------------------------------------------------------

REQUIRES = "metadata:\n  mda:\n    requires:\n"  # requires' keys are on line 5 and after


def test_standard_requires_are_kept_with_their_lines() -> None:
    cap, problems = fm_check(
        REQUIRES + '      runtime: ["python>=3.11", "node >= 20", bun]\n'
        "      network: none\n"
        '      tools: ["Read", "Bash(jq:*)"]\n'
        "      packages: [jq]\n"
        "      model: {min-context: 100000, vision: TRUE, tools-required: false}\n"
        "      cost-hints: {tokens-per-call: 5000, seconds-per-call: 3, paid-apis: [openai]}\n"
    )
    assert problems == []
    assert cap.requires["runtime"] == ["python>=3.11", "node >= 20", "bun"]
    assert cap.requires["network"] == "none"
    assert cap.requires_lines == {
        "runtime": 5,
        "network": 6,
        "tools": 7,
        "packages": 8,
        "model": 9,
        "cost-hints": 10,
    }


@pytest.mark.parametrize("network", ["none", "local", "public", "[api.github.com, '*.x.org']"])
def test_network_is_a_level_or_a_list_of_hosts(network: str) -> None:
    _, problems = fm_check(REQUIRES + f"      network: {network}\n")
    assert problems == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("runtime: python>=3.11", (5, 16, "error", "requires-shape")),
        ('runtime: ["python=>3.11"]', (5, 17, "warning", "requires-runtime-form")),
        ("runtime: [[python]]", (5, 17, "error", "requires-shape")),
        ("network: internet", (5, 16, "error", "requires-shape")),
        ("network: {a: b}", (5, 16, "error", "requires-shape")),
        ("tools: Read", (5, 14, "error", "requires-shape")),
        ("model: {min-context: lots}", (5, 28, "error", "requires-shape")),
        ("model: {min-context: -1}", (5, 28, "error", "requires-shape")),
        ("model: {vision: yes}", (5, 23, "error", "requires-shape")),
        ("model: {colour: red}", (5, 15, "warning", "requires-unknown-field")),
        ("cost-hints: 3", (5, 19, "error", "requires-shape")),
        ("cost-hints: {paid-apis: openai}", (5, 31, "error", "requires-shape")),
        ("Network: none", (5, 7, "error", "requires-key")),
        ("gpu: {vram-gb: 16}", (5, 7, "warning", "requires-unknown-key")),
    ],
)
def test_requires_shapes(line: str, expected: tuple[int, int, str, str]) -> None:
    _, problems = fm_check(REQUIRES + f"      {line}\n")
    assert where(problems) == [expected]


def test_requires_must_be_a_mapping() -> None:
    _, problems = fm_check("metadata:\n  mda:\n    requires: [a]\n")
    problem = only(problems)
    assert (problem.line, problem.column, problem.code) == (4, 15, "requires-shape")
    assert problem.message == "'metadata.mda.requires' must be a mapping of keys"


def test_an_unknown_requires_key_is_kept_but_only_warned_about() -> None:
    cap, problems = fm_check(REQUIRES + "      gpu: {vram-gb: 16}\n")
    assert [p.severity for p in problems] == ["warning"]
    assert cap.requires["gpu"] == {"vram-gb": "16"}


# -- metadata.runtime.requirements ----------------------------------------------------------

REQUIREMENTS = "metadata:\n  runtime:\n    requirements:\n"  # entries start on line 5


def requirement(*lines: str) -> str:
    return "      - " + "\n        ".join(lines) + "\n"


def test_typed_requirements_of_several_types_are_built() -> None:
    cap, problems = fm_check(
        REQUIREMENTS
        + requirement("id: repo", "type: localPath", "target: {path: ., access: [read, write]}")
        + requirement("id: gh", "type: executable", "target: {name: gh, version: '>=2'}")
        + requirement(
            "id: token",
            "type: credential",
            "target: {env: GITHUB_TOKEN}",
            "freshness: {maxAgeSeconds: 60}",
            "optional: true",
        )
        + requirement("id: notes", "type: contextSource", "target: {path: notes.md}")
        + requirement(
            "id: policy", "type: objectRef", "target: {kind: policy, name: base, generation: 2}"
        )
        + requirement(
            "id: found",
            "type: executable",
            "target: {name: jq}",
            "origin: inferred",
            "reviewStatus: accepted",
        )
    )
    assert problems == []
    by_id = {r["id"]: r for r in cap.typed_requirements}
    assert list(by_id) == ["repo", "gh", "token", "notes", "policy", "found"]
    assert by_id["repo"]["target"] == {"path": ".", "access": ["read", "write"]}
    assert by_id["repo"]["line"] == 5
    assert (by_id["token"]["maxAgeSeconds"], by_id["token"]["optional"]) == (60, True)
    assert (by_id["gh"]["maxAgeSeconds"], by_id["gh"]["optional"]) == (None, False)
    assert by_id["gh"]["origin"] == "declared"
    assert (by_id["found"]["origin"], by_id["found"]["reviewStatus"]) == ("inferred", "accepted")


@pytest.mark.parametrize(
    ("rtype", "target"),
    [
        ("credential", "{env: TOKEN}"),
        ("mcpServer", "{serverUrl: 'https://mcp.example'}"),
        ("mcpTool", "{serverUrl: 'http://mcp.example', name: search}"),
        ("mcpResource", "{serverUrl: 'https://mcp.example', uri: 'file:///x'}"),
        ("runnerCapability", "{name: code-review}"),
        ("contextSource", "{url: 'https://example.com/notes.md'}"),
    ],
)
def test_dynamic_requirements_need_freshness(rtype: str, target: str) -> None:
    entry = ("id: r", f"type: {rtype}", f"target: {target}")
    _, problems = fm_check(REQUIREMENTS + requirement(*entry))
    problem = only(problems)
    assert (problem.line, problem.column, problem.code) == (6, 15, "requirement-freshness")
    assert problem.message == f"requirement 1 ({rtype}) needs freshness.maxAgeSeconds"
    cap, fresh = fm_check(REQUIREMENTS + requirement(*entry, "freshness: {maxAgeSeconds: 3600}"))
    assert fresh == []
    assert cap.typed_requirements[0]["maxAgeSeconds"] == 3600


@pytest.mark.parametrize(
    ("rtype", "target"),
    [
        ("localPath", "{path: ., access: [read]}"),
        ("executable", "{name: git}"),
        ("objectRef", "{kind: capability, name: other}"),
        ("contextSource", "{path: notes.md}"),
    ],
)
def test_static_requirements_need_no_freshness(rtype: str, target: str) -> None:
    _, problems = fm_check(
        REQUIREMENTS + requirement("id: r", f"type: {rtype}", f"target: {target}")
    )
    assert problems == []


@pytest.mark.parametrize(
    ("target", "has"),
    [("{path: a.md, url: 'https://x.org'}", "both"), ("{}", "neither")],
)
def test_a_context_source_has_exactly_one_of_path_and_url(target: str, has: str) -> None:
    cap, problems = fm_check(
        REQUIREMENTS
        + requirement(
            "id: ctx", "type: contextSource", f"target: {target}", "freshness: {maxAgeSeconds: 5}"
        )
    )
    problem = only(problems)
    assert (problem.line, problem.column, problem.code) == (7, 17, "requirement-target")
    assert problem.message == (
        f"a contextSource target has exactly one of path or url (requirement 1 has {has})"
    )
    assert cap.typed_requirements == []


@pytest.mark.parametrize(
    ("entry", "expected", "text"),
    [
        (("id: Bad", "type: executable", "target: {name: x}"), (5, 13, "requirement-id"), "'Bad'"),
        (("id: r", "type: nope", "target: {}"), (6, 15, "requirement-type"), "'nope'"),
        (("id: r", "type: executable"), (5, 9, "requirement-missing"), "has no 'target'"),
        (
            ("id: r", "type: executable", "target: {name: x, path: y}"),
            (7, 27, "requirement-target"),
            "'path' does not belong to a executable target",
        ),
        (
            ("id: r", "type: localPath", "target: {path: ., access: [read, read]}"),
            (7, 42, "requirement-target"),
            "'read' is repeated in access",
        ),
        (
            ("id: r", "type: localPath", "target: {path: ., access: []}"),
            (7, 35, "requirement-target"),
            "must be a non-empty list",
        ),
        (
            ("id: r", "type: credential", "target: {env: lower}", "freshness: {maxAgeSeconds: 1}"),
            (7, 23, "requirement-target"),
            "'lower' is not an environment variable name",
        ),
        (
            (
                "id: r",
                "type: mcpServer",
                "target: {serverUrl: 'ftp://x'}",
                "freshness: {maxAgeSeconds: 1}",
            ),
            (7, 29, "requirement-target"),
            "serverUrl must start with http:// or https://",
        ),
        (
            ("id: r", "type: credential", "target: {env: X}", "freshness: {maxAgeSeconds: 0}"),
            (8, 36, "requirement-freshness"),
            "maxAgeSeconds must be an integer of at least 1",
        ),
        (
            ("id: r", "type: executable", "target: {name: x}", "origin: inferred"),
            (8, 17, "requirement-review"),
            "origin: inferred but no reviewStatus",
        ),
        (
            ("id: r", "type: objectRef", "target: {kind: user, name: x}"),
            (7, 24, "requirement-target"),
            "objectRef kind 'user'",
        ),
    ],
)
def test_requirement_problems_are_at_their_position(
    entry: tuple[str, ...], expected: tuple[int, int, str], text: str
) -> None:
    cap, problems = fm_check(REQUIREMENTS + requirement(*entry))
    problem = only(problems)
    assert (problem.line, problem.column, problem.code) == expected
    assert text in problem.message
    assert problem.severity == "error"
    if "does not belong" not in text:  # an unknown key is reported, then ignored
        assert cap.typed_requirements == []


def test_a_wrong_requirement_is_left_out_and_every_problem_is_reported() -> None:
    cap, problems = fm_check(
        REQUIREMENTS
        + requirement("id: ok", "type: executable", "target: {name: git}")
        + requirement("id: fresh", "type: credential", "target: {env: TOKEN}")
        + requirement("id: Bad", "type: nope", "target: {}")
    )
    assert [p.code for p in problems] == [
        "requirement-freshness",
        "requirement-id",
        "requirement-type",
    ]
    assert [r["id"] for r in cap.typed_requirements] == ["ok"]
