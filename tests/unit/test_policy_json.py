"""policies/default.json is the shipped default.yaml, parsed; it must never drift from it."""

from __future__ import annotations

import hashlib
import json

from runtime.home.resources import default_policy_file
from runtime.plan.policy_file import default_policy_data, parse_policy_text


def test_default_json_matches_the_yaml() -> None:
    raw = default_policy_file().read_bytes()
    shipped = json.loads(default_policy_file().with_suffix(".json").read_text())
    assert shipped["sha256"] == hashlib.sha256(raw).hexdigest(), "run `make policy-json`"
    assert shipped["data"] == parse_policy_text(raw.decode(), "default")
    assert default_policy_data() == shipped["data"]
