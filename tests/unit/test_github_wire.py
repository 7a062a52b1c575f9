"""The GitHub client's wire layer reads URLs, bodies, encodings and headers as httpx does.

httpx is the oracle: the client used ``httpx.Client`` before it went to httpcore
directly (bench/, figure 7d), and what reaches the wire must not have changed.
"""

from __future__ import annotations

import contextlib
import gzip
import zlib
from typing import Any

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from providers.github import wire

# -------------------------------------------------------------------------- URLs

_LABEL = st.from_regex(r"[a-z](?:[a-z0-9-]{0,6}[a-z0-9])?", fullmatch=True)
_HOST = st.one_of(
    st.lists(_LABEL, min_size=1, max_size=3).map(".".join),
    st.sampled_from(
        ["127.0.0.1", "localhost", "API.GitHub.com", "[::1]", "999.1.1.1", "xn--bcher-kva.example"]
    ),
)
_PORT = st.one_of(
    st.just(""),
    st.integers(1, 70000).map(lambda p: f":{p}"),
    st.sampled_from([":80", ":443", ":0", ":08080", ":"]),
)
# path and query characters, the plain ones weighted up, with escapes valid and not
_CHUNK = st.one_of(
    st.text(alphabet="abcXYZ019-._~!$&'()*+,;=:@/", min_size=1, max_size=8),
    st.sampled_from(
        [
            "%2F",
            "%c3%bc",
            "%",
            "%zz",
            "..",
            ".",
            "/./",
            "/../",
            "?",
            "#",
            " ",
            "ü",
            "{",
            "`",
            '"',
            "|",
            "[",
            "]",
        ]
    ),
)
_PIECE = st.lists(_CHUNK, max_size=5).map("".join)


@st.composite
def urls(draw: Any) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "ftp"]))
    path = draw(st.one_of(st.just(""), _PIECE.map(lambda p: "/" + p)))
    query = draw(st.one_of(st.just(""), _PIECE.map(lambda q: "?" + q)))
    return f"{scheme}://{draw(_HOST)}{draw(_PORT)}{path}{query}"


def by_httpx(url: str) -> tuple[bytes, bytes, int | None, bytes, bytes] | None:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return None
    return parsed.raw_scheme, parsed.raw_host, parsed.port, parsed.raw_path, parsed.netloc


def by_wire(url: str) -> tuple[bytes, bytes, int | None, bytes, bytes] | None:
    try:
        found = wire.target(url)
    except wire.InvalidURL:
        return None
    u = found.url
    return u.scheme, u.host, u.port, u.target, found.host_header


@settings(max_examples=600)
@given(st.one_of(urls(), st.text(max_size=40)))
@example("http://127.0.0.1:8080/repos/acme/app")
@example("https://api.github.com/repos/acme/app/contents/docs/a%20b/%C3%BC.md?ref=main")
@example("https://api.github.com:443/user")  # a default port is dropped
@example("https://api.github.com/a/../user")  # dot segments are removed
@example("https://api.github.com")  # no path is "/"
@example("https://api.github.com?x=1")
@example("https://api.github.com/x?")
@example("https://api.github.com/x#frag")  # the fragment is not sent
@example("http://[::1]:9/x")
def test_a_url_reaches_the_wire_as_httpx_sends_it(url: str) -> None:
    expected = by_httpx(url)
    if expected is None or not expected[1]:  # refused by httpx, or no host to send to
        with pytest.raises(wire.InvalidURL):
            wire.target(url)
        return
    assert by_wire(url) == expected


@given(urls())
def test_plain_urls_are_read_without_httpx(url: str) -> None:
    """The fast path is taken where it should be: httpx is asked only about the rest."""
    plain = wire._PLAIN.fullmatch(url)
    asked: list[str] = []
    original = wire._target_by_httpx

    def spy(value: str) -> wire.Target:
        asked.append(value)
        return original(value)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(wire, "_target_by_httpx", spy)
        with contextlib.suppress(wire.InvalidURL):
            wire.target(url)
    if asked:
        return
    assert plain is not None  # only a plain URL is answered without httpx


def test_the_common_urls_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(value: str) -> wire.Target:
        raise AssertionError(f"asked httpx about {value}")

    monkeypatch.setattr(wire, "_target_by_httpx", fail)
    for url in [
        "https://api.github.com/repos/acme/app",
        "http://127.0.0.1:35467/repos/acme/app/issues?state=open&per_page=100&page=2",
        "https://ghe.example.com/api/v3/repos/acme/web.site/contents/docs/a%20b/%C3%BC.md",
        "https://api.github.com/graphql",
    ]:
        assert wire.target(url).url.target.startswith(b"/")


