"""`runtime capability validate` through the real entry point: the closed grammar, positions, folders, JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, capability, check_schema, write

SEED_EXAMPLES = {
    # the "args are the CLI, sequenced" table, as one workflow
    "cli-table": """version: v1
workflow:
  - provider: files
    args: [read, ./a.txt]
  - provider: files
    args: [write, ./a.txt, hello]
  - provider: github
    args: [repo, view, cli/cli]
  - provider: github
    args: [repo, list, acme, per_page=100]
  - binary: gh
    args: [release, upload, v1, ./bin]
""",
    "organization-input": """version: v1

inputs:
  organization:
    description: GitHub organization to audit
    required: true

workflow:
  - provider: github
    args: [repo, list, "${organization}"]
""",
    "substitution": """version: v1

inputs:
  path:
    description: Where to write
    required: true

workflow:
  - provider: files
    args: [write, "${path}", "hello"]
""",
    "tool-flags": """version: v1
workflow:
  - provider: github
    args: [pr, list, --json, "number,title,state"]
""",
    "worked-example": """version: v1

inputs:
  organization:
    description: GitHub organization to audit
    required: true
  repository:
    description: Repository to inspect, as <owner>/<repo>
    required: true

workflow:
  - provider: github
    args: [repo, list, "${organization}", per_page=100]

  - provider: github
    args: [repo, summary, "${repository}"]

  - provider: github
    args: [api, GET, "/repos/${repository}/community/profile"]
""",
    "literal-block": """version: v1
workflow:
  - provider: files
    args:
      - write
      - ./README.md
      - |
        # Title

        Two lines, kept as typed: -5 100 true null
