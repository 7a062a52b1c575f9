"""``files yaml replace`` and ``files yaml set`` through the real CLI: an edit changes the
bytes of the values it sets and nothing else (comments, quoting, anchors, flow and block
styles, CRLF line endings, other documents), keyed-sequence selectors, and the refusals
(an alias, a mapping, a file that is not YAML, a path that is no path)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import capability, check_schema, write

Cli = Callable[..., Any]

# A real-world-shaped manifest: two documents, comments, an anchor and its alias, flow and
# block collections, a literal block, quoting of each kind, CRLF line endings throughout.
DEPLOYMENT = (
    "# the web app: its Deployment and its Service\r\n"
    "apiVersion: apps/v1\r\n"
    "kind: Deployment\r\n"
    "metadata:\r\n"
    "  name: web   # keep this name\r\n"
    "  labels: &labels {app: web, tier: 'front'}\r\n"
    "spec:\r\n"
    "  replicas: 3\r\n"
    "  selector:\r\n"
    "    matchLabels: *labels\r\n"
    "  template:\r\n"
    "    spec:\r\n"
    "      containers:\r\n"
    "        - name: sidecar\r\n"
    "          image: envoy:1.2\r\n"
    "        - name: app\r\n"
    '          image: "gcr.io/acme/app:1.0"   # bumped by CI\r\n'
    "          args: [--port, '8080']\r\n"
    "          command:\r\n"
    "            - serve\r\n"
    "          script: |\r\n"
    "            echo start\r\n"
    "            exec app\r\n"
    "---\r\n"
    "apiVersion: v1\r\n"
    "kind: Service\r\n"
    "metadata: {name: web}\r\n"
    "spec:\r\n"
    "  ports: [{port: 80, targetPort: 8080}]\r\n"
)


def edit(cli: Cli, *args: str, cwd: Path) -> Any:
    return cli("files", "yaml", *args, cwd=cwd)


def only_changed(before: bytes, after: bytes, old: bytes, new: bytes) -> None:
    """``after`` is ``before`` with the one occurrence of ``old`` made ``new``: every byte
    outside the edit is as it was."""
    assert before.count(old) == 1
    start = before.index(old)
    assert after[:start] == before[:start]
    assert after[start : start + len(new)] == new
    assert after[start + len(new) :] == before[start + len(old) :]


def test_set_by_keyed_selector_changes_only_that_scalar(cli: Cli, work: Path) -> None:
    path = work / "deploy" / "deployment.yaml"
    path.parent.mkdir()
    path.write_bytes(DEPLOYMENT.encode())
    before = path.read_bytes()
    result = edit(
        cli,
        "set",
        "--path",
        "spec.template.spec.containers[name=app].image",
        "--value",
        "gcr.io/acme/app:2.0",
        "--dir",
        "deploy",
        "--filename",
        "deployment.yaml",
        "--expected-per-file",
        "1",
        cwd=work,
    )
    assert result.code == 0, result.stderr
    assert "edited 1 of 1 files named deployment.yaml under deploy (1 match)" in result.stdout
    only_changed(before, path.read_bytes(), b'"gcr.io/acme/app:1.0"', b'"gcr.io/acme/app:2.0"')


@pytest.mark.parametrize(
    ("path", "value", "old", "new"),
    [
        # a plain number stays plain
        ("spec.replicas", "5", b"replicas: 3", b"replicas: 5"),
        # a plain string that would read as a boolean is quoted: it stays a string
        (
            "spec.template.spec.containers[0].name",
            "true",
            b"- name: sidecar",
            b'- name: "true"',
        ),
        # single quotes stay single, inside a flow mapping of the second document's too
        ("spec.template.spec.containers[1].args[1]", "it's", b"'8080'", b"'it''s'"),
        # a literal block stays a block, its lines indented as they were, CRLF kept
        (
            "spec.template.spec.containers[name=app].script",
            "echo go\nexec app --fast\n",
            b"            echo start\r\n            exec app\r\n",
            b"            echo go\r\n            exec app --fast\r\n",
        ),
        # a value a flow collection cannot hold plain is double-quoted
        ("spec.ports[0].port", "80, 81", b"port: 80,", b'port: "80, 81",'),
    ],
)
def test_set_keeps_the_style_where_it_can(
    cli: Cli, work: Path, path: str, value: str, old: bytes, new: bytes
) -> None:
    target = write(work / "deployment.yaml", "")
    target.write_bytes(DEPLOYMENT.encode())
    before = target.read_bytes()
    result = edit(
        cli,
        "set",
        "--path",
        path,
        "--value",
        value,
        "--dir",
        ".",
        "--filename",
        target.name,
        cwd=work,
    )
    assert result.code == 0, result.stderr
    only_changed(before, target.read_bytes(), old, new)


def test_set_refuses_a_value_shared_through_an_alias(cli: Cli, work: Path) -> None:
    target = write(work / "deployment.yaml", "")
    target.write_bytes(DEPLOYMENT.encode())
    before = target.read_bytes()
    result = edit(
        cli,
        "set",
        "--path",
        "spec.selector.matchLabels.app",
        "--value",
        "api",
        "--dir",
        ".",
        "--filename",
        "deployment.yaml",
        cwd=work,
    )
    assert result.code == 1
    assert "deployment.yaml:10:18: --path spec.selector.matchLabels.app reaches" in result.stderr
    assert "alias *labels" in result.stderr and "nothing was written" in result.stderr
    assert target.read_bytes() == before


def test_set_refuses_a_mapping(cli: Cli, work: Path) -> None:
    write(work / "a.yaml", "spec:\n  template: {x: 1}\n")
    result = edit(cli, "set", "path=spec.template", "value=x", "dir=.", "filename=a.yaml", cwd=work)
    assert result.code == 1
    assert "a.yaml:2:13: --path spec.template is a mapping, not a scalar" in result.stderr


def test_replace_every_scalar_value_over_files_all_or_nothing(cli: Cli, work: Path) -> None:
    a = write(work / "svc-a" / "build.yaml", "image: acme/app:1  # pin\nbase: acme/app:1\n")
    b = write(work / "svc-b" / "build.yaml", "steps:\n  - image: 'acme/app:1'\n")
    other = write(work / "svc-c" / "other.yaml", "image: acme/app:1\n")
    # svc-a holds two matches: with one expected per file, nothing is written anywhere
    result = edit(
        cli,
        "replace",
        "--from",
        "acme/app:1",
        "--to",
        "acme/app:2",
        "--dir",
        ".",
        "--filename",
        "build.yaml",
        "--expected-per-file",
        "1",
        cwd=work,
    )
    assert result.code == 1
    assert "svc-a/build.yaml has 2 matches: 1 expected per file" in result.stderr
    assert "nothing was written" in result.stderr
    assert "acme/app:2" not in a.read_text() + b.read_text()
    result = edit(
        cli,
        "replace",
        "--from=acme/app:1",
        "--to=acme/app:2",
        "--dir=.",
        "--filename=build.yaml",
        cwd=work,
    )
    assert result.code == 0, result.stderr
    assert a.read_text() == "image: acme/app:2  # pin\nbase: acme/app:2\n"
    assert b.read_text() == "steps:\n  - image: 'acme/app:2'\n"
    assert other.read_text() == "image: acme/app:1\n"  # not named build.yaml


def test_replace_leaves_keys_and_other_values(cli: Cli, work: Path) -> None:
    text = "v1: v1\nlist: [v1, v10, 'v1']\nnote: not v1\n"
    target = write(work / "a.yaml", text)
    result = edit(cli, "replace", "from=v1", "to=v2", "dir=.", "include=*.yaml", cwd=work)
    assert result.code == 0, result.stderr
    assert target.read_text() == "v1: v2\nlist: [v2, v10, 'v2']\nnote: not v1\n"


def test_a_file_that_is_not_yaml_is_named_and_nothing_is_written(cli: Cli, work: Path) -> None:
    good = write(work / "a" / "build.yaml", "image: x\n")
    write(work / "b" / "build.yaml", "image: [x\nother: y\n")
    result = edit(cli, "replace", "from=x", "to=y", "dir=.", "filename=build.yaml", cwd=work)
    assert result.code == 1
    assert "b/build.yaml:2:6: not valid YAML" in result.stderr
    assert good.read_text() == "image: x\n"


def test_a_path_that_is_no_path_is_refused_at_its_position(cli: Cli, work: Path) -> None:
    cap = write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n"
            "  - provider: files\n"
            "    args: [yaml, set, --path, 'a[name', --value, x, --dir, ., --filename, a.yaml]\n"
        ),
    )
    result = cli("capability", "validate", str(cap), cwd=work)
    assert result.code == 2
    assert (
        "cap.md:9:31: error: step 1: --path 'a[name' has a '[' at 2 that no ']' closes"
        in result.stdout
    )


def test_an_edit_needs_a_name_or_a_glob(cli: Cli, work: Path) -> None:
    result = edit(cli, "replace", "--from", "a", "--to", "b", "--dir", ".", cwd=work)
    assert result.code == 2
    assert "needs --filename NAME or --include GLOB" in result.stderr


def test_json_gives_each_file_its_outcome_and_digests(cli: Cli, work: Path) -> None:
    import hashlib

    a = write(work / "a" / "build.yaml", "tag: '1'\n")
    write(work / "b" / "build.yaml", "tag: '2'\n")
    before = hashlib.sha256(a.read_bytes()).hexdigest()
    result = cli(
        "-o", "json", "files", "yaml", "set", "path=tag", "value=3", "dir=.",
        "filename=build.yaml", cwd=work,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    check_schema(json.loads(result.stdout), "execute")
    data = json.loads(result.stdout)["steps"][0]["data"]
    files = {f["path"]: f for f in data["files"]}
    assert files["a/build.yaml"]["outcome"] == "changed"
    assert files["a/build.yaml"]["before_sha256"] == before
    assert files["a/build.yaml"]["after_sha256"] == hashlib.sha256(a.read_bytes()).hexdigest()
    assert a.read_text() == "tag: '3'\n"
    assert data["changed"] == 2 and data["matches"] == 2
