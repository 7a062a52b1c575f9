"""``providers/github/mutations.json`` is what its generator makes from the installed schema.

* ``python -m providers.github.mutations_build`` (``make mutations``) makes the table from
  ``@octokit/graphql-schema``: a test fails when the committed one differs, so a new
  schema is reviewed mutation by mutation before it is used;
* each name the rule lists by hand (:data:`~providers.github.mutations_build.DESTROY_NAMES`,
  :data:`~providers.github.mutations_build.WRITE_NAMES`) is one GitHub still publishes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from providers.github import mutations_build
from tests.github_double.schema import SchemaNotInstalledError, schema_path


def _schema_dir() -> Path:
    try:
        return schema_path().parent
    except SchemaNotInstalledError as exc:
        if os.environ.get("RUNTIME_REQUIRE_INTEGRATION") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def test_committed_mutation_table_is_what_the_generator_makes() -> None:
    made = mutations_build.build(_schema_dir())
    assert made == mutations_build.TARGET.read_text(encoding="utf-8"), (
        "providers/github/mutations.json is stale: run `make mutations` and review the diff"
    )


def test_every_name_the_rule_lists_is_in_the_schema() -> None:
    sdl = (_schema_dir() / "schema.graphql").read_text(encoding="utf-8")
    published = set(mutations_build.mutation_names(sdl))
    listed = {*mutations_build.DESTROY_NAMES, *mutations_build.WRITE_NAMES}
    assert listed <= published, f"no longer published: {sorted(listed - published)}"


def test_the_table_knows_the_mutations_the_issue_names() -> None:
    text = mutations_build.TARGET.read_text(encoding="utf-8")
    table = {entry[0]: entry[1] for entry in json.loads(text)["mutations"]}
    for name in ("deleteIssue", "deleteRef", "archiveRepository"):
        assert table[name] == "destroy"
    assert table["addComment"] == "write"
