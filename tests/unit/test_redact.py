"""Redaction: every secret in every encoding, and ``may_change_json``'s promise that a
record it passes over holds none."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from runtime.redact import REDACTED, Redactor
from runtime.text import json_dumps

SECRETS = ["s3cr3t-value", 'quo"te\\back', "line\nbreak", "caf\u00e9-\U0001f511-key"]
TOKEN = "ghp_" + "A1b2" * 6
# text around a secret that JSON escapes (quotes, backslashes, control and non-ASCII characters)
NOISE = st.text(alphabet=st.sampled_from(list('ab \n\t"\\/:@\u00e9\U0001f511_-')), max_size=6)


@st.composite
def fragments(draw: st.DrawFn) -> str:
    inner = draw(st.sampled_from([*SECRETS, TOKEN, "https://user:pw@host/x", "plain", ""]))
    return draw(NOISE) + inner + draw(NOISE)


DATA = st.recursive(
    st.one_of(fragments(), st.integers(), st.none(), st.booleans()),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(fragments(), children, max_size=3)
    ),
    max_leaves=8,
)


def redactor() -> Redactor:
    r = Redactor()
    for secret in SECRETS:
        r.add(secret)
    return r


@settings(max_examples=400, deadline=None)
@given(DATA)
def test_when_may_change_json_says_no_redaction_changes_nothing(data: Any) -> None:
    r = redactor()
    encoded = json_dumps(data, sort_keys=True)
    redacted = r.data(data)
    if not r.may_change_json(encoded):
        assert json_dumps(redacted, sort_keys=True) == encoded
    else:
        assert not any(secret in json.dumps(redacted) for secret in SECRETS)


@given(st.sampled_from([*SECRETS, TOKEN, "https://u:p@h/"]), NOISE, NOISE)
def test_every_secret_in_a_record_is_seen_by_may_change_json(
    secret: str, before: str, after: str
) -> None:
    r = redactor()
    record = {"args": [before + secret + after], before + secret: 1}
    assert r.may_change_json(json_dumps(record, sort_keys=True))
    if secret != "https://u:p@h/":  # (user information goes only from a URL on its own)
        redacted = json.dumps(r.data(record))
        assert REDACTED in redacted
        assert json.dumps(secret)[1:-1] not in redacted


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.binary(max_size=64))
def test_bytes_that_are_not_utf8_are_kept_and_a_secret_among_them_redacted(
    before: bytes, after: bytes
) -> None:
    """An archive's bytes: every byte kept as it is, but for a secret's (the NULs keep
    the bytes around it from joining its first or last character into another)."""
    assume(b"://" not in before + after and b"gh" not in before + after)  # no token shapes
    r = redactor()
    assert r.binary(before + after) == before + after
    secret = "caf\u00e9-\U0001f511-key".encode()
    redacted = r.binary(before + b"\x00" + secret + b"\x00" + after)
    assert secret not in redacted
    assert redacted.startswith(before + b"\x00") and redacted.endswith(b"\x00" + after)