# ------------------------------------------------------------------------ bodies

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(_JSON.filter(lambda v: v is not None))  # None is "no body" to both
def test_a_json_body_is_encoded_as_httpx_encodes_it(value: Any) -> None:
    request = httpx.Request("POST", "http://h/", json=value)
    assert wire.json_body(value) == request.content
    assert request.headers["content-type"] == "application/json"


# --------------------------------------------------------------------- encodings


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


_ENCODERS = {
    "gzip": lambda d: gzip.compress(d, mtime=0),
    "deflate": zlib.compress,
    "deflate-raw": _raw_deflate,
    "identity": lambda d: d,
    "x-unknown": lambda d: d,
}


def httpx_decoded(content: bytes, header: str | None) -> bytes:
    headers = {"content-encoding": header} if header is not None else {}
    response = httpx.Response(200, headers=headers, stream=httpx.ByteStream(content))
    return response.read()


@given(
    st.binary(max_size=300),
    st.lists(st.sampled_from(sorted(_ENCODERS)), min_size=0, max_size=3),
)
def test_a_body_is_decoded_as_httpx_decodes_it(data: bytes, applied: list[str]) -> None:
    content = data
    for name in applied:
        content = _ENCODERS[name](content)
    header = ", ".join("deflate" if n == "deflate-raw" else n for n in applied) or None
    received = wire.Headers([(b"Content-Encoding", header.encode())] if header else [])
    assert wire.decode(content, received) == httpx_decoded(content, header)
    assert wire.decode(content, received) == data


@pytest.mark.parametrize("coding", ["gzip", "deflate", "gzip, deflate"])
def test_a_body_its_coding_does_not_describe_is_a_decoding_error(coding: str) -> None:
    received = wire.Headers([(b"content-encoding", coding.encode())])
    with pytest.raises(httpx.DecodingError):
        httpx_decoded(b"plainly not compressed", coding)
    with pytest.raises(wire.DecodingError) as raised:
        wire.decode(b"plainly not compressed", received)
    assert raised.value.coding in coding


# ----------------------------------------------------------------------- headers

_NAMES = st.sampled_from(["Link", "link", "LINK", "Content-Type", "X-RateLimit-Remaining", "x-a"])
_VALUES = st.text(alphabet="abc ,;=<>/0123456789\u00e9", max_size=10)


@given(st.lists(st.tuples(_NAMES, _VALUES), max_size=6), _NAMES)
def test_headers_read_as_httpx_reads_them(fields: list[tuple[str, str]], name: str) -> None:
    raw = [(k.encode(), v.encode("utf-8")) for k, v in fields]
    ours = wire.Headers(raw)
    theirs = httpx.Headers(raw)
    assert ours.get(name) == theirs.get(name)
    assert (name in ours) == (name in theirs)
    assert sorted(ours) == sorted({k.lower() for k, _ in fields})


def test_headers_do_not_show_their_values() -> None:
    headers = wire.Headers([(b"Authorization", b"Bearer ghp_secret")])
    assert "ghp_secret" not in repr(headers)
    assert headers["authorization"] == "Bearer ghp_secret"


# -------------------------------------------------------------------- parameters

_QUERY_TEXT = st.text(alphabet="ab=&+%2Cü ;?/#", max_size=10)
_PARAM_VALUE = st.one_of(
    st.text(alphabet="abü &=+/%,", max_size=6),
    st.integers(-5, 500),
    st.booleans(),
    st.none(),
)
_PARAMS = st.one_of(
    st.dictionaries(
        st.sampled_from(["a", "b", "per_page", "q", "ü"]),
        st.one_of(_PARAM_VALUE, st.lists(_PARAM_VALUE, max_size=3)),
        max_size=3,
    ),
    st.lists(st.tuples(st.sampled_from(["a", "b", "state"]), _PARAM_VALUE), max_size=4),
)


@settings(max_examples=400)
@given(
    st.sampled_from(["https://api.github.com/orgs/acme/repos", "http://127.0.0.1:8080/x/y"]),
    st.one_of(st.just(""), _QUERY_TEXT.map(lambda q: "?" + q)),
    _PARAMS,
)
@example("https://api.github.com/orgs/acme/repos", "?type=all&per_page=5", {"per_page": "100"})
@example("https://api.github.com/issues", "?a=1&b=2&a=3", [("a", "x"), ("c", True)])
@example("https://api.github.com/issues", "?a=1", {"a": []})  # a name, no value: a bare "?"
@example("https://api.github.com/issues", "", {})  # no name: no "?"
def test_parameters_are_merged_as_httpx_merges_them(base: str, query: str, params: Any) -> None:
    url = base + query
    expected = by_httpx(str(httpx.URL(url).copy_merge_params(params)))
    assert by_wire(wire.with_params(url, params)) == expected
