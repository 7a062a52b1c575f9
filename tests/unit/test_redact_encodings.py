"""Redaction of a registered secret's encoded forms: base64 (in every alignment, both
alphabets), hex, percent-encoding, JSON and repr escaping, jq's ``explode``.

The expected forms are computed here on their own (bit by bit for base64), not with
the helpers of :mod:`runtime.redact`, and the real ``jq`` proves the jq formats.
"""

from __future__ import annotations

import base64
import json
import string
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from runtime.redact import MIN_VARIANT_CHARS, REDACTED, Redactor
from runtime.text import json_dumps
from tests.conftest import require_tool

REPO = Path(__file__).resolve().parents[2]
ALPHABET = [c for c in string.printable if c not in "\t\n\r\x0b\x0c"] + list("é€ß中🔑")
SECRETS = st.text(alphabet=ALPHABET, min_size=12, max_size=60)
AROUND_TEXT = st.text(alphabet=ALPHABET, max_size=5)
AROUND_BYTES = st.binary(max_size=5)
B64 = string.ascii_uppercase + string.ascii_lowercase + string.digits + "+/"


def redactor(secret: str) -> Redactor:
    r = Redactor()
    r.add(secret)
    return r


def determined_core(raw: bytes, before: int, url: bool = False) -> str:
    """The base64 characters all of whose 6 bits come from ``raw`` when ``before``
    bytes (any) stand before it in the stream and any bytes follow."""
    bits = "".join(f"{b:08b}" for b in raw)
    at = 8 * (before % 3)  # where raw's first bit falls in the stream (mod 24)
    first = -(-at // 6)
    last = (at + len(bits)) // 6  # exclusive
    core = "".join(B64[int(bits[6 * k - at : 6 * k - at + 6], 2)] for k in range(first, last))
    return core.translate(str.maketrans("+/", "-_")) if url else core


def assert_core_gone(out: str, encoded: str, core: str) -> None:
    """No run of ``core`` survives: it is not in ``out``, and the characters that
    survive (markers aside) are at most those of ``encoded`` outside the core."""
    assert len(core) >= MIN_VARIANT_CHARS
    assert core not in out, (encoded, out)
    assert REDACTED in out, (encoded, out)
    survived = len(out) - len(REDACTED) * out.count(REDACTED)
    assert survived <= len(encoded) - len(core), (encoded, core, out)


# --- base64 ------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(SECRETS, AROUND_BYTES, AROUND_BYTES, st.booleans(), st.booleans())
def test_base64_of_a_secret_inside_a_longer_stream(
    secret: str, before: bytes, after: bytes, url: bool, padded: bool
) -> None:
    raw = secret.encode()
    stream = before + raw + after
    encoded = (base64.urlsafe_b64encode if url else base64.b64encode)(stream).decode()
    if not padded:
        encoded = encoded.rstrip("=")
    out = redactor(secret).text("Authorization: Basic " + encoded + "\n")
    core = determined_core(raw, len(before), url)
    assert_core_gone(out, "Authorization: Basic " + encoded + "\n", core)
    if not after:  # the stream ends with the secret: its last character and '=' go too
        assert out.endswith(REDACTED + "\n"), out


def test_base64_of_a_basic_auth_header_and_of_each_alignment() -> None:
    secret = "rt-adv+Secr3t/9f3c2a71e5d4Qz"
    r = redactor(secret)
    for prefix in (b"", b"u:", b"user:", b"x-access-token:"):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(prefix + secret.encode()).decode()
            out = r.text(encoded)
            assert out.endswith(REDACTED), (prefix, out)
            assert len(out) <= len(REDACTED) + len(prefix) * 4 // 3 + 1, (prefix, out)


# --- forms of the text itself ------------------------------------------------------


def repr_body(secret: str, whole: str) -> str:
    """``secret`` as it appears inside ``repr(whole)`` (repr escapes each character;
    its quote depends on the whole text)."""
    quote_char = '"' if "'" in whole and '"' not in whole else "'"
    return "".join(
        ("\\" + c if c == quote_char else c) if c in "'\"" else repr(c)[1:-1] for c in secret
    )


TEXT_FORMS: dict[str, Callable[[str], str]] = {
    "percent": lambda s: quote(s, safe=""),
    "percent plus": quote_plus,
    "percent jq": lambda s: quote(s, safe="!~*'()"),
    "json ascii": lambda s: json.dumps(s)[1:-1],
    "json unicode": lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
    "jq explode -c": lambda s: ",".join(str(ord(c)) for c in s),
    "jq explode": lambda s: ",\n  ".join(str(ord(c)) for c in s),
    "python list of ord": lambda s: ", ".join(str(ord(c)) for c in s),
}


@pytest.mark.parametrize("form", sorted(TEXT_FORMS))
@settings(max_examples=150, deadline=None)
@given(secret=SECRETS, before=AROUND_TEXT, after=AROUND_TEXT)
def test_text_forms_of_a_secret_inside_longer_text(
    form: str, secret: str, before: str, after: str
) -> None:
    encode = TEXT_FORMS[form]
    encoded = encode(before + secret + after)
    core = encode(secret)
    assert_core_gone(redactor(secret).text(encoded), encoded, core)


QUOTES = st.sampled_from(["", "'", '"', "'\""])


@settings(max_examples=200, deadline=None)
@given(SECRETS, AROUND_TEXT, AROUND_TEXT, QUOTES, QUOTES)
# characters repr escapes but JSON does not (and the reverse), with one quote or both
@example("it's\xa0a\\secret\x7f", "", "", "", "")
@example("it's\xa0a\\secret\x7f", "", "", "", '"')
def test_repr_of_a_secret_inside_longer_text(
    secret: str, before: str, after: str, in_secret: str, around: str
) -> None:
    # repr's quote (and so whether a ' is escaped) depends on the quotes of the whole text
    secret = secret[:6] + in_secret + secret[6:]
    whole = before + around + secret + after
    encoded = repr(whole)
    core = repr_body(secret, whole)
    assert core in encoded
    assert_core_gone(redactor(secret).text(encoded), encoded, core)


def bytes_repr_body(secret: bytes, whole: bytes) -> str:
    """``secret`` as it appears inside ``repr(whole)`` (a printed ``bytes``)."""
    quote_char = '"' if b"'" in whole and b'"' not in whole else "'"
    return "".join(
        ("\\" + c if c == quote_char else c) if c in "'\"" else repr(bytes([b]))[2:-1]
        for b in secret
        for c in [chr(b)]
    )


@settings(max_examples=200, deadline=None)
@given(SECRETS, AROUND_BYTES, AROUND_BYTES)
def test_repr_of_bytes_with_a_secret(secret: str, before: bytes, after: bytes) -> None:
    whole = before + secret.encode() + after
    encoded = repr(whole)  # b'...', as print(data) shows bytes
    core = bytes_repr_body(secret.encode(), whole)
    assert core in encoded
    assert_core_gone(redactor(secret).text(encoded), encoded, core)


@settings(max_examples=200, deadline=None)
@given(SECRETS, AROUND_BYTES, AROUND_BYTES, st.booleans())
def test_hex_of_a_secret_inside_longer_bytes(
    secret: str, before: bytes, after: bytes, upper: bool
) -> None:
    encoded = (before + secret.encode() + after).hex()
    core = secret.encode().hex()
    if upper:
        encoded, core = encoded.upper(), core.upper()
    assert_core_gone(redactor(secret).text(encoded), encoded, core)


# --- the real jq -------------------------------------------------------------------


def jq(expression: str, value: str, *options: str) -> str:
    require_tool("jq", "the jq output formats")
    return subprocess.run(
        ["jq", "-n", *options, "--arg", "s", value, expression],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


JQ_SECRET = "rt-adv+Secr3t/9f3c2a71e5d4Qz'é(x)*!~ \"q\\"


def test_jq_explode_is_matched_as_jq_prints_it() -> None:
    r = redactor(JQ_SECRET)
    points = [str(ord(c)) for c in JQ_SECRET]
    pretty = jq("$s|explode", JQ_SECRET)
    assert pretty == "[\n  " + ",\n  ".join(points) + "\n]\n"  # jq 1.6's pretty array
    assert r.text(pretty) == "[\n  " + REDACTED + "\n]\n"
    compact = jq("$s|explode", JQ_SECRET, "-c")
    assert compact == "[" + ",".join(points) + "]\n"
    assert r.text(compact) == "[" + REDACTED + "]\n"
    # inside a longer array: the secret's numbers go, the others stay
    longer = jq('"id:" + $s + "." | explode', JQ_SECRET)
    assert r.text(longer) == "[\n  105,\n  100,\n  58,\n  " + REDACTED + ",\n  46\n]\n"


def test_jq_base64_uri_and_strings_are_redacted() -> None:
    r = redactor(JQ_SECRET)
    # jq's @uri leaves !*'() as they are (urllib's quote would not)
    uri_core = jq("$s|@uri", JQ_SECRET).strip().strip('"')
    assert "Qz'%C3%A9(x)*!~" in uri_core
    for prefix in ("", "u:", "user:"):
        encoded = jq("$s|@base64", prefix + JQ_SECRET)
        core = determined_core(JQ_SECRET.encode(), len(prefix.encode()))
        out = r.text(encoded)
        assert_core_gone(out, encoded, core)
        assert out.endswith(REDACTED + '"\n'), out  # '=' padding included
        encoded = jq("$s|@uri", prefix + JQ_SECRET + "/x")
        assert_core_gone(r.text(encoded), encoded, uri_core)
    # jq's own string escaping (non-ASCII as is, quotes and backslashes escaped)
    for secret in (JQ_SECRET, 'dél\x7f-"in"-the-secret'):  # jq escapes DEL, json does not
        string_core = jq("$s", secret)[1:-2]
        encoded = jq('{"a": ("x" + $s + "y")}', secret, "-c")
        assert_core_gone(redactor(secret).text(encoded), encoded, string_core)
        encoded = json.dumps({"a": "x" + secret + "y"}, ensure_ascii=False)
        assert_core_gone(redactor(secret).text(encoded), encoded, secret)


# --- may_change_json ---------------------------------------------------------------


def forms_of(secret: str, before: bytes) -> dict[str, str]:
    """Each form of ``secret`` (its core, for base64), as a step may print it."""
    raw = secret.encode()
    found = {name: encode(secret) for name, encode in TEXT_FORMS.items()}
    found["secret"] = secret
    found["repr"] = repr(secret)[1:-1]
    found["hex"] = raw.hex()
    found["HEX"] = raw.hex().upper()
    found["base64"] = determined_core(raw, len(before))
    found["base64url"] = determined_core(raw, len(before), url=True)
    return found


@settings(max_examples=150, deadline=None)
@given(SECRETS, AROUND_BYTES, AROUND_TEXT, AROUND_TEXT)
def test_the_shortcut_sees_every_form_in_a_record(
    secret: str, before: bytes, noise_before: str, noise_after: str
) -> None:
    r = redactor(secret)
    for name, form in forms_of(secret, before).items():
        record: dict[str, Any] = {"event": "step", "output": [noise_before + form + noise_after]}
        assert r.may_change_json(json_dumps(record)), name
        redacted = json.dumps(r.data(record))
        assert json.dumps(form)[1:-1] not in redacted, name
        record = {noise_before + form + noise_after: 1}  # in a key
        assert r.may_change_json(json_dumps(record)), name


UNRELATED = st.recursive(
    st.one_of(
        st.text(alphabet=ALPHABET, max_size=20),
        st.integers(),
        st.none(),
        st.booleans(),
        st.floats(allow_nan=False),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.text(alphabet=ALPHABET, max_size=8), children, max_size=3),
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(SECRETS, UNRELATED, AROUND_BYTES, st.sampled_from(sorted([*TEXT_FORMS, "hex", "base64"])))
def test_when_the_shortcut_says_no_redaction_changes_nothing(
    secret: str, data: Any, before: bytes, planted: str
) -> None:
    r = redactor(secret)
    # half the time a form of the secret sits in the data
    mixed = [data, "x" + forms_of(secret, before)[planted] + "y"]
    for value in (data, mixed):
        encoded = json_dumps(value, sort_keys=True)
        if not r.may_change_json(encoded):
            assert json_dumps(r.data(value), sort_keys=True) == encoded
    assert r.may_change_json(json_dumps(mixed, sort_keys=True))


def test_a_plain_record_takes_the_shortcut() -> None:
    r = redactor("rt-adv+Secr3t/9f3c2a71e5d4Qz")
    r.add("abcd")
    for record in (
        {"args": ["write", "./out/a.txt", "content"], "event": "step", "step": 1},
        {"output": "dXNlcjphYmNk 61626 97,98,99 YWJjZA== ok", "n": [1, 2, 3]},
    ):
        assert not r.may_change_json(json_dumps(record, sort_keys=True))


# --- no over-redaction -------------------------------------------------------------


def test_a_short_secret_registers_no_short_form() -> None:
    """'abcd' goes verbatim, but its base64 cores are 4 to 6 characters: none is
    redacted, in any alignment, and ordinary text stays as it is."""
    r = redactor("abcd")
    for before in (b"", b"x", b"xy", b"user:"):
        for after in (b"", b"!", b"!?"):
            for encode in (base64.b64encode, base64.urlsafe_b64encode):
                encoded = encode(before + b"abcd" + after).decode()
                assert r.text(encoded) == encoded
                assert r.text(encoded.rstrip("=")) == encoded.rstrip("=")
    for plain in ("YWJj ZA 6162636 61 62 63 64 97,98,99 %61 abc bcd", "a", "ab cd"):
        assert r.text(plain) == plain
    # its forms of at least MIN_VARIANT_CHARS characters do go
    assert r.text("61626364 97,98,99,100 abcd") == " ".join([REDACTED] * 3)


def test_ordinary_text_is_unchanged() -> None:
    r = Redactor()
    for secret in (
        "abcd",
        "s3cr3t-value",
        "rt-adv+Secr3t/9f3c2a71e5d4Qz",
        "caf\u00e9-\U0001f511-key",
    ):
        r.add(secret)
    corpus = [REPO / "README.md", *sorted((REPO / "specs").glob("*.md"))]
    for path in corpus:
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            if "://" in line and "@" in line:  # URL user information goes, as always
                continue
            assert r.text(line) == line, (path, line)
    for word in ("password", "base64", "==", "0000000000", "1,2,3,4,5,6,7,8", "%20%20%20%20"):
        assert r.text(word) == word


def test_longest_form_first() -> None:
    r = Redactor()
    r.add("s3cr3t-value")
    r.add("s3cr3t-value-and-more")
    assert r.text("<s3cr3t-value-and-more>") == "<" + REDACTED + ">"
    encoded = base64.b64encode(b"s3cr3t-value-and-more").decode()
    assert r.text(encoded) == REDACTED
