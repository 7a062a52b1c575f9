"""runtime.text.json_dumps: the one way runtime writes JSON. The same data to any JSON
reader, valid I-JSON (no lone surrogate), and nothing a terminal acts on left raw."""

from __future__ import annotations

import json

import pytest

from runtime.text import json_dumps


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"a": "plain", "n": 1, "x": None}, '{"a": "plain", "n": 1, "x": null}'),
        ("caf\u00e9 \u2713", '"caf\u00e9 \u2713"'),  # characters stay characters
        ("a\x7fb", '"a\\u007fb"'),  # DEL, the one such ASCII character
        ("\x1b[31m", '"\\u001b[31m"'),  # C0: json's own escape
        ("\x9b", '"\\u009b"'),  # C1
        ("\u202eevil", '"\\u202eevil"'),  # a bidirectional override
        ("line\u2028break", '"line\\u2028break"'),
        ("caf\udcff.txt", '"caf\\\\udcff.txt"'),  # a byte that is not UTF-8: its escape's text
    ],
)
def test_what_is_escaped(value: object, text: str) -> None:
    encoded = json_dumps(value)
    assert encoded == text
    encoded.encode("utf-8")  # no lone surrogate: a strict reader takes it
    if "\udcff" not in str(value):
        assert json.loads(encoded) == value  # the same data


def test_a_value_json_cannot_hold_is_its_text_and_options_apply() -> None:
    class Thing:
        def __str__(self) -> str:
            return "thing"

    assert json_dumps({"t": Thing()}) == '{"t": "thing"}'
    assert json_dumps({"b": 1, "a": "\x7f"}, indent=1, sort_keys=True) == (
        '{\n "a": "\\u007f",\n "b": 1\n}'
    )