""",
}


@pytest.mark.parametrize("name", sorted(SEED_EXAMPLES))
def test_seed_examples_are_valid(cli, work: Path, name: str) -> None:
    write(work / f"{name}.md", capability(SEED_EXAMPLES[name]))
    result = cli("capability", "validate", f"{name}.md")
    assert result.code == 0, result.stdout + result.stderr
    assert "1 checked: 1 valid, 0 invalid (0 errors, 0 warnings)" in result.stdout


def test_bundled_examples_are_valid(cli) -> None:
    result = cli("capability", "validate", str(EXAMPLES))
    assert result.code == 0, result.stdout
    assert ", 0 invalid" in result.stdout


# Each case: runtime block body, then (line, column, code, text in message) of the expected
# error. Lines are of the Markdown file: the block's first line is line 6 (see capability()).
GRAMMAR_ERRORS = [
    (
        "workflow:\n  - provider: files\n    args: [list, .]\n",
        (6, 1, "missing-key", "missing 'version'"),
    ),
    (
        "version: v2\nworkflow:\n  - provider: files\n    args: [list, .]\n",
        (6, 10, "unsupported-version", "v2"),
    ),
    ("version: v1\n", (6, 1, "missing-key", "missing 'workflow'")),
    ("version: v1\nworkflow: []\n", (7, 11, "empty-workflow", "no steps")),
    ("version: v1\nworkflow: files\n", (7, 11, "wrong-type", "must be a list of steps")),
    ("version: v1\nworkflow:\n  - files\n", (8, 5, "wrong-type", "step 1 must be a mapping")),
    ("version: v1\nsteps:\n  - provider: files\n", (7, 1, "unknown-key", "it is 'workflow'")),
    (
        "version: v1\nworkflow:\n  - provider: files\n    transport: rest\n    args: [list, .]\n",
        (9, 5, "unknown-key", "the provider owns that decision"),
    ),
    (
        "version: v1\nworkflow:\n  - command: run\n    provider: files\n    args: [list, .]\n",
        (8, 5, "unknown-key", "retired command registry"),
    ),
    (
        "version: v1\nworkflow:\n  - capability: other\n",
        (8, 5, "unknown-key", "there is no capability step"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: files\n    argz: [list, .]\n    args: [list, .]\n",
        (9, 5, "unknown-key", "unknown key 'argz' in step 1"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: files\n    binary: git\n    args: [status]\n",
        (8, 5, "provider-and-binary", "both"),
    ),
    ("version: v1\nworkflow:\n  - args: [status]\n", (8, 5, "no-provider-or-binary", "neither")),
    ("version: v1\nworkflow:\n  - provider: files\n", (8, 5, "missing-key", "has no 'args'")),
    (
        "version: v1\nworkflow:\n  - provider: files\n    args: list\n",
        (9, 11, "wrong-type", "'args' of step 1 must be a list"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: files\n    args: [list, {a: b}]\n",
        (9, 18, "wrong-type", "single value"),
    ),
    (
        "version: v1\ninputs: [a]\nworkflow:\n  - provider: files\n    args: [list, .]\n",
        (7, 9, "wrong-type", "'inputs'"),
    ),
    (
        "version: v1\ninputs:\n  a:\n    descr: x\nworkflow:\n  - provider: files\n    args: [list, .]\n",
        (9, 5, "unknown-key", "unknown key 'descr' in input 'a'"),
    ),
    (
        "version: v1\ninputs:\n  a:\n    required: yes\nworkflow:\n  - provider: files\n    args: [list, .]\n",
        (9, 15, "wrong-type", "true or false"),
    ),
    (
        "version: v1\nversion: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n",
        (7, 1, "duplicate-key", "duplicate key 'version'"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: files\n    args: !!seq [list, .]\n",
        (9, 11, "yaml", "tags"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: &p files\n    args: [list, .]\n",
        (8, 15, "yaml", "anchors"),
    ),
    ("version: v1\nworkflow:\n  - provider: *p\n    args: [list, .]\n", (8, 15, "yaml", "aliases")),
    (
        "version: v1\nworkflow:\n  - provider: files\n    args: [list, .\n",
        (10, 1, "yaml", "YAML syntax error"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: nope\n    args: [x]\n",
        (8, 5, "unknown-provider", "'nope' is not a registered provider"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: files\n    args: [copy, a, b]\n",
        (9, 12, "unknown-operation", "not an operation of 'files'"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: files\n    args: [write, ./a.txt]\n",
        (9, 12, "missing-argument", "CONTENT"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: files\n    args: [read, a, b]\n",
        (9, 21, "extra-argument", "unexpected argument 'b'"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: github\n    args: [repo, list, acme, per_pag=1]\n",
        (9, 30, "unknown-option", "unknown option 'per_pag'"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: github\n    args: [repo, list, acme, limit=2, limit=4]\n",
        (9, 39, "duplicate-option", "option 'limit' is given twice for 'repo list'"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: github\n    args: [repo, view, a/b/c]\n",
        (9, 24, "bad-value", "'a/b/c' is not OWNER/REPO"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: github\n    args: [repo, list, a/b]\n",
        (9, 24, "bad-value", "'a/b' is not an organization"),
    ),
    (
        "version: v1\nworkflow:\n  - provider: github\n    args: [file, put, o/r, a.md, content=x]\n",
        (9, 12, "missing-option", "message="),
    ),
    (
        "version: v1\nworkflow:\n  - binary: sort\n    args: [x]\n",
        (8, 5, "binary-not-allowed", "not in allowed_binaries"),
    ),
    (
        "version: v1\nworkflow:\n  - binary: curl\n    args: [x]\n",
        (8, 5, "binary-denied", "is denied by the policy"),
    ),
    (
        "version: v1\nworkflow:\n  - binary: runtime\n    args: [capability, execute, x]\n",
        (8, 5, "binary-runtime", "never a valid binary"),
    ),
    (
        "version: v1\nworkflow:\n  - binary: /usr/bin/git\n    args: [status]\n",
        (8, 5, "binary-path", "must be a name"),
    ),
]


@pytest.mark.parametrize(
    ("body", "expected"),
    GRAMMAR_ERRORS,
    ids=[e[1][2] + "-" + str(i) for i, e in enumerate(GRAMMAR_ERRORS)],
)
def test_each_grammar_error_has_its_exact_position(
    cli, work: Path, body: str, expected: tuple[int, int, str, str]
) -> None:
    write(work / "cap.md", capability(body))
    result = cli("--output", "json", "capability", "validate", "cap.md")
    assert result.code == 2
    doc = result.json()
    check_schema(doc, "validate")
    problems = doc["capabilities"][0]["problems"]
    line, column, code, text = expected
    matching = [p for p in problems if p["code"] == code and text in p["message"]]
    assert matching, problems
    assert (matching[0]["line"], matching[0]["column"]) == (line, column), matching[0]
    assert matching[0]["severity"] == "error"


def test_text_output_has_file_line_column_caret_and_hint(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n    transport: rest\n    args: [list, .]\n"
        ),
    )
    result = cli("capability", "validate", "cap.md")
    assert result.code == 2
    lines = result.stdout.splitlines()
    assert (
        lines[0] == "cap.md:9:5: error: 'transport' is not a key: the provider owns that decision"
    )
    assert lines[1] == "  9 |     transport: rest"
    assert lines[2] == "    |     ^"
    assert lines[3].startswith("  hint: remove it")
    assert lines[-1] == "1 checked: 0 valid, 1 invalid (1 error, 0 warnings)"


def test_a_misspelled_option_gets_a_did_you_mean(cli, work: Path) -> None:
    body = "version: v1\nworkflow:\n  - provider: github\n    args: [repo, list, acme, per_pag=1]\n"
    write(work / "cap.md", capability(body))
    validated = cli("--output", "json", "capability", "validate", "cap.md")
    hints = [p["hint"] for p in validated.json()["capabilities"][0]["problems"]]
    assert hints == [
        "did you mean 'per_page'? known options: type, sort, direction, per_page, limit, json"
    ]
    # typed as a command, and an option like none of them
    typed = cli("github", "repo", "list", "acme", "per_pag=1")
    assert typed.code == 2
    assert "hint: did you mean 'per_page'? known options:" in typed.stderr
    unlike = cli("github", "repo", "list", "acme", "colour=red")
    assert unlike.code == 2
    assert "did you mean" not in unlike.stderr
    assert "hint: known options: type, sort, direction, per_page, limit" in unlike.stderr


def test_a_typed_operation_is_checked_as_a_capabilitys_step_is(cli) -> None:
    # refused as it is typed (exit 2), before a credential is looked for or a request sent
    for args, message, hint in (
        (("repo", "view", "a/b/c"), "'a/b/c' is not OWNER/REPO", "as owner/name"),
        (("repo", "view", "acme"), "'acme' is not OWNER/REPO", "as owner/name"),
        (("repo", "list", "a/b"), "'a/b' is not an organization", "the organization's login"),
    ):
        result = cli("-o", "json", "github", *args, extra_env={"RUNTIME_GITHUB_TOKEN": ""})
        assert result.code == 2, result.stdout + result.stderr
        error = result.json()["error"]
        assert (error["code"], error["message"]) == ("bad-value", message)  # as in a capability
        assert hint in error["hint"]


def test_every_problem_is_reported_sorted(cli, work: Path) -> None:
    body = (
        "version: v3\n"
        "workflow:\n"
        "  - provider: files\n"
        "    transport: rest\n"
        "    args: [read]\n"
        "  - binary: curl\n"
        "    args: [x]\n"
        "  - provider: files\n"
        '    args: [read, "${nope}"]\n'
    )
    write(work / "cap.md", capability(body))
    result = cli("--output", "json", "capability", "validate", "cap.md")
    problems = result.json()["capabilities"][0]["problems"]
    found = [(p["line"], p["code"]) for p in problems]
    assert found == [
        (6, "unsupported-version"),
        (9, "unknown-key"),
        (10, "missing-argument"),
        (11, "binary-denied"),
        (14, "undeclared-input"),
    ]
    assert problems[-1]["severity"] == "warning"


def test_scalars_stay_text_and_actions_expressions_draw_no_warning(cli, work: Path) -> None:
    body = (
        "version: v1\n"
        "workflow:\n"
        "  - provider: files\n"
        '    args: [write, ./w.yml, "ref: ${{ github.ref }} -5 100 true null"]\n'
        "  - binary: echo\n"
        "    args: [-5, 100, true, null, 0x10, 1e3]\n"
    )
    write(work / "cap.md", capability(body))
    result = cli("--output", "json", "capability", "validate", "cap.md")
    assert result.code == 0
    assert result.json()["capabilities"][0]["problems"] == []
    shown = cli("--output", "json", "capability", "show", "cap.md").json()
    assert shown["steps"][1]["args"] == ["-5", "100", "true", "null", "0x10", "1e3"]


def test_undeclared_reference_is_a_warning_and_exit_zero(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability('version: v1\nworkflow:\n  - provider: files\n    args: [read, "${nope}"]\n'),
    )
    result = cli("capability", "validate", "cap.md")
    assert result.code == 0
    assert "cap.md:9:18: warning: '${nope}' names no declared input" in result.stdout


# -- the document: fences and frontmatter ---------------------------------------


def test_no_runtime_block_is_an_error(cli, work: Path) -> None:
    write(work / "cap.md", "# Nothing\n\n```bash\necho hi\n```\n")
    result = cli("capability", "validate", "cap.md")
    assert result.code == 2
    assert "cap.md:1:1: error: no runtime block" in result.stdout


def test_two_runtime_blocks_name_the_lines(cli, work: Path) -> None:
    block = "```runtime\nversion: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n```\n"
    write(work / "cap.md", "# Two\n\n" + block + "\ntext\n\n" + block)
    result = cli("capability", "validate", "cap.md")
    assert result.code == 2
    assert "cap.md:12:1: error: more than one runtime block (at lines 3, 12)" in result.stdout


def test_runtime_example_nested_in_a_longer_fence_is_not_the_block(cli, work: Path) -> None:
    text = (
        "# Nested\n\n````markdown\n```runtime\nversion: v9\n```\n````\n\n"
        "~~~runtime\nversion: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n~~~\n"
    )
    write(work / "cap.md", text)
    result = cli("--output", "json", "capability", "validate", "cap.md")
    assert result.code == 0, result.stdout


def test_info_string_must_be_exactly_runtime(cli, work: Path) -> None:
    write(work / "cap.md", "# X\n\n```runtime extra\nversion: v1\n```\n")
    result = cli("capability", "validate", "cap.md")
    assert "no runtime block" in result.stdout


def test_unterminated_runtime_fence(cli, work: Path) -> None:
    write(
        work / "cap.md",
        "# X\n\n```runtime\nversion: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n",
    )
    result = cli("capability", "validate", "cap.md")
    assert result.code == 2
    assert "cap.md:3:1: error: the runtime block's fence is never closed" in result.stdout


def test_indented_block_columns_map_to_the_markdown_file(cli, work: Path) -> None:
    text = "# X\n\n  ```runtime\n  version: v1\n  workflow:\n    - provider: files\n      bogus: 1\n      args: [list, .]\n  ```\n"
    write(work / "cap.md", text)
    problems = cli("--output", "json", "capability", "validate", "cap.md").json()["capabilities"][
        0
    ]["problems"]
    assert [(p["line"], p["column"], p["code"]) for p in problems] == [(7, 7, "unknown-key")]


FRONTMATTER_CASES = [
    ("name: Bad_Name\n", (2, 7, "error", "bad-name")),
    ("description: [a, b]\n", (2, 14, "error", "wrong-type")),
    ("metadata:\n  mda:\n    requires:\n      Network: none\n", (5, 7, "error", "requires-key")),
    (
        "metadata:\n  mda:\n    requires:\n      gpu: {vram-gb: 16}\n",
        (5, 7, "warning", "requires-unknown-key"),
    ),
    (
        "metadata:\n  mda:\n    requires:\n      runtime: python>=3.11\n",
        (5, 16, "error", "requires-shape"),
    ),
    (
        'metadata:\n  mda:\n    requires:\n      runtime: ["python=>3.11"]\n',
        (5, 17, "warning", "requires-runtime-form"),  # MDA asks only for a string
    ),
    (
        "metadata:\n  mda:\n    requires:\n      network: internet\n",
        (5, 16, "error", "requires-shape"),
    ),
    (
        "metadata:\n  mda:\n    requires:\n      model: {min-context: lots}\n",
        (5, 28, "error", "requires-shape"),
    ),
    (
        "metadata:\n  mda:\n    requires:\n      cost-hints: {paid-apis: openai}\n",
        (5, 31, "error", "requires-shape"),
    ),
    (
        "metadata:\n  mda:\n    requires:\n      model: {colour: red}\n",
        (5, 15, "warning", "requires-unknown-field"),
    ),
    ("metadata: 5\n", (2, 11, "error", "wrong-type")),
]


@pytest.mark.parametrize(
    ("fm", "expected"),
    FRONTMATTER_CASES,
    ids=[c[1][3] + str(i) for i, c in enumerate(FRONTMATTER_CASES)],
)
def test_frontmatter_known_fields_are_checked(
    cli, work: Path, fm: str, expected: tuple[int, int, str, str]
) -> None:
    write(
        work / "cap.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n", fm),
    )
    doc = cli("--output", "json", "capability", "validate", "cap.md").json()
    problems = doc["capabilities"][0]["problems"]
    line, column, severity, code = expected
    assert [(p["line"], p["column"], p["severity"], p["code"]) for p in problems] == [
        (line, column, severity, code)
    ]
    assert doc["exit_code"] == (2 if severity == "error" else 0)


def test_frontmatter_is_open_and_standard_requires_validate(cli, work: Path) -> None:
    fm = (
        "name: audit\n"
        "description: Audit things\n"
        "x-custom: anything\n"
        "metadata:\n"
        "  mda:\n"
        "    requires:\n"
        '      runtime: ["python>=3.11", "node>=20", "bun"]\n'
        '      tools: ["Read", "Bash(jq:*)"]\n'
        '      network: ["api.github.com", "*.example.com"]\n'
        '      packages: ["jq"]\n'
        "      model: { min-context: 100000, vision: true, tools-required: false }\n"
        "      cost-hints: { tokens-per-call: 5000, paid-apis: [openai] }\n"
        "  claude-code:\n"
        '    allowed-tools: "Read Bash(jq:*)"\n'
    )
    write(
        work / "cap.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n", fm),
    )
    result = cli("--output", "json", "capability", "validate", "cap.md")
    assert result.code == 0
    assert result.json()["capabilities"][0]["problems"] == []


def test_unterminated_frontmatter(cli, work: Path) -> None:
    write(work / "cap.md", "---\nname: x\n# Title\n")
    result = cli("capability", "validate", "cap.md")
    assert "cap.md:1:1: error: the frontmatter opened on line 1 is never closed" in result.stdout


def test_refusals_of_unreadable_documents(cli, work: Path) -> None:
    (work / "latin1.md").write_bytes("# caf\xe9\n".encode("latin-1"))
    (work / "nul.md").write_bytes(b"# a\n\x00\n")
    (work / "big.md").write_bytes(b"#" * (1024 * 1024 + 1))
    doc = cli("--output", "json", "capability", "validate", "latin1.md", "nul.md", "big.md").json()
    codes = {
        c["path"]: [(p["line"], p["column"], p["code"]) for p in c["problems"]]
        for c in doc["capabilities"]
    }
    assert codes == {
        "latin1.md": [(1, 6, "not-utf8")],
        "nul.md": [(2, 1, "nul-byte")],
        "big.md": [(1, 1, "too-large")],
    }


def test_bom_and_crlf_are_accepted(cli, work: Path) -> None:
    text = capability("version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n")
    (work / "cap.md").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    assert cli("capability", "validate", "cap.md").code == 0


# -- folders, names, JSON ------------------------------------------------------------


def test_folders_recursively_skip_markdown_without_a_block(cli, work: Path) -> None:
    good = capability("version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n")
    write(work / "caps" / "a.md", good)
    write(work / "caps" / "nested" / "b.md", good)
    write(work / "caps" / "notes.md", "# Just notes\n")
    write(work / "caps" / "nested" / "bad.md", capability("version: v1\nworkflow: []\n"))
    result = cli("capability", "validate", "caps")
    assert result.code == 2
    assert result.stdout.splitlines()[-1] == (
        "3 checked: 2 valid, 1 invalid (1 error, 0 warnings); 1 Markdown file without a runtime block skipped"
    )
    doc = cli("--output", "json", "capability", "validate", "caps").json()
    check_schema(doc, "validate")
    assert doc["skipped"] == ["caps/notes.md"]
    assert [c["path"] for c in doc["capabilities"]] == [
        "caps/a.md",
        "caps/nested/b.md",
        "caps/nested/bad.md",
    ]


def test_explicit_file_without_a_block_is_an_error_and_several_args_work(cli, work: Path) -> None:
    write(work / "notes.md", "# Just notes\n")
    write(
        work / "ok.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"),
    )
    result = cli("capability", "validate", "ok.md", "notes.md")
    assert result.code == 2
    assert "notes.md:1:1: error: no runtime block" in result.stdout
    assert "2 checked: 1 valid, 1 invalid" in result.stdout


def test_name_resolution_through_sources(cli, work: Path, home: Path) -> None:
    body = "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"
    write(work / "capabilities" / "local-cap.md", capability(body, title="Local"))
    write(work / "capabilities" / "github" / "repo-health.md", capability(body, title="Health"))
    shared = work.parent / "shared-caps"
    write(shared / "local-cap.md", capability(body, title="Shared"))
    write(shared / "only-shared.md", capability(body, title="Only shared"))
    write(home / "config.yaml", f"capability_sources: [{shared}]\n")
    assert cli("capability", "validate", "only-shared").code == 0
    assert cli("capability", "validate", "github/repo-health").code == 0
    shown = cli("--output", "json", "capability", "show", "local-cap").json()
    assert shown["title"] == "Shared"  # config sources come first
    listing = cli("--output", "json", "capability", "list").json()
    names = [(c["name"], c["shadowed_by"] is not None) for c in listing["capabilities"]]
    assert ("local-cap", False) in names and ("local-cap", True) in names
    missing = cli("capability", "validate", "no-such-cap")
    assert missing.code == 2
    assert "no capability named 'no-such-cap'" in missing.stderr
    assert "capabilities" in missing.stderr


def test_config_typo_is_a_positioned_error(cli, work: Path, home: Path) -> None:
    write(home / "config.yaml", "capability_source: [x]\n")
    write(
        work / "ok.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"),
    )
    result = cli("capability", "validate", "ok.md")
    assert result.code == 2
    assert "config.yaml:1:1: error: unknown config key 'capability_source'" in result.stderr


def test_show_and_dependents(cli, work: Path) -> None:
    body = "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n  - provider: github\n    args: [repo, summary, a/b]\n"
    text = (
        "# Big\n\n## Lineage\n\nRe-derives:\n- `github/repo-health` — steps 1–2\n- `files/scaffold` — step 2\n\n```runtime\n"
        + body
        + "```\n"
    )
    write(work / "capabilities" / "big.md", text)
    write(work / "capabilities" / "other.md", capability(body))
    shown = cli("--output", "json", "capability", "show", "big").json()
    assert shown["lineage"] == [
        {"name": "github/repo-health", "steps": [[1, 2]], "line": 6},
        {"name": "files/scaffold", "steps": [[2, 2]], "line": 7},
    ]
    assert shown["steps"][1]["operation"] == "repo summary"
    assert shown["steps"][1]["transport"] == "graphql"
    assert len(shown["sha256"]) == 64
    deps = cli("--output", "json", "capability", "dependents", "github/repo-health").json()
    assert [d["name"] for d in deps["dependents"]] == ["big"]
    text_out = cli("capability", "dependents", "github/repo-health").stdout
    assert "big" in text_out and "steps 1-2" in text_out


INVALID_TO_SHOW = {
    "empty": "",
    "unknown version and provider": "# T\n\n```runtime\nversion: v9\nworkflow:\n"
    "  - provider: nope\n    args: [x]\n```\n",
    "unreadable": "# T\n\n```runtime\nversion: v1\nworkflow: []\n```\n",
}


@pytest.mark.parametrize("case", INVALID_TO_SHOW)
def test_show_of_an_invalid_capability_exits_2_as_validate_does(
    cli, work: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    write(work / "cap.md", INVALID_TO_SHOW[case])
    if case == "unreadable":
        import errno
        import os

        import runtime.document.loader as loader

        def denied(path: Path, limit: int | None = None, **_: object) -> bytes:
            # mode 000 stops no root process, and the tests may run as root
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

        monkeypatch.setattr(loader, "read_file", denied)
    assert cli("capability", "validate", "cap.md").code == 2
    shown = cli("capability", "show", "cap.md")
    assert shown.code == 2, shown.stdout + shown.stderr
    assert "cap.md:" in shown.stdout  # the problems, with what could be read
    assert "cap.md is not a valid capability" in shown.stderr
    assert "hint: run `runtime capability validate cap.md`" in shown.stderr
    doc = cli("--output", "json", "capability", "show", "cap.md")
    assert doc.code == 2
    check_schema(doc.json(), "capability-show")
    assert doc.json()["ok"] is False and doc.json()["exit_code"] == 2
    assert doc.json()["problems"]
    # the version as written, and none invented where no runtime block was read
    declared = "v9" if case == "unknown version and provider" else None
    assert doc.json()["version"] == declared


def test_show_of_a_valid_capability_with_warnings_exits_0(cli, work: Path) -> None:
    body = 'version: v1\nworkflow:\n  - provider: files\n    args: [read, "${nope}"]\n'
    write(work / "cap.md", capability(body))
    doc = cli("--output", "json", "capability", "show", "cap.md")
    assert doc.code == 0, doc.stdout + doc.stderr
    check_schema(doc.json(), "capability-show")
    assert doc.json()["ok"] is True and doc.json()["version"] == "v1"
    assert doc.json()["problems"][0]["severity"] == "warning"


@pytest.mark.parametrize("command", ["validate", "show", "plan", "preflight", "execute"])
def test_a_loop_of_symbolic_links_is_said_to_be_one_not_missing(
    cli, work: Path, command: str
) -> None:
    (work / "self.md").symlink_to("self.md")
    result = cli("capability", command, "self.md")
    assert result.code == 2, result.stdout + result.stderr
    text = result.stdout + result.stderr
    assert "self.md:1:1: error: cannot read the file: Too many levels of symbolic links" in text
    assert "hint: a symbolic link on the way to self.md leads back to itself" in text
    assert "no such file" not in text


def test_lineage_range_beyond_workflow_is_a_warning(cli, work: Path) -> None:
    text = "# X\n\n## Lineage\n\n- `a/b` — steps 3–5\n\n```runtime\nversion: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n```\n"
    write(work / "cap.md", text)
    doc = cli("--output", "json", "capability", "validate", "cap.md").json()
    assert [(p["line"], p["code"]) for p in doc["capabilities"][0]["problems"]] == [
        (5, "lineage-range")
    ]


def test_github_annotation_and_plain_formats(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [nope]\n"),
    )
    gh = cli("capability", "validate", "--format", "github", "cap.md")
    assert gh.stdout.startswith(
        "::error file=cap.md,line=9,col=12,title=unknown-operation::step 1: 'nope'"
    )
    plain = cli("capability", "validate", "--format", "plain", "cap.md")
    assert (
        plain.stdout.splitlines()[0]
        == "cap.md:9:12: error: step 1: 'nope' is not an operation of 'files'"
    )


def test_plain_format_keeps_a_problem_on_one_line_whatever_the_file_name(cli, work: Path) -> None:
    write(work / "caps" / "nl\nx\r\x1b.md", capability("version: v9\nworkflow: []\n"))
    plain = cli("capability", "validate", "--format", "plain", "caps")
    assert plain.code == 2
    lines = plain.stdout.splitlines()
    assert lines[0] == "caps/nl\\nx\\r\\x1b.md:6:10: error: unsupported version 'v9'"
    assert lines[1].startswith("caps/nl\\nx\\r\\x1b.md:7:11: error: ")
    assert lines[2].startswith("1 checked")


def test_github_format_escapes_the_file_as_github_unescapes_it(cli, work: Path) -> None:
    """The runner takes back %25, %0D, %0A, %3A and %2C; another control character is
    shown as text output shows it, never written raw (validate may run on a terminal)."""
    name = "a\x1b[31m,b:c%\nd.md"
    body = 'version: v1\nworkflow:\n  - provider: "\\e[2Jfiles"\n    args: [list, .]\n'
    write(work / "caps" / name, capability(body))
    gh = cli("capability", "validate", "--format", "github", "caps")
    assert gh.code == 2
    assert "\x1b" not in gh.stdout
    (line,) = [x for x in gh.stdout.splitlines() if x.startswith("::")]
    assert line.startswith("::error file=caps/a\\x1b[31m%2Cb%3Ac%25%0Ad.md,line=8,col=5,")
    message = line.split("::", 2)[2]
    assert "\\x1b[2Jfiles" in message


def test_usage_errors_are_json_in_json_mode(cli) -> None:
    result = cli("--output", "json", "capability", "validate")
    assert result.code == 2
    check_schema(result.json(), "error")


def test_declared_types_and_choices_are_checked_at_their_position(cli, work: Path) -> None:
    """A literal value is checked against its operation's declaration (type, range,
    choices); a value with a ${reference} waits for plan time."""
    body = """version: v1
