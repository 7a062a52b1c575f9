"""Requirements and preflight: MDA `requires`, inferred requirements, live checks, the execute gate."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import capability, check_schema, write
from tests.github_double import GitHubDouble

TOKEN = "ghp_" + "Pr3fl1ght" * 4


def cap_with(requires: str, body: str) -> str:
    fm = f"metadata:\n  mda:\n    requires:\n{requires}"
    return capability(body, fm)


LIST_STEP = "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"


def preflight(
    cli: Any, *args: str, extra: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    result = cli("--output", "json", "capability", "preflight", *args, extra_env=extra)
    doc = result.json()
    if "checks" in doc:
        check_schema(doc, "preflight")
    return result.code, doc


def by_id(doc: dict[str, Any], rid: str) -> dict[str, Any]:
    found = [c for c in doc["checks"] if c["id"] == rid]
    assert found, [c["id"] for c in doc["checks"]]
    return found[0]


def fake_tool(folder: Path, name: str, script: str) -> Path:
    path = folder / name
    write(path, "#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


# -- MDA standard keys --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("constraint", "readiness", "code"),
    [
        ("tool>=1.2", "True", 0),
        ("tool>=2", "False", 5),
        ("tool==1.4.0", "False", 5),
        ("tool", "True", 0),
        ("mute>=1", "Unknown", 0),
        ("absent>=1", "False", 5),
    ],
)
def test_runtime_constraints(
    cli, work: Path, tmp_path: Path, constraint: str, readiness: str, code: int
) -> None:
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "tool", "echo 'tool version 1.4.2 (build 7)'\n")
    fake_tool(bin_dir, "mute", "exit 0\n")
    write(work / "cap.md", cap_with(f'      runtime: ["{constraint}"]\n', LIST_STEP))
    got, doc = preflight(cli, "cap.md", extra={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert got == code
    check = by_id(doc, f"runtime:{constraint}")
    assert check["readiness"] == readiness, check
    assert check["origin"] == "declared"


def test_java_8_is_java_8_though_it_prints_1_8(cli, work: Path, tmp_path: Path) -> None:
    # what Java 8's java -version prints (on stderr); Java 9 on drops the leading 1.
    bin_dir = tmp_path / "bin"
    fake_tool(
        bin_dir,
        "java",
        """echo 'openjdk version "1.8.0_392"' >&2\necho 'OpenJDK Runtime Environment' >&2\n""",
    )
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    for constraint, readiness in (("java>=8", "True"), ("java>=11", "False"), ("java<9", "True")):
        write(work / "cap.md", cap_with(f'      runtime: ["{constraint}"]\n', LIST_STEP))
        _, doc = preflight(cli, "cap.md", extra=env)
        check = by_id(doc, f"runtime:{constraint}")
        assert check["readiness"] == readiness, check
        assert "(prints 1.8.0): 8.0 " in check["reason"], check


def test_runtime_constraints_are_and_combined_and_python_means_python3(cli, work: Path) -> None:
    write(work / "cap.md", cap_with('      runtime: ["python>=3.8", "git>=2.0"]\n', LIST_STEP))
    code, doc = preflight(cli, "cap.md")
    assert code == 0
    assert [by_id(doc, i)["readiness"] for i in ("runtime:python>=3.8", "runtime:git>=2.0")] == [
        "True",
        "True",
    ]
    write(work / "cap.md", cap_with('      runtime: ["python>=3.8", "git>=99"]\n', LIST_STEP))
    code, doc = preflight(cli, "cap.md")
    assert code == 5 and doc["blocking"] == ["runtime:git>=99"]


def test_packages_tools_model_and_cost_hints(cli, work: Path, tmp_path: Path) -> None:
    requires = (
        '      packages: ["git", "surely-not-installed-pkg", "@example/sdk@^2"]\n'
        '      tools: ["Read", "Bash(jq:*)"]\n'
        "      model: { min-context: 200000, vision: true }\n"
        "      cost-hints: { tokens-per-call: 5000, paid-apis: [openai] }\n"
        "      gpu: { vram-gb: 16 }\n"
    )
    write(work / "cap.md", cap_with(requires, LIST_STEP))
    code, doc = preflight(cli, "cap.md")
    assert code == 0  # Unknown never blocks by default
    assert by_id(doc, "package:git")["readiness"] == "True"
    assert by_id(doc, "package:surely-not-installed-pkg")["readiness"] == "Unknown"
    assert by_id(doc, "package:@example/sdk@^2")["readiness"] == "Unknown"
    assert by_id(doc, "tool:Read")["readiness"] == "Unknown"
    assert by_id(doc, "model")["readiness"] == "Unknown"
    assert doc["cost_hints"] == {"tokens-per-call": "5000", "paid-apis": ["openai"]}
    assert doc["warnings"] == ["requires key 'gpu' is not a standard key: shown, not checked"]
    strict, sdoc = preflight(cli, "cap.md", "--strict")
    # tools, model and packages runtime cannot find are advisory: --strict never refuses them
    assert strict == 0 and sdoc["blocking"] == [], sdoc["blocking"]
    text = cli("capability", "preflight", "cap.md").stdout
    assert "cost hints: tokens-per-call=5000" in text
    shown = cli("capability", "show", "cap.md").stdout
    assert "cost-hints" in shown and "package:git  [package, declared]" in shown


# -- inferred ---------------------------------------------------------------------------------------


def test_inferred_requirements_for_every_step_kind(cli, work: Path, tmp_path: Path) -> None:
    body = (
        "version: v1\ninputs:\n  dir:\n    required: true\n  missing:\n    required: true\n"
        "workflow:\n"
        '  - provider: files\n    args: [mkdir, "${dir}"]\n'
        '  - provider: files\n    args: [write, "${dir}/a.txt", x]\n'
        '  - provider: files\n    args: [read, "${dir}/a.txt"]\n'
        "  - provider: files\n    args: [read, absent.txt]\n"
        "  - binary: git\n    args: [status]\n"
        "  - binary: jq\n    args: [.]\n"
        "  - provider: github\n    args: [repo, view, cli/cli]\n"
    )
    write(work / "cap.md", capability(body))
    env = {"PATH": "/usr/bin:/bin", "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    code, doc = preflight(cli, "cap.md", "--input", "dir=out", extra=env)
    assert code == 2  # an input is missing: as plan and execute say
    assert all(c["origin"] == "inferred" for c in doc["checks"])
    ready = {c["id"]: c["readiness"] for c in doc["checks"]}
    assert ready["input:dir"] == "True" and ready["input:missing"] == "False"
    assert ready["operation:files mkdir"] == "True"
    assert ready[f"path:write:{work / 'out'}"] == "True"
    assert (
        ready[f"path:write:{work / 'out' / 'a.txt'}"] == "True"
    )  # its folder is created by step 1
    assert ready[f"path:read:{work / 'out' / 'a.txt'}"] == "True"  # written by step 2
    assert ready[f"path:read:{work / 'absent.txt'}"] == "False"
    assert ready["binary:git"] == "True"
    assert ready["credential:github:github.com"] == "False"
    assert ready["host:api.github.com"] == "True"
    assert "binary:jq" in ready
    assert by_id(doc, "credential:github:github.com")["fix"].startswith(
        "export RUNTIME_GITHUB_TOKEN"
    )
    assert set(doc["blocking"]) >= {
        "input:missing",
        f"path:read:{work / 'absent.txt'}",
        "credential:github:github.com",
    }


def test_writes_into_folders_are_checked_per_folder(cli, work: Path) -> None:
    """Files in two folders, interleaved: each one's check answers for its own folder
    (the folder's answer is kept for the next file in it, never given to another)."""
    (work / "here").mkdir()
    steps = "".join(
        f"  - provider: files\n    args: [write, ./{folder}/{n}.txt, x]\n"
        for n in (1, 2)
        for folder in ("here", "gone")
    )
    write(work / "cap.md", capability("version: v1\nworkflow:\n" + steps))
    code, doc = preflight(cli, "cap.md")
    assert code == 5
    for n in (1, 2):
        here = by_id(doc, f"path:write:{work / 'here' / f'{n}.txt'}")
        gone = by_id(doc, f"path:write:{work / 'gone' / f'{n}.txt'}")
        assert (here["readiness"], gone["readiness"]) == ("True", "False")
        assert str(work / "here") in here["reason"] and "writable" in here["reason"]
        assert str(work / "gone") in gone["reason"] and "does not exist" in gone["reason"]


def test_one_credential_requirement_per_host_with_every_scope_its_steps_need(
    cli, work: Path
) -> None:
    """Steps needing read:org, notifications and read:org again, then one needing none:
    one credential requirement for github.com, its scopes in order of first need."""
    steps = "".join(
        f"  - provider: github\n    args: [{args}]\n"
        for args in ("org, list", "notification, list", "team, list, acme", "user, get")
    )
    write(work / "cap.md", capability("version: v1\nworkflow:\n" + steps))
    env = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    _, doc = preflight(cli, "cap.md", extra=env)
    credentials = [c for c in doc["checks"] if c["type"] == "credential"]
    assert [c["id"] for c in credentials] == ["credential:github:github.com"]
    assert credentials[0]["target"]["scopes"] == ["read:org", "notifications"]
    assert credentials[0]["source"] == "step 1"


# -- network ----------------------------------------------------------------------------------------

GITHUB_STEP = "version: v1\nworkflow:\n  - provider: github\n    args: [repo, view, acme/app]\n"


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN) as double:
        double.add_org("acme")
        double.add_repo("acme", "app")
        yield double


