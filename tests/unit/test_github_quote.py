"""The GitHub provider's path-segment quoting is exactly urllib's ``quote(value, safe="")``."""

from __future__ import annotations

from urllib.parse import quote as urllib_quote

from hypothesis import given
from hypothesis import strategies as st

from providers.github.ops import quote

_NAMEISH = st.text(alphabet="abcXYZ019_.-~ /%?#@:+é\u00a0", max_size=12)


@given(st.one_of(st.text(max_size=16), _NAMEISH))
def test_a_segment_is_quoted_as_urllib_quotes_it(value: str) -> None:
    assert quote(value) == urllib_quote(value, safe="")


def test_names_github_allows_are_left_as_they_are_and_the_rest_is_encoded() -> None:
    assert quote("my-org.io_2~x") == "my-org.io_2~x"
    assert quote("..") == ".."  # the route check refuses it later, on the quoted path
    assert quote("a/b c") == "a%2Fb%20c"