inputs:
  state:
    required: true
workflow:
  - provider: github
    args: [issue, list, acme, state=opened, "sort=${state}"]
  - provider: github
    args: [notification, list, all=yes, limit=0]
"""
    write(work / "typed.md", capability(body))
    result = cli("--output", "json", "capability", "validate", "typed.md")
    assert result.code == 2
    doc = result.json()
    check_schema(doc, "validate")
    found = [
        (p["line"], p["column"], p["code"], p["message"])
        for p in doc["capabilities"][0]["problems"]
    ]
    assert found == [
        (12, 31, "bad-value", "step 1: state=opened is not one of open, closed, all"),
        (14, 32, "bad-value", "step 2: all=yes is not true or false"),
        (14, 41, "bad-value", "step 2: limit=0 is out of range (it must be at least 1)"),
    ]


def test_a_lone_surrogate_from_a_yaml_escape_is_shown_escaped(cli, work: Path) -> None:
    # "\udb1e" in a double-quoted YAML string is a lone surrogate: no UTF-8 stream can
    # carry it, so text and JSON output show it as its escape (found by the fuzz campaign);
    # in JSON as the escape's text, since a strict reader refuses JSON's "\udb1e"
    body = 'version: v1\nworkflow: []\n"\\udb1e": x\n'
    write(work / "cap.md", capability(body))
    text = cli("capability", "validate", "cap.md")
    assert text.code == 2, text.stdout + text.stderr
    assert "unknown key '\\udb1e'" in text.stdout
    doc = cli("--output", "json", "capability", "validate", "cap.md")
    assert doc.code == 2, doc.stdout + doc.stderr
    doc.stdout.encode("utf-8")
    messages = [p["message"] for p in doc.json()["capabilities"][0]["problems"]]
    assert any("unknown key '\\udb1e'" in m for m in messages), messages


def test_a_secret_written_into_the_capability_is_not_shown_again(cli, work: Path) -> None:
    # the environment holds it (a CI job's token): validate and show quote the file's own
    # text (a source line, a step's args, the description), which reach a CI log
    token = "ghp_" + "k3" * 18
    write(
        work / "cap.md",
        capability(
            f"version: v1\nworkflow:\n  - provider: files\n    args: [write, x.txt, {token}, extra]\n",
            frontmatter=f"name: cap\ndescription: posts with {token}\n",
        ),
    )
    env = {"GITHUB_TOKEN": token}
    runs = [
        cli("capability", "validate", "cap.md", extra_env=env),
        cli("capability", "validate", "--format", "plain", "cap.md", extra_env=env),
        cli("capability", "validate", "--format", "github", "cap.md", extra_env=env),
        cli("--output", "json", "capability", "validate", "cap.md", extra_env=env),
        cli("capability", "show", "cap.md", extra_env=env),
        cli("--output", "json", "capability", "show", "cap.md", extra_env=env),
    ]
    for run in runs:
        assert run.code == 2, run.stderr
        assert token not in run.stdout + run.stderr
    # the caret still points at the word the problem is about
    lines = runs[0].stdout.splitlines()
    source = next(i for i, line in enumerate(lines) if "| " in line and "args:" in line)
    assert lines[source].endswith("args: [write, x.txt, [REDACTED], extra]")
    assert lines[source + 1].index("^") == lines[source].index("extra")
    assert "[REDACTED]" in runs[4].stdout