@pytest.fixture
def genv(gh: GitHubDouble) -> dict[str, str]:
    return gh.runtime_env()


@pytest.mark.parametrize(
    ("rule", "ready", "code"),
    [
        ("none", "False", 5),
        ("local", "True", 0),
        ("public", "True", 0),
        ('["127.0.0.*"]', "True", 0),
        ('["api.github.com"]', "False", 5),
    ],
)
def test_network_rule_against_a_loopback_host(
    cli, work: Path, gh: GitHubDouble, genv, rule: str, ready: str, code: int
) -> None:
    write(work / "cap.md", cap_with(f"      network: {rule}\n", GITHUB_STEP))
    got, doc = preflight(cli, "cap.md", extra=genv)
    assert got == code
    assert by_id(doc, "network")["readiness"] == ready
    gh.reset_counters()
    run = cli("capability", "execute", "cap.md", extra_env=genv)
    assert run.code == code
    if code:
        assert "missing capability: network" in run.stderr and "nothing ran" in run.stderr
        assert gh.requests == []


def test_network_local_refuses_github_com(cli, work: Path) -> None:
    write(work / "cap.md", cap_with("      network: local\n", GITHUB_STEP))
    code, doc = preflight(cli, "cap.md", extra={"RUNTIME_GITHUB_TOKEN": TOKEN})
    assert code == 5
    assert "api.github.com is not a local address" in by_id(doc, "host:api.github.com")["reason"]


