"""Files shipped inside the installed package: specs and policies.

In a wheel they live under ``runtime/_data/``; in a source checkout (an
editable install or tests) they are the top-level ``specs/`` and
``policies/`` folders.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path


@cache
def data_dir(name: str) -> Path:
    package = Path(__file__).resolve().parents[1]  # runtime/
    installed = package / "_data" / name
    if installed.is_dir():
        return installed
    checkout = package.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"runtime is installed without its {name}/ folder ({installed})")


def specs_dir() -> Path:
    return data_dir("specs")


def default_policy_file() -> Path:
    return data_dir("policies") / "default.yaml"
