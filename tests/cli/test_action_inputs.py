"""The GitHub Action's inputs (issue 18 B): values are literal, multi-line values are JSON.

Each test runs the Action the way GitHub Actions runs it: action.yml is read,
the `with:` inputs (with action.yml's defaults) fill the `${{ inputs.X }}`
expressions of the composite step's `env:` (the runner also exposes
`INPUT_X`), and the step's `run:` line is run by bash with `GITHUB_OUTPUT`,
`GITHUB_ACTION_PATH` and a `PATH` holding the installed runtime
(`RUNTIME_ACTION_SKIP_INSTALL=1` skips the pip install). The outputs
`result` and `exit-code` are read back from the `GITHUB_OUTPUT` file.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import strictyaml

from tests.conftest import EXAMPLES, REPO, RUNTIME_BIN, check_schema

NETRC_SECRET = "machine api.example.com login me password netrc-SECRET-4b8e2a"
ROUNDTRIP = str(EXAMPLES / "notes-roundtrip.md")


def _action() -> dict[str, Any]:
    data: dict[str, Any] = strictyaml.dirty_load(
        (REPO / "action.yml").read_text(encoding="utf-8"), allow_flow_style=True
    ).data
    return data


class Ran:
    def __init__(self, proc: subprocess.CompletedProcess[str], outputs: dict[str, str]) -> None:
        self.code = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.outputs = outputs

    @property
    def result(self) -> Any:
        return json.loads(self.outputs["result"])


@pytest.fixture
def action(tmp_path: Path, work: Path, home: Path) -> Any:
    user_home = tmp_path / "user"
    user_home.mkdir()
    (user_home / ".netrc").write_text(NETRC_SECRET + "\n", encoding="utf-8")

    def run(**with_: str) -> Ran:
        spec = _action()
        inputs = {name: decl.get("default", "") for name, decl in spec["inputs"].items()}
        assert set(with_) <= set(inputs), f"not inputs of action.yml: {set(with_) - set(inputs)}"
        inputs.update(with_)
        (step,) = spec["runs"]["steps"]
        env = {
            "PATH": f"{RUNTIME_BIN.parent}:/usr/bin:/bin",
            "HOME": str(user_home),
            "LANG": "C.UTF-8",
            "RUNTIME_HOME": str(home),
            "GITHUB_ACTION_PATH": str(REPO),
            "GITHUB_OUTPUT": str(tmp_path / "github_output"),
            "RUNTIME_ACTION_SKIP_INSTALL": "1",
        }
        env.update({f"INPUT_{name.upper()}": value for name, value in inputs.items()})
        for key, expression in step["env"].items():
            found = re.fullmatch(r"\$\{\{ inputs\.([A-Za-z0-9_-]+) \}\}", expression)
            assert found, expression
            env[key] = inputs[found.group(1)]
        (tmp_path / "github_output").write_text("")
        proc = subprocess.run(
            [step.get("shell", "bash"), "-e", "-c", step["run"]],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=120,
        )
        ran = Ran(proc, _outputs((tmp_path / "github_output").read_text()))
        everything = proc.stdout + proc.stderr + (tmp_path / "github_output").read_text()
        audit = home / "audit" / "audit.jsonl"
        if audit.exists():
            everything += audit.read_text()
        assert "netrc-SECRET" not in everything
        for path in work.rglob("*"):
            if path.is_file():
                assert "netrc-SECRET" not in path.read_text(errors="replace"), path
        return ran

    return run


def _outputs(text: str) -> dict[str, str]:
    outputs: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if "<<" in lines[i]:
            key, delimiter = lines[i].split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[key] = "\n".join(lines[i + 1 : end])
            i = end + 1
        else:
            key, _, value = lines[i].partition("=")
            outputs[key] = value
            i += 1
    return outputs


def _ok(ran: Ran) -> None:
    assert ran.code == 0, ran.stdout + ran.stderr
    assert ran.outputs["exit-code"] == "0"
    assert ran.result["status"] == "ok"


def test_a_value_starting_with_at_is_text_never_a_file(action: Any, work: Path) -> None:
    ran = action(capability=ROUNDTRIP, inputs="folder=out\nnote=@~/.netrc\n")
    _ok(ran)
    assert (work / "out" / "note.txt").read_text() == "@~/.netrc\n"

    ran = action(capability=ROUNDTRIP, inputs="folder=out\nnote=@@twice")
    _ok(ran)
    assert (work / "out" / "note.txt").read_text() == "@@twice\n"

    ran = action(capability=ROUNDTRIP, **{"inputs-json": '{"folder": "out", "note": "@~/.netrc"}'})
    _ok(ran)
    assert (work / "out" / "note.txt").read_text() == "@~/.netrc\n"


def test_a_multi_line_value_is_one_input(action: Any, work: Path) -> None:
    note = "first line\nfooter=@~/.netrc\n\nfolder=/etc\n"
    ran = action(
        capability=ROUNDTRIP, inputs="folder=out", **{"inputs-json": json.dumps({"note": note})}
    )
    _ok(ran)
    assert (work / "out" / "note.txt").read_text() == note
    assert not Path("/etc/note.txt").exists()


def test_an_expression_filled_with_tojson_stays_one_value(action: Any, work: Path) -> None:
    """What `{"note": ${{ toJSON(github.event.issue.title) }}}` becomes for a hostile title."""
    title = '", "folder": "/tmp/elsewhere", "x": "\n@~/.netrc \\ ${folder} $(id)'
    text = '{"folder": "out", "note": ' + json.dumps(title) + "}"
    ran = action(capability=ROUNDTRIP, **{"inputs-json": text})
    _ok(ran)
    assert (work / "out" / "note.txt").read_text() == title + "\n"


def test_numbers_and_booleans_are_their_json_text_and_null_is_not_given(
    action: Any, work: Path
) -> None:
    ran = action(capability=ROUNDTRIP, **{"inputs-json": '{"folder": "out", "note": 42}'})
    _ok(ran)
    assert (work / "out" / "note.txt").read_text() == "42\n"
    ran = action(capability=ROUNDTRIP, **{"inputs-json": '{"folder": "out", "note": true}'})
    _ok(ran)
    assert (work / "out" / "note.txt").read_text() == "true\n"
    ran = action(capability=ROUNDTRIP, **{"inputs-json": '{"folder": "out", "note": null}'})
    assert ran.code == 2 and ran.result["error"]["code"] == "missing-input"


@pytest.mark.parametrize(
    ("with_", "message"),
    [
        ({"inputs-json": '{"folder": "out", "note": '}, "inputs-json is not valid JSON"),
        ({"inputs-json": '["folder=out"]'}, "inputs-json must be a JSON object"),
        ({"inputs-json": '{"folder": "out", "note": ["a"]}'}, "the value of 'note' must be"),
        ({"inputs-json": '{"folder": "out", "note": "a\\u0000b"}'}, "contains a NUL byte"),
        (
            {"inputs": "folder=out\nnote=a", "inputs-json": '{"note": "b"}'},
            "input 'note' is given twice",
        ),
        ({"inputs": "folder=out\njust some text"}, "inputs, line 2: 'just some text' is not"),
        # a name that is no text: said as its escape, in a document a strict reader takes
        ({"inputs-json": '{"folder": "out", "n\\ud800": "x"}'}, "n\\ud800"),
    ],
)
def test_inputs_that_cannot_be_read_are_exit_2_with_an_error_document(
    action: Any, work: Path, with_: dict[str, str], message: str
) -> None:
    ran = action(capability=ROUNDTRIP, **with_)
    assert ran.code == 2, ran.stdout + ran.stderr
    assert ran.outputs["exit-code"] == "2"
    doc = ran.result
    check_schema(doc, "error")
    assert doc["exit_code"] == 2
    assert message in doc["error"]["message"], doc
    json.dumps(doc, ensure_ascii=False).encode("utf-8")  # no lone surrogate in it
    assert not (work / "out").exists()  # nothing ran


def test_inputs_keep_working_for_the_documented_example(action: Any, work: Path) -> None:
    ran = action(capability=ROUNDTRIP, inputs="folder=out\nnote=a = b\n")
    _ok(ran)
    assert (work / "out" / "note.txt").read_text() == "a = b\n"
    missing = action(capability=ROUNDTRIP, inputs="folder=out\n")
    assert missing.code == 2 and missing.outputs["exit-code"] == "2"
    assert missing.result["error"]["code"] == "missing-input"