def test_network_rule_is_enforced_at_execution_on_redirects(
    cli, work: Path, gh: GitHubDouble, genv
) -> None:
    with GitHubDouble(token=TOKEN) as other:
        other.add_org("acme")
        other.add_repo("acme", "app")
        target = other.base_url.replace("127.0.0.1", "localhost")
        gh.inject_redirect("/repos/acme/app$", target)
        write(work / "cap.md", cap_with('      network: ["127.0.0.1"]\n', GITHUB_STEP))
        result = cli("--output", "json", "capability", "execute", "cap.md", extra_env=genv)
        assert result.code == 5
        step = result.json()["steps"][0]
        assert step["status"] == "missing-capability"
        assert "localhost matches none of 127.0.0.1" in step["error"]
        assert other.requests == []


# -- live -------------------------------------------------------------------------------------------


WRITE_STEPS = (
    "version: v1\nworkflow:\n  - provider: github\n    args: [repo, view, acme/app]\n"
    "  - provider: github\n    args: [workflow, run, ci.yml, --repo, acme/app]\n"
)


def test_live_valid_token_with_scopes(cli, work: Path, gh: GitHubDouble, genv, home: Path) -> None:
    write(work / "cap.md", capability(WRITE_STEPS))
    code, doc = preflight(cli, "cap.md", "--live", extra=genv)
    cred = by_id(doc, f"credential:github:{gh.host}")
    assert code == 0, doc["blocking"]
    assert (
        cred["readiness"] == "True" and "octocat" in cred["reason"] and "workflow" in cred["reason"]
    )
    assert "checkedAt" in cred
    assert by_id(doc, "host:127.0.0.1")["readiness"] == "True"
    writes = [r for r in gh.requests if r.method not in ("GET", "HEAD")]
    assert writes == []


