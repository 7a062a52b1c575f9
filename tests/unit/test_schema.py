"""The schema mechanism (runtime.yamldoc.schema): each shape, every problem, positions."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from runtime.errors import InvalidPolicy
from runtime.problems import Problem
from runtime.yamldoc.schema import (
    INVALID,
    Alt,
    Anything,
    Bool,
    By,
    Int,
    List,
    Map,
    Msg,
    Number,
    OneOf,
    Scope,
    Shape,
    Text,
    check,
    describe_json,
    json_tree,
    load,
    parse_yaml,
)
from runtime.yamldoc.yamlnode import Node


def run(text: str, shape: Shape, **kw: Any) -> tuple[Any, list[Problem]]:
    root, problems = parse_yaml(text, "f.yaml")
    assert root is not None and problems == [], problems
    return check(root, shape, file="f.yaml", code="bad", **kw)


def found(problems: list[Problem]) -> list[tuple[int, int, str, str]]:
    return [(p.line, p.column, p.code, p.message) for p in problems]


# -- scalars -----------------------------------------------------------------------------------


def test_text_takes_any_single_value_as_typed() -> None:
    assert run("a: -5\n", Map({"a": Text()})) == ({"a": "-5"}, [])
    value, problems = run("a: [x]\n", Map({"a": Text()}))
    assert value == {}
    assert found(problems) == [(1, 4, "bad", "'a' must be a single value, not a list")]


def test_text_pattern_and_choices() -> None:
    shape = Map(
        {
            "env": Text(pattern=r"[A-Z_]+", means="an environment variable name"),
            "mode": Text(choices=("none", "local", "public")),
        }
    )
    assert run("env: TOKEN\nmode: local\n", shape)[0] == {"env": "TOKEN", "mode": "local"}
    _, problems = run("env: TOKEN\\n\nmode: all\n", shape)
    assert found(problems) == [
        (1, 6, "bad", "'env' must be an environment variable name, not 'TOKEN\\n'"),
        (2, 7, "bad", "'mode' must be none, local or public, not 'all'"),
    ]


def test_a_pattern_matches_in_full_not_up_to_a_newline() -> None:
    _, problems = run('env: "TOKEN\\n"\n', Map({"env": Text(pattern=r"[A-Z]+")}))
    assert len(problems) == 1


def test_bool_exact_or_ignoring_case() -> None:
    shape = Map({"a": Bool(), "b": Bool(ignore_case=True)})
    assert run("a: true\nb: FALSE\n", shape) == ({"a": True, "b": False}, [])
    _, problems = run("a: True\nb: yes\n", shape)
    assert found(problems) == [
        (1, 4, "bad", "'a' must be true or false, not 'True'"),
        (2, 4, "bad", "'b' must be true or false, not 'yes'"),
    ]


def test_int_digits_within_bounds() -> None:
    shape = Map({"n": Int(minimum=1), "m": Int(maximum=5), "k": Int()})
    assert run("n: 3\nm: 5\nk: 0\n", shape)[0] == {"n": 3, "m": 5, "k": 0}
    _, problems = run("n: 0\nm: 6\nk: -1\n", shape)
    assert found(problems) == [
        (1, 4, "bad", "'n' must be an integer of at least 1, not '0'"),
        (2, 4, "bad", "'m' must be an integer from 0 to 5, not '6'"),
        (3, 4, "bad", "'k' must be a non-negative integer, not '-1'"),
    ]


def test_number_with_an_exclusive_lower_and_inclusive_upper_bound() -> None:
    shape = Map({"t": Number(above=0, maximum=86400)})
    assert run("t: 86400\n", shape)[0] == {"t": 86400.0}
    for text in ("0", "86401", "soon", "nan"):
        _, problems = run(f"t: {text}\n", shape)
        assert found(problems) == [
            (1, 4, "bad", f"'t' must be a number above 0 and at most 86400, not '{text}'")
        ]


def test_quoted_text_is_a_json_string() -> None:
    shape = Map({"a": Text(quoted=True), "b": Text(quoted=True, empty="plain")})
    tree = json_tree({"a": 5, "b": None})
    value, problems = check(tree, shape, file="c.json", code="bad", describe=describe_json)
    assert value == {"b": None}
    assert [p.message for p in problems] == ["'a' must be a string, not 5"]
    assert (problems[0].line, problems[0].column) == (0, 0)  # JSON: no positions


# -- lists ---------------------------------------------------------------------------------------


def test_every_bad_item_is_reported_not_just_the_first() -> None:
    value, problems = run("a: [x, [y], z, {k: v}]\n", Map({"a": List(Text())}))
    assert value == {"a": ["x", "z"]}
    assert found(problems) == [
        (1, 8, "bad", "each entry of 'a' must be a single value, not a list"),
        (1, 16, "bad", "each entry of 'a' must be a single value, not a mapping"),
    ]


def test_min_items_and_unique() -> None:
    shape = Map(
        {
            "a": List(Text(), min_items=1, too_few=Msg("{where} is empty", code="empty")),
            "b": List(Text(), unique=Msg("'{text}' is repeated")),
        }
    )
    value, problems = run("a: []\nb: [r, w, r, r]\n", shape)
    assert value == {"b": ["r", "w"]}
    assert found(problems) == [
        (1, 4, "empty", "'a' is empty"),
        (2, 11, "bad", "'r' is repeated"),
        (2, 14, "bad", "'r' is repeated"),
    ]


def test_empty_value_plain_or_any() -> None:
    shape = Map({"a": List(Text(), empty="plain"), "b": Map(empty=True)})
    assert run("a:\nb: ''\n", shape) == ({"a": [], "b": {}}, [])
    _, problems = run("a: ''\nb: ~\n", shape)
    assert found(problems) == [(1, 4, "bad", "'a' must be a list, not a value")]


# -- mappings ------------------------------------------------------------------------------------


def test_a_closed_mapping_reports_every_unknown_key_with_lookalikes() -> None:
    shape = Map(
        {"version": Text(), "workflow": List(Text())},
        lookalikes={"steps": Msg("'steps' is not a key: it is 'workflow'", code="lookalike")},
        code="unknown-key",
    )
    value, problems = run("version: v1\nsteps: []\nvershun: 2\nextra: 3\n", shape)
    assert value == {"version": "v1"}
    assert found(problems) == [
        (2, 1, "lookalike", "'steps' is not a key: it is 'workflow'"),
        (3, 1, "unknown-key", "unknown key 'vershun' in the file"),
        (4, 1, "unknown-key", "unknown key 'extra' in the file"),
    ]
    assert problems[1].hint == "allowed keys: version, workflow"


def test_required_keys_at_the_mapping_or_the_document_start() -> None:
    shape = Map(
        {"step": Map({"args": Text(), "id": Text()}, required={"args": None, "id": "no id"})},
        required={"version": Msg("missing 'version'", "add it")},
        missing_at_start=True,
    )
    _, problems = run("# a comment\nstep:\n  other: 1\n", shape, start=(1, 1))
    assert found(problems) == [
        (3, 3, "bad", "unknown key 'other' in 'step'"),
        (3, 3, "bad", "'step' has no 'args'"),
        (3, 3, "bad", "no id"),
        (1, 1, "bad", "missing 'version'"),
    ]


def test_exactly_one_of() -> None:
    shape = List(
        Map(
            {"provider": Text(), "binary": Text()},
            one_of=OneOf(("provider", "binary"), both="{where}: both", neither="{where}: neither"),
            label="step {index}",
        )
    )
    _, problems = run("- provider: a\n- {provider: a, binary: b}\n- {}\n", shape)
    assert found(problems) == [(2, 3, "bad", "step 2: both"), (3, 3, "bad", "step 3: neither")]


def test_a_key_shape_reports_a_bad_key_once_and_still_checks_its_value() -> None:
    shape = Map(
        key=Text(pattern=r"[a-z]+", bad=Msg("'{text}' is not a name", code="name")),
        extra=Map({"required": Bool()}),
    )
    value, problems = run("ok: {required: true}\nBad: {required: maybe}\n", shape)
    assert value == {"ok": {"required": True}, "Bad": {}}
    assert found(problems) == [
        (2, 1, "name", "'Bad' is not a name"),
        (2, 17, "bad", "'required' must be true or false, not 'maybe'"),
    ]
    closed = Map({"a": Text()}, key=Text(pattern=r"[a-z]+"))
    _, problems = run("B: 1\n", closed)
    assert len(problems) == 1  # the key's problem, not also "unknown key"


def test_an_open_mapping_takes_other_keys_with_their_shape() -> None:
    shape = Map({"name": Text()}, extra=Anything())
    assert run("name: x\nother: [1, {a: b}]\n", shape) == (
        {"name": "x", "other": ["1", {"a": "b"}]},
        [],
    )


# -- whole values, hooks, builds -----------------------------------------------------------------


def test_whole_drops_a_value_with_a_wrong_part_but_not_for_an_unknown_key() -> None:
    step = Map({"args": List(Text())}, whole=True, build=lambda node, value, scope: value["args"])
    shape = List(step)
    value, problems = run(
        "- {args: [a]}\n- {args: [b], extra: 1}\n- {args: [c, [d]]}\n- {args: x}\n", shape
    )
    assert value == [["a"], ["b"]]
    assert len(problems) == 3


def test_a_warning_does_not_make_a_value_not_whole() -> None:
    shape = Map({"a": Text()}, unknown=Msg("ignored '{key}'", severity="warning"), whole=True)
    value, problems = run("a: x\nb: y\n", shape)
    assert value == {"a": "x"}
    assert problems[0].severity == "warning"


def test_a_hook_returns_a_message_or_reports_elsewhere() -> None:
    def rule(node: Node, value: dict[str, Any], scope: Scope) -> None:
        if value.get("origin") == "inferred" and node.get("review") is None:
            scope.report(
                node.get("origin"), Msg("{where} is inferred but not reviewed", code="review")
            )

    shape = List(
        Map(
            {
                "origin": Text(),
                "review": Text(),
                "url": Text(check=lambda n, t, s: None if t.startswith("https://") else "bad url"),
            },
            label="entry {index}",
            check=rule,
        )
    )
    _, problems = run(
        "- origin: inferred\n  url: ftp://x\n- {origin: inferred, review: ok}\n", shape
    )
    assert found(problems) == [
        (2, 8, "bad", "bad url"),
        (1, 11, "review", "entry 1 is inferred but not reviewed"),
    ]


def test_build_makes_model_objects_with_positions() -> None:
    arg = Text(build=lambda node, text, scope: (text, *scope.position(node)))
    value, _ = run(
        "args: [a, bb]\n", Map({"args": List(arg)}), locate=lambda n: (n.line + 10, n.column)
    )
    assert value == {"args": [("a", 10, 7), ("bb", 10, 10)]}


def test_alt_chooses_by_kind_and_by_chooses_by_a_sibling() -> None:
    network = Alt({"scalar": Text(choices=("none", "public"))}, otherwise=List(Text()))
    target = By(
        "type",
        {
            "file": Map({"path": Text()}, required={"path": None}),
            "env": Map({"name": Text(pattern=r"[A-Z]+")}),
        },
    )
    shape = Map({"network": network, "type": Text(), "target": target})
    assert run("network: none\ntype: file\ntarget: {path: a}\n", shape)[1] == []
    assert run("network: [a, b]\ntype: env\ntarget: {name: X}\n", shape)[1] == []
    _, problems = run("network: {a: b}\ntype: env\ntarget: {path: a}\n", shape)
    assert found(problems) == [
        (1, 10, "bad", "'network' must be a list, not a mapping"),
        (3, 10, "bad", "unknown key 'path' in 'target'"),
    ]
    # an unknown type: the target is not checked, and has no value
    assert run("type: other\ntarget: {x: 1}\n", shape) == ({"type": "other"}, [])


# -- messages ------------------------------------------------------------------------------------


def test_labels_names_and_codes_reach_the_messages_below() -> None:
    shape = Map(
        {
            "workflow": List(
                Map(
                    {"args": List(Text(wrong="each arg of {step} ({step.index}) is {got}"))},
                    label="step {index}",
                    name="step",
                    code="step-code",
                )
            )
        }
    )
    _, problems = run("workflow:\n  - args: [a]\n  - args: [{x: 1}, {y: 2}]\n", shape)
    assert found(problems) == [
        (3, 12, "step-code", "each arg of step 2 (2) is a mapping"),
        (3, 20, "step-code", "each arg of step 2 (2) is a mapping"),
    ]


def test_braces_that_name_nothing_stay_as_written() -> None:
    shape = Map({"a": Int(bad=Msg("{where} is not {maxAgeSeconds: 60} or {nothing}"))})
    _, problems = run("a: x\n", shape)
    assert problems[0].message == "'a' is not {maxAgeSeconds: 60} or {nothing}"


def test_a_value_is_never_read_as_a_template() -> None:
    _, problems = run("'{where}': 1\n", Map({}))
    assert problems[0].message == "unknown key '{where}' in the file"


def test_the_top_node_failing_has_no_value() -> None:
    value, problems = run("- a\n", Map({}, wrong="{where} must be a mapping of keys, not {got}"))
    assert value is None and INVALID is not None
    assert found(problems) == [(1, 1, "bad", "the file must be a mapping of keys, not a list")]


# -- files ---------------------------------------------------------------------------------------


def test_load_reports_syntax_duplicates_and_takes_an_empty_file() -> None:
    shape = Map({"a": Text()})
    assert load("", "f.yaml", shape, "invalid-x") == ({}, [])
    assert load("# nothing\n", "f.yaml", shape, "invalid-x") == ({}, [])
    _, problems = load("a: 1\na: 2\nb: 3\n", "f.yaml", shape, "invalid-x")
    assert found(problems) == [
        (2, 1, "invalid-x", "duplicate key 'a' (first on line 1)"),
        (3, 1, "invalid-x", "unknown key 'b' in the file"),
    ]
    _, problems = load("a: [1\n", "f.yaml", shape, "invalid-x")
    assert problems[0].code == "invalid-x" and "YAML syntax error" in problems[0].message


def test_json_tree_and_its_descriptions() -> None:
    tree = json_tree({"a": [1, "x", None, True, {"b": 2.5}]})
    kinds = [describe_json(n) for n in tree.pairs[0][1].items]
    assert kinds == ["1", "a string", "null", "true", "an object"]
    assert describe_json(tree.pairs[0][1]) == "an array"


# -- the schemas as written ----------------------------------------------------------------------


def test_policy_reports_every_problem_at_its_position() -> None:
    from runtime.plan.policy_file import parse_policy_text

    with pytest.raises(InvalidPolicy) as caught:
        parse_policy_text(
            "version: v2\nallowed_binary: [x]\ntimeout_seconds: 0\ngit_hooks: yes\n", "p.yaml"
        )
    assert str(caught.value).startswith("p.yaml:1:10: unsupported policy version 'v2'")
    assert found(caught.value.problems) == [
        (1, 10, "invalid-policy", "unsupported policy version 'v2'"),
        (2, 1, "invalid-policy", "unknown policy key 'allowed_binary'"),
        (
            3,
            18,
            "invalid-policy",
            "'timeout_seconds' must be a number above 0 and at most 86400, not '0'",
        ),
        (4, 12, "invalid-policy", "'git_hooks' must be true or false, not 'yes'"),
    ]


def test_config_schema_takes_the_keys_providers_declare() -> None:
    from runtime.home.config import config_schema

    provider = SimpleNamespace(
        credentials=(SimpleNamespace(variable_setting="token_variable"),),
        settings=(
            SimpleNamespace(
                name="host",
                in_config=True,
                check=lambda v: None if "/" not in v else "host must be a name",
            ),
            SimpleNamespace(name="organization", in_config=False, check=None),
        ),
    )
    schema = config_schema(SimpleNamespace(providers={"p": provider}))  # type: ignore[arg-type]
    assert list(schema.fields) == [
        "capability_sources",
        "audit_max_bytes",
        "audit_keep",
        "token_variable",
        "host",
    ]
    data, problems = load(
        "host: a/b\ntoken_variable: lower\norganization: x\n", "c.yaml", schema, "invalid-config"
    )
    assert data == {}
    assert found(problems) == [
        (1, 7, "invalid-config", "host must be a name"),
        (
            2,
            17,
            "invalid-config",
            "'token_variable' must be an environment variable name, not 'lower'",
        ),
        (3, 1, "invalid-config", "unknown config key 'organization'"),
    ]


def test_contexts_shape_on_parsed_json() -> None:
    from runtime.home.contexts import contexts_schema

    settings: dict[str, Any] = {"github_host": None, "organization": None}
    schema = contexts_schema(settings)

    def messages(data: object) -> list[str]:
        _, problems = check(
            json_tree(data), schema, file="c.json", code="x", describe=describe_json
        )
        return [p.message for p in problems]

    assert messages({"active": None, "contexts": {"w": {"organization": "a"}}, "x": 1}) == []
    assert messages(
        {"active": 5, "contexts": {"a": 1, "b": {"githubhost": "x", "organization": []}}}
    ) == [
        '"active" must be a context name, not 5',
        'context "a" must be an object of keys, not 1',
        'context "b" has an unknown key "githubhost" (known: github_host, organization)',
        'context "b": "organization" must be a string, not an array',
    ]
    assert messages([]) == ["expected a JSON object, found an array"]
