"""JSON from GitHub (or gh) as RFC 8259 has it.

Python's json reads NaN, Infinity and 1e400 (as an infinite float), which no JSON
document can hold: a server's answer read that way could not be written back by
``--output json``. They are refused here, as malformed JSON is.

:func:`dumps` is the other way: a value as the JSON text a call prints.
"""

from __future__ import annotations

import json
import math
from typing import Any


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"{text} is out of range")
    return number


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(data: bytes | str) -> Any:
    """``data`` parsed; :class:`ValueError` for what is not JSON, a non-finite number
    included, and :class:`RecursionError` for nesting deeper than Python's stack."""
    return json.loads(data, parse_float=_finite, parse_constant=_no_constant)


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False)