def test_live_missing_scope_bad_token_and_host_down(
    cli, work: Path, gh: GitHubDouble, genv
) -> None:
    write(work / "cap.md", capability(WRITE_STEPS))
    gh.scopes = ("repo",)
    code, doc = preflight(cli, "cap.md", "--live", extra=genv)
    assert code == 5
    assert "lacks scope workflow" in by_id(doc, f"credential:github:{gh.host}")["reason"]
    bad = "ghp_" + "Z" * 36
    code, doc = preflight(cli, "cap.md", "--live", extra={**genv, "RUNTIME_GITHUB_TOKEN": bad})
    assert code == 5
    assert "was rejected by" in by_id(doc, f"credential:github:{gh.host}")["reason"]
    assert bad not in json.dumps(doc)
    host = gh.host
    gh.stop()
    code, doc = preflight(cli, "cap.md", "--live", extra=genv)
    assert code == 5
    assert by_id(doc, f"credential:github:{host}")["reason"] == f"{host} did not answer"
    assert by_id(doc, "host:127.0.0.1")["readiness"] == "False"


def test_report_is_secret_free(cli, work: Path, gh: GitHubDouble, genv) -> None:
    write(work / "cap.md", capability(WRITE_STEPS))
    gh.inject("/user$", 500, body={"message": f"remote says {TOKEN}"}, count=None)
    env = {
        **genv,
        "GITHUB_API_URL": gh.api_url.replace("http://", "http://user:pw@") + "?q=secret#frag",
    }
    for args in (("--live",), ()):
        result = cli("--output", "json", "capability", "preflight", "cap.md", *args, extra_env=env)
        text = result.stdout + result.stderr
        assert TOKEN not in text and "remote says" not in text
        assert "user:pw" not in text and "q=secret" not in text and "frag" not in text


# -- the execute gate -----------------------------------------------------------------------------------


def test_execute_gate_refuses_with_nothing_run(cli, work: Path, home: Path) -> None:
    body = (
        "version: v1\nworkflow:\n  - provider: files\n    args: [write, first.txt, x]\n"
        "  - binary: git\n    args: [status]\n"
    )
    write(work / "cap.md", cap_with('      runtime: ["git>=99"]\n', body))
    result = cli("capability", "execute", "cap.md")
    assert result.code == 5
    assert "missing capability: runtime:git>=99: git" in result.stderr
    assert "nothing ran" in result.stderr
    assert not (work / "first.txt").exists()
    records = [
        json.loads(line) for line in (home / "audit" / "audit.jsonl").read_text().splitlines()
    ]
    assert records[-1]["event"] == "run.refused" and records[-1]["status"] == "missing-capability"
    assert not any(r["event"].startswith("step") for r in records)


def test_execute_gate_missing_credential_is_exit_4(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n    args: [write, a.txt, x]\n"
            "  - provider: github\n    args: [user, get]\n"
        ),
    )
    result = cli(
        "capability",
        "execute",
        "cap.md",
        extra_env={"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"},
    )
    assert result.code == 4
    assert "missing credential: credential:github:github.com" in result.stderr
    assert not (work / "a.txt").exists()


def test_unknown_does_not_block_unless_strict(cli, work: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "mute", "exit 0\n")
    write(
        work / "cap.md",
        cap_with(
            '      runtime: ["mute>=1"]\n',
            "version: v1\nworkflow:\n  - provider: files\n    args: [write, a.txt, x]\n",
        ),
    )
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    strict = cli("capability", "execute", "--strict", "cap.md", extra_env=env)
    assert strict.code == 5 and not (work / "a.txt").exists()
    assert cli("capability", "execute", "cap.md", extra_env=env).code == 0


def test_plan_includes_the_preflight(cli, work: Path) -> None:
    write(work / "cap.md", cap_with('      runtime: ["git>=2"]\n', LIST_STEP))
    doc = cli("--output", "json", "capability", "plan", "cap.md").json()
    check_schema(doc, "plan")
    runtime_check = next(c for c in doc["preflight"]["checks"] if c["id"] == "runtime:git>=2")
    assert (
        runtime_check["readiness"] == "Unknown" and "not probed by plan" in runtime_check["reason"]
    )


def test_a_folder_missing_for_many_steps_is_reported_briefly(cli, work: Path) -> None:
    """Twelve writes into one missing folder: five listed, the rest counted, the fix said once."""
    steps = "".join(
        f"  - provider: files\n    args: [write, ./missing/f{i}.txt, x]\n" for i in range(12)
    )
    write(work / "many.md", capability("version: v1\nworkflow:\n" + steps))
    result = cli("capability", "execute", "many.md")
    assert result.code == 5, result.stderr
    assert result.stderr.count("does not exist") == 5, result.stderr
    assert "and 7 more (`runtime capability preflight` lists them all)" in result.stderr
    assert result.stderr.count("files mkdir") == 1, result.stderr
    assert not (work / "missing").exists()


# -- MDA runtime names and --strict -------------------------------------------------------------


@pytest.mark.parametrize(
    ("constraint", "program", "script", "readiness"),
    [
        ("rust>=1.75", "rustc", "echo 'rustc 1.80.0 (051478957 2024-07-21)'\n", "True"),
        ("rust>=1.81", "rustc", "echo 'rustc 1.80.0 (051478957 2024-07-21)'\n", "False"),
        (
            "go>=1.21",
            "go",
            '[ "$1" = version ] && echo "go version go1.22.1 linux/amd64" || exit 2\n',
            "True",
        ),
        (
            "java>=17",
            "java",
            '[ "$1" = -version ] && echo \'openjdk version "21.0.2" 2024-01-16\' >&2 || exit 1\n',
            "True",
        ),
        ("node>=20", "node", "echo v20.11.1\n", "True"),
        ("Python>=3.10", "python3", "echo 'Python 3.11.4'\n", "True"),
    ],
)
def test_well_known_runtime_names_probe_their_program(
    cli, work: Path, tmp_path: Path, constraint: str, program: str, script: str, readiness: str
) -> None:
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, program, script)
    write(work / "cap.md", cap_with(f'      runtime: ["{constraint}"]\n', LIST_STEP))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    got, doc = preflight(cli, "cap.md", extra=env)
    check = by_id(doc, f"runtime:{constraint}")
    assert check["readiness"] == readiness, check
    assert f"probed {program} at {bin_dir / program}" in check["reason"], check
    assert got == (0 if readiness == "True" else 5)


def test_a_runtime_outside_the_should_form_is_a_warning_and_unknown(cli, work: Path) -> None:
    write(work / "cap.md", cap_with('      runtime: ["java 17"]\n', LIST_STEP))
    checked = cli("--output", "json", "capability", "validate", "cap.md")
    assert checked.code == 0
    [problem] = checked.json()["capabilities"][0]["problems"]
    assert problem["severity"] == "warning" and "'java 17'" in problem["message"]
    code, doc = preflight(cli, "cap.md")
    check = by_id(doc, "runtime:java 17")
    assert code == 0 and (check["resolution"], check["readiness"]) == ("Unknown", "Unknown")
    assert cli("capability", "execute", "cap.md").code == 0


def test_strict_refuses_unknowns_that_could_hide_a_failure_only(
    cli, work: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "mute", "exit 0\n")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    advisory = (
        '      tools: ["Read", "Bash"]\n'
        "      model: { min-context: 100000 }\n"
        '      packages: ["@example/sdk@^2", "surely-not-installed-pkg"]\n'
    )
    write(work / "cap.md", cap_with(advisory, LIST_STEP))
    code, doc = preflight(cli, "cap.md", "--strict", extra=env)
    assert code == 0 and doc["blocking"] == [], doc["blocking"]
    assert by_id(doc, "tool:Read")["advisory"] is True
    assert by_id(doc, "model")["readiness"] == "Unknown"
    assert cli("capability", "execute", "--strict", "cap.md", extra_env=env).code == 0
    write(work / "cap.md", cap_with(advisory + '      runtime: ["mute>=1"]\n', LIST_STEP))
    code, doc = preflight(cli, "cap.md", "--strict", extra=env)
    assert code == 5 and doc["blocking"] == ["runtime:mute>=1"]
    assert by_id(doc, "runtime:mute>=1")["advisory"] is False
