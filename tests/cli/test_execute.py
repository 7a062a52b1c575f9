"""`runtime capability execute / plan`, direct provider calls and `command run`, through the real entry point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runtime.execute import sandbox
from tests.conftest import (
    EXAMPLES,
    RUNTIME_BIN,
    capability,
    check_schema,
    run_checkout,
    without_read_override,
    write,
)


def audit(home: Path) -> list[dict]:
    path = home / "audit" / "audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def user_policy(tmp_path: Path, text: str) -> dict[str, str]:
    path = write(tmp_path / "policy.yaml", text)
    return {"RUNTIME_POLICY_FILE": str(path)}


def execute_notes(cli: Callable[..., Any], note: str = "x") -> Any:
    """The shipped notes-roundtrip example through the CLI, writing under notes/."""
    return cli(
        "capability",
        "execute",
        str(EXAMPLES / "notes-roundtrip.md"),
        "--input",
        "folder=notes",
        "--input",
        f"note={note}",
    )


def test_notes_roundtrip_example(cli, work: Path, home: Path) -> None:
    result = execute_notes(cli, "Hello = world")
    assert result.code == 0, result.stdout + result.stderr
    progress = result.stderr.splitlines()
    assert progress[0].startswith("[1/4] files mkdir notes ... ok ")
    assert progress[-1].startswith("ok: 4/4 steps succeeded (run ")
    assert "Hello = world" in result.stdout.splitlines()
    assert (work / "notes" / "note.txt").read_bytes() == b"Hello = world\n"
    # rerun: same inputs, same outcome
    assert execute_notes(cli, "Hello = world").code == 0


def test_log_append_and_git_examples(cli, work: Path) -> None:
    for _ in range(2):
        assert (
            cli(
                "capability",
                "execute",
                str(EXAMPLES / "log-append.md"),
                "--input",
                "log=app.log",
                "--input",
                "message=deployed",
            ).code
            == 0
        )
    assert (work / "app.log").read_text() == "deployed\ndeployed\n"
    subprocess.run(["git", "init", "-q", str(work / "repo")], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(work / "repo"),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first",
        ],
        check=True,
    )
    result = cli(
        "--output",
        "json",
        "capability",
        "execute",
        str(EXAMPLES / "git-readiness.md"),
        "--input",
        "repository=repo",
    )
    assert result.code == 0, result.stdout
    doc = result.json()
    check_schema(doc, "execute")
    assert doc["steps"][2]["data"]["stdout"].strip().endswith("first")
    assert doc["steps"][0]["binary_path"].endswith("/git")


def test_json_document_and_audit_records(cli, work: Path, home: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  api_token:\n    description: a secret\n    required: true\n"
            'workflow:\n  - provider: files\n    args: [write, out.txt, "${api_token}"]\n'
            "  - provider: files\n    args: [read, out.txt]\n"
        ),
    )
    result = cli(
        "--output", "json", "capability", "execute", "cap.md", "--input", "api_token=s3cr3t-value"
    )
    assert result.code == 0
    doc = result.json()
    check_schema(doc, "execute")
    assert doc["inputs"] == {"api_token": "[REDACTED]"}
    assert doc["steps"][0]["args"] == ["write", "out.txt", "[REDACTED]"]
    assert doc["steps"][1]["output"] == "[REDACTED]\n"
    assert "s3cr3t-value" not in result.stdout + result.stderr
    records = audit(home)
    assert "s3cr3t-value" not in (home / "audit" / "audit.jsonl").read_text()
    run = [r for r in records if r.get("run_id") == doc["run_id"]]
    assert [r["event"] for r in run] == [
        "run.start",
        "step.start",
        "step",
        "step.start",
        "step",
        "run.end",
    ]
    step = run[2]
    for key in (
        "time",
        "capability",
        "sha256",
        "step",
        "provider",
        "operation",
        "args",
        "transport",
        "decision",
        "status",
        "exit_code",
        "duration_ms",
    ):
        assert key in step, key
    assert step["sha256"] == doc["capability"]["sha256"]
    shown = cli("--output", "json", "audit", "show", doc["run_id"]).json()
    assert len(shown["records"]) == 6
    assert "step 2" in cli("audit", "tail", "-n", "3").stdout


def test_stop_at_first_failure_reports_not_run_and_applied_steps(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n"
            "  - provider: files\n    args: [write, a.txt, one]\n"
            "  - provider: files\n    args: [read, binary.dat]\n"
            "  - provider: files\n    args: [write, c.txt, three]\n"
        ),
    )
    (work / "binary.dat").write_bytes(b"\xff\xfe\x00")
    result = cli("capability", "execute", "cap.md")
    assert result.code == 1
    assert "not UTF-8 text" in result.stderr
    assert "failed: step 2 (files read) failed; step 3 not run" in result.stderr
    assert "note: step 1 stays applied: capabilities are not transactional" in result.stderr
    assert (work / "a.txt").exists() and not (work / "c.txt").exists()
    doc = cli("--output", "json", "capability", "execute", "cap.md").json()
    check_schema(doc, "execute")
    assert [s["status"] for s in doc["steps"]] == ["ok", "failed", "not-run"]
    assert doc["summary"] == {"total": 3, "ok": 1, "not_run": 1, "failed_step": 2}


@pytest.mark.parametrize(
    "value",
    [
        "two words",
        "quotes ' and \"",
        "$HOME and $(id)",
        "${other}",
        "`id`",
        "a; rm -rf /",
        "a | b",
        "line1\nline2",
        "-n",
        "--",
        "--force",
        "${{ github.ref }}",
        "key=value=more",
        "ünïcødé ✓",
    ],
)
def test_substitution_is_literal(cli, work: Path, value: str) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  v:\n    required: true\n  other:\n    required: false\n"
            'workflow:\n  - provider: files\n    args: [write, out.txt, "[${v}]"]\n'
        ),
    )
    result = cli("capability", "execute", "cap.md", "--input", f"v={value}")
    assert result.code == 0, result.stdout + result.stderr
    assert (work / "out.txt").read_text(encoding="utf-8") == f"[{value}]\n"


def test_unsupplied_optional_and_actions_expressions_stay_literal(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  opt:\n    required: false\n"
            'workflow:\n  - provider: files\n    args: [write, out.txt, "${opt} ${{ github.ref }} $${opt}"]\n'
        ),
    )
    assert cli("capability", "execute", "cap.md").code == 0
    assert (work / "out.txt").read_text() == "${opt} ${{ github.ref }} $${opt}\n"


def test_binary_gets_one_argument_per_arg_without_a_shell(cli, work: Path, tmp_path: Path) -> None:
    extra = user_policy(tmp_path, "allowed_binaries: [printf]\n")
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  v:\n    required: true\n"
            'workflow:\n  - binary: printf\n    args: ["<%s>\\n", "${v}", "*"]\n'
        ),
    )
    result = cli(
        "--output",
        "json",
        "capability",
        "execute",
        "cap.md",
        "--input",
        "v=a b; echo pwned $(id)",
        extra_env=extra,
    )
    assert result.code == 0, result.stdout
    assert result.json()["steps"][0]["data"]["stdout"] == "<a b; echo pwned $(id)>\n<*>\n"


def test_input_errors(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  a:\n    required: true\n  b:\n    required: true\n  c:\n    required: false\n"
            'workflow:\n  - provider: files\n    args: [write, out.txt, "${a}${b}"]\n'
        ),
    )
    missing = cli("capability", "execute", "cap.md")
    assert missing.code == 2 and "missing required inputs: a, b" in missing.stderr
    typo = cli(
        "capability", "execute", "cap.md", "--input", "a=1", "--input", "b=2", "--input", "cc=3"
    )
    assert (
        typo.code == 2 and "unknown input: cc" in typo.stderr and "declares: a, b, c" in typo.stderr
    )
    nul = cli("capability", "execute", "cap.md", "--input", "a=x\x00y", "--input", "b=2")
    assert nul.code == 2 and "NUL" in nul.stderr
    write(work / "value.txt", "from a file\n")
    ok = cli("capability", "execute", "cap.md", "--input", "a=@value.txt", "--input", "b=@@at")
    assert ok.code == 0
    assert (work / "out.txt").read_text() == "from a file\n@at\n"
    nofile = cli("capability", "execute", "cap.md", "--input", "a=@nope.txt", "--input", "b=1")
    assert nofile.code == 2 and "cannot read the file" in nofile.stderr
    assert not (work / "nope.txt").exists()


def test_an_input_that_is_not_utf8_is_refused_before_the_first_step(cli_proc, work: Path) -> None:
    # the command line's bytes as the shell gives them (`$(printf 'ok\xffbad')`): the
    # example's first step makes the folder, its second would write the note
    args = ("capability", "execute", str(EXAMPLES / "notes-roundtrip.md"))
    result = cli_proc(*args, "--input", "folder=notes", "--input", "note=ok\udcffbad")
    assert result.code == 2, result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        "error: input 'note' is not UTF-8 text (byte 0xff at character 3)",
        "  hint: inputs are UTF-8 text: convert the value (iconv -t UTF-8), or let a step "
        "read the bytes from a file",
    ]
    assert not (work / "notes").exists()


def test_a_direct_call_with_text_that_is_not_utf8_is_refused_before_it_runs(
    cli_proc, work: Path
) -> None:
    # `runtime files write x.txt $'ok\xffbad'`: CONTENT is text, refused as an input is
    # (it failed in its step, exit 1); a file name is the file system's bytes and may
    # hold such a byte
    result = cli_proc("files", "write", "x.txt", "ok\udcffbad")
    assert result.code == 2, result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        "error: CONTENT is not UTF-8 text (byte 0xff at character 3) (step 1); nothing ran",
        "  hint: 'write' takes text for CONTENT: convert the value (iconv -t UTF-8)",
    ]
    assert not (work / "x.txt").exists()
    # a field of `api`'s body, which is no declared option: refused before any request
    field = cli_proc("github", "api", "POST", "/repos/acme/app/issues", "title=ok\udcffbad")
    assert field.code == 2, field.stdout + field.stderr
    assert field.stderr.startswith(
        "error: title= is not UTF-8 text (byte 0xff at character 9 of key=value) (step 1)"
    )
    named = cli_proc("files", "write", "ok\udcff.txt", "text")
    assert named.code == 0, named.stderr
    assert (work / os.fsdecode(b"ok\xff.txt")).read_text() == "text\n"


def test_invalid_capability_refuses_to_start(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n    args: [write, x.txt, y]\n  - provider: files\n    args: [bogus]\n"
        ),
    )
    result = cli("capability", "execute", "cap.md")
    assert result.code == 2
    assert "cap.md:11:12: error" in result.stderr
    assert not (work / "x.txt").exists()


# -- policy -------------------------------------------------------------------------------


def test_destructive_operation_is_refused_with_its_rule(cli, work: Path, home: Path) -> None:
    write(work / "victim.txt", "keep me")
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n    args: [write, a.txt, x]\n"
            "  - provider: files\n    args: [delete, victim.txt]\n"
        ),
    )
    result = cli("capability", "execute", "cap.md")
    assert result.code == 3
    assert (
        "step 2 (files delete victim.txt) refused by effect destroy (allowed_destructive): "
        "'files delete' destroys what it names, and no allowed_destructive entry lists it"
        in result.stderr
    )
    assert "allowed_destructive: ['files delete'] allows every call" in result.stderr
    assert (work / "victim.txt").exists() and not (work / "a.txt").exists()
    assert audit(home)[-1]["event"] == "run.refused"


def test_a_policy_allows_a_destructive_operation_deliberately(cli, work: Path) -> None:
    write(work / "victim.txt", "delete me")
    write(work / "keep.txt", "keep me")
    cap = "version: v1\nworkflow:\n  - provider: files\n    args: [delete, victim.txt]\n"
    write(work / "cap.md", capability(cap))
    policy = write(work / "policy.yaml", "allowed_destructive: [files delete victim.txt]\n")
    env = {"RUNTIME_POLICY_FILE": str(policy)}
    result = cli("capability", "execute", "cap.md", extra_env=env)
    assert result.code == 0, result.stdout + result.stderr
    assert not (work / "victim.txt").exists()
    # the entry names one call: another file stays refused
    write(work / "other.md", capability(cap.replace("victim.txt", "keep.txt")))
    refused = cli("--output", "json", "policy", "check", "other.md", extra_env=env)
    assert refused.code == 3
    assert refused.json()["decisions"][0]["rule"] == "effect destroy (allowed_destructive)"
    assert (work / "keep.txt").exists()
    shown = cli("--output", "json", "policy", "show", extra_env=env).json()["policy"]
    assert shown["allowed_destructive"] == [
        {"operation": "files delete victim.txt", "source": str(policy)}
    ]
    text = cli("policy", "show", extra_env=env).stdout
    assert (
        f"allowed_destructive (a destroy effect runs only when listed here):\n    files delete victim.txt  [{policy}]"
        in text
    )


def test_delete_of_a_symbolic_link_leaves_the_link_and_its_file(cli, work: Path) -> None:
    write(work / "data.txt", "precious\n")
    (work / "link.txt").symlink_to("data.txt")
    policy = write(work / "policy.yaml", "allowed_destructive: [files delete]\n")
    env = {"RUNTIME_POLICY_FILE": str(policy)}
    result = cli("files", "delete", "link.txt", extra_env=env)
    assert result.code == 1, result.stdout + result.stderr
    assert (
        f"error: 'link.txt' is a symbolic link (to {work / 'data.txt'}); `files delete` "
        "removes files, not links, and leaves both as they are" in result.stderr
    )
    assert (work / "data.txt").read_text() == "precious\n"
    assert (work / "link.txt").is_symlink()
    # the file itself, named, is deleted
    assert cli("files", "delete", "data.txt", extra_env=env).code == 0
    assert not (work / "data.txt").exists()


def test_a_write_leaves_a_file_it_may_not_write_and_keeps_an_owner(
    cli, env: dict[str, str], work: Path
) -> None:
    # as the shell's `>` and `>>` would: a read-only file is left as it is (root reads and
    # writes anything, so as root its override is dropped for the run)
    locked = write(work / "locked.txt", "old\n")
    locked.chmod(0o444)
    as_user = without_read_override()
    for op in ("write", "append"):
        refused = run_checkout(env, work, "files", op, "locked.txt", "new", prefix=as_user)
        assert refused.code == 1, refused.stdout + refused.stderr
        assert (
            f"error: 'locked.txt' is not writable ({locked}); it was left as it is"
            in refused.stderr
        )
        assert "hint: make it writable first (chmod u+w locked.txt)" in refused.stderr
    assert locked.read_text() == "old\n"
    assert [p.name for p in work.iterdir() if p.name.startswith(".locked")] == []
    if os.geteuid() != 0:
        return  # giving a file to another user takes root
    shared = write(work / "shared.txt", "one\n")
    os.chown(shared, 65534, 65534)  # nobody
    shared.chmod(0o664)
    assert cli("files", "append", "shared.txt", "two").code == 0
    assert cli("files", "write", "shared.txt", "three").code == 0
    kept = shared.stat()
    assert (kept.st_uid, kept.st_gid, kept.st_mode & 0o777) == (65534, 65534, 0o664)
    assert shared.read_text() == "three\n"


def test_a_file_path_ending_in_a_slash_and_a_name_with_a_newline(cli, work: Path) -> None:
    # as the shell: `echo x > a.txt/` writes nothing ("Not a directory")
    for op in ("write", "append"):
        refused = cli("files", op, "a.txt/", "x")
        assert refused.code == 1
        assert "'a.txt/' ends with '/', which names a folder, not a file" in refused.stderr
    assert not (work / "a.txt").exists()
    # a newline in a name keeps the step's line one line (quoted, escaped)
    wrote = cli("files", "write", "nl\nname.txt", "hi")
    assert wrote.code == 0
    assert wrote.stdout == "wrote 3 bytes to 'nl\\nname.txt'\n"
    assert (work / "nl\nname.txt").read_text() == "hi\n"


def test_paths_outside_the_roots_are_refused(cli, work: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, work / "link")
    for path in ("../outside/x.txt", str(outside / "x.txt"), "link/x.txt", "a/../../outside/x.txt"):
        result = cli("files", "write", path, "data")
        assert result.code == 3, path
        assert f"outside the write root {work}" in result.stderr
    assert list(outside.iterdir()) == []
    read = cli("files", "read", "/etc/hostname")
    assert read.code == 3 and f"read root {work}" in read.stderr


def test_denied_argument_runs_apply_after_substitution(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  flag:\n    required: true\n"
            'workflow:\n  - binary: git\n    args: [push, origin, "${flag}"]\n'
        ),
    )
    for flag in ("--force", "-f", "-fu", "--force=yes"):
        # an input never becomes an option: refused before the policy is even asked
        result = cli("capability", "execute", "cap.md", "--input", f"flag={flag}")
        assert result.code == 2, flag
        assert "cap.md:12:26: error: step 1 (git): the value of input 'flag'" in result.stderr
        assert "starts with '-'" in result.stderr
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  ref:\n    required: true\n"
            'workflow:\n  - binary: git\n    args: [push, origin, "${ref}"]\n'
        ),
    )
    for ref in ("+main", ":main", "+refs/heads/main:refs/heads/main"):
        result = cli("capability", "execute", "cap.md", "--input", f"ref={ref}")
        assert result.code == 3, ref
        assert "denied_arguments: git push" in result.stderr
    clean = cli("command", "run", "git", "clean", "-d", "-x", "-f")
    assert clean.code == 3


def test_user_policy_can_deny_more_but_never_lift_a_default_denial(
    cli, work: Path, tmp_path: Path
) -> None:
    extra = user_policy(tmp_path, "allowed_binaries: [rm]\ndenied_binaries: [ls]\n")
    write(work / "cap.md", capability("version: v1\nworkflow:\n  - binary: ls\n    args: [.]\n"))
    denied = cli("capability", "execute", "cap.md", extra_env=extra)
    assert denied.code == 3 and f"denied_binaries: ls ({tmp_path / 'policy.yaml'})" in denied.stderr
    rm = cli("command", "run", "rm", "-rf", "x", extra_env=extra)
    assert rm.code == 3 and "denied_binaries: rm (default)" in rm.stderr
    shown = cli("policy", "show", extra_env=extra).stdout
    assert "also denied, so never run: ls, rm" in shown


def test_policy_typo_is_a_positioned_error(cli, work: Path, tmp_path: Path) -> None:
    extra = user_policy(tmp_path, "version: v1\nallowed_binary: [x]\n")
    result = cli("policy", "show", extra_env=extra)
    assert result.code == 2
    assert (
        f"{tmp_path / 'policy.yaml'}:2:1: error: unknown policy key 'allowed_binary'"
        in result.stderr
    )


def test_a_policy_that_is_not_utf8_is_named_at_its_byte(cli, tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_bytes("version: v1\n# café\n".encode("latin-1"))
    result = cli("policy", "show", extra_env={"RUNTIME_POLICY_FILE": str(path)})
    assert result.code == 2
    assert result.stderr.splitlines() == [
        f"error: {path}:2:6: the policy file is not UTF-8 text (byte 0xe9)",
        f"  hint: fix {path}, or unset RUNTIME_POLICY_FILE (saved as UTF-8: iconv -f LATIN1 "
        "-t UTF-8)",
    ]


def test_a_policy_folder_that_yaml_reads_as_a_number_is_refused(cli, tmp_path: Path) -> None:
    # as config.yaml's capability_sources: a plain 5 is the number 5, no folder name
    extra = user_policy(tmp_path, "version: v1\nwrite_roots: [5, ./out]\n")
    refused = cli("policy", "show", extra_env=extra)
    assert refused.code == 2
    assert "policy.yaml:2:15: error: each entry of 'write_roots' must be a string, not the " in (
        refused.stderr
    )
    assert 'hint: quote it ("5") if it is meant as text' in refused.stderr
    quoted = user_policy(tmp_path, 'version: v1\nwrite_roots: ["5", ./out]\n')
    assert cli("policy", "show", extra_env=quoted).code == 0


def test_a_policy_that_changes_a_default_credential_is_refused_at_the_entry(
    cli, work: Path, tmp_path: Path
) -> None:
    # the mapping was dropped without a word: gh kept getting the github token
    extra = user_policy(tmp_path, "version: v1\nbinary_credentials: {gh: gitlab}\n")
    write(
        work / "cap.md", capability("version: v1\nworkflow:\n  - binary: git\n    args: [status]\n")
    )
    for argv in (("policy", "show"), ("capability", "execute", "cap.md")):
        refused = cli(*argv, extra_env=extra)
        assert refused.code == 2, argv
        assert (
            "policy.yaml:2:26: error: binary_credentials: 'gh' gets the 'github' credential "
            "from the default policy, which a user policy cannot change"
        ) in refused.stderr
        assert "hint: remove 'gh' from binary_credentials in this file" in refused.stderr
        assert "Traceback" not in refused.stderr


def test_a_policy_takes_yamls_booleans_in_any_case_as_a_capability_does(
    cli, tmp_path: Path
) -> None:
    # YAML's True and TRUE, as a Go tool writes them
    extra = user_policy(tmp_path, "version: v1\nrequire_confinement: True\ngit_hooks: FALSE\n")
    shown = cli("--output", "json", "policy", "show", extra_env=extra)
    assert shown.code == 0, shown.stderr
    doc = shown.json()["policy"]
    assert (doc["require_confinement"]["value"], doc["git_hooks"]["value"]) == (True, False)
    wrong = user_policy(tmp_path, "version: v1\nrequire_confinement: yes\n")
    refused = cli("policy", "show", extra_env=wrong)
    assert refused.code == 2
    assert "'require_confinement' must be true or false, not 'yes'" in refused.stderr


def test_policy_check_and_show(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n    args: [read, a.txt]\n"
            "  - provider: files\n    args: [delete, a.txt]\n"
        ),
    )
    check = cli("--output", "json", "policy", "check", "cap.md")
    assert check.code == 3
    decisions = check.json()["decisions"]
    assert [d["allowed"] for d in decisions] == [True, False]
    assert decisions[1]["rule"] == "effect destroy (allowed_destructive)"
    shown = cli("--output", "json", "policy", "show").json()["policy"]
    assert {"name": "git", "source": "default"} in shown["allowed_binaries"]


def test_policy_check_without_a_required_input_decides_what_it_can(cli, work: Path) -> None:
    # the steps that name a missing required input wait for it: their decision on the
    # literal ${d} would say nothing about the run (git '${d}' is no subcommand)
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  d:\n    required: true\n"
            "workflow:\n  - provider: files\n    args: [read, a.txt]\n"
            '  - binary: git\n    args: ["${d}"]\n'
            '  - provider: files\n    args: [write, "${d}/x.txt", hi]\n'
        ),
    )
    text = cli("policy", "check", "cap.md")
    assert text.code == 2, text.stderr
    assert text.stdout.splitlines() == [
        "[1] files read: allowed by no denied_operations entry matches",
        "[2] git: UNDECIDED: depends on input d, not supplied",
        "[3] files write: UNDECIDED: depends on input d, not supplied",
    ]
    assert "error: missing required input: d; 2 steps cannot be decided without it" in text.stderr
    assert "hint: --input d=..." in text.stderr
    doc = cli("--output", "json", "policy", "check", "cap.md").json()
    check_schema(doc, "policy-check")
    assert (doc["ok"], doc["exit_code"]) == (False, 2)
    assert [(d["allowed"], d["waiting"]) for d in doc["decisions"]] == [
        (True, []),
        (None, ["d"]),
        (None, ["d"]),
    ]
    # given, every step is decided: git's is a refusal (exit 3)
    given = cli("--output", "json", "policy", "check", "cap.md", "--input", "d=notes")
    assert given.code == 3
    assert [d["allowed"] for d in given.json()["decisions"]] == [True, False, True]


def test_policy_check_refusal_wins_over_a_missing_input(cli, work: Path) -> None:
    # a step that names no input and is refused is refused whatever the inputs are
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  d:\n    required: true\n"
            "workflow:\n  - provider: files\n    args: [delete, a.txt]\n"
            '  - provider: files\n    args: [read, "${d}"]\n'
        ),
    )
    check = cli("--output", "json", "policy", "check", "cap.md")
    assert check.code == 3
    assert [d["allowed"] for d in check.json()["decisions"]] == [False, None]


def test_binary_missing_on_path_is_exit_5(cli, work: Path, tmp_path: Path) -> None:
    write(work / "cap.md", capability("version: v1\nworkflow:\n  - binary: jq\n    args: [.]\n"))
    result = cli("capability", "execute", "cap.md", extra_env={"PATH": str(tmp_path)})
    assert result.code == 5
    assert "binary jq not found on PATH" in result.stderr


# -- plan / dry run cause nothing ----------------------------------------------------------


def _snapshot(root: Path) -> dict[str, tuple[int, float]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime) for p in root.rglob("*")}


def test_plan_and_dry_run_cause_no_side_effect(
    cli, work: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  dir:\n    required: true\n"
            'workflow:\n  - provider: files\n    args: [mkdir, "${dir}"]\n'
            '  - provider: files\n    args: [write, "${dir}/a.txt", x]\n'
            "  - binary: git\n    args: [status]\n"
            "  - provider: github\n    args: [repo, view, cli/cli]\n"
        ),
    )
    cli("bootstrap")
    before_work, before_home = _snapshot(work), _snapshot(home)

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("a subprocess or connection was started during plan")

    import socket

    monkeypatch.setattr(subprocess.Popen, "__init__", forbidden)
    monkeypatch.setattr(os, "posix_spawn", forbidden)
    monkeypatch.setattr(os, "fork", forbidden)
    monkeypatch.setattr(socket.socket, "connect", forbidden)
    plan = cli("--output", "json", "capability", "plan", "cap.md", "--input", "dir=new")
    assert plan.code == 0, plan.stdout + plan.stderr
    doc = plan.json()
    check_schema(doc, "plan")
    assert [s["args"] for s in doc["steps"]][:2] == [["mkdir", "new"], ["write", "new/a.txt", "x"]]
    assert doc["steps"][1]["transport"] == "local" and doc["steps"][1]["effect"] == "write"
    assert doc["steps"][2]["binary_path"].endswith("/git")
    assert doc["steps"][3]["transport"] == "rest"
    assert all(s["decision"]["allowed"] for s in doc["steps"])
    dry = cli("capability", "execute", "--dry-run", "cap.md", "--input", "dir=new")
    assert dry.code == 0
    line = next(s for s in dry.stdout.splitlines() if s.startswith("[2/4] "))
    assert line.split() == ["[2/4]", "files", "write", "new/a.txt", "x", "write", "allowed"]
    assert _snapshot(work) == before_work
    assert _snapshot(home) == before_home


def test_dry_run_shows_refusals_with_exit_3(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [write, ../x, y]\n"),
    )
    result = cli("capability", "execute", "--dry-run", "cap.md")
    assert result.code == 3
    assert "      refused by write_roots (default): " in result.stdout
    verbose = cli("capability", "execute", "--dry-run", "cap.md", "--verbose")
    assert verbose.code == 3
    assert "policy: REFUSED [write_roots (default)]" in verbose.stdout


# -- direct calls --------------------------------------------------------------------------


def test_files_operations_from_the_command_line(cli, work: Path) -> None:
    assert cli("files", "mkdir", "d").code == 0
    assert cli("files", "write", "d/a.txt", "alpha").code == 0
    assert (work / "d" / "a.txt").read_bytes() == b"alpha\n"
    assert cli("files", "append", "d/a.txt", "beta").code == 0
    assert (work / "d" / "a.txt").read_bytes() == b"alpha\nbeta\n"
    read = cli("--output", "json", "files", "read", "d/a.txt").json()
    assert read["steps"][0]["data"]["content"] == "alpha\nbeta\n"
    listing = cli("--output", "json", "files", "list", "d").json()["steps"][0]["data"]["entries"]
    assert listing == [{"name": "a.txt", "type": "file", "size": 11}]
    assert cli("files", "delete", "d/a.txt").code == 3
    usage = cli("files", "write", "only-path")
    assert usage.code == 2 and "CONTENT" in usage.stderr
    unknown = cli("files", "copy", "a", "b")
    assert unknown.code == 2 and "not an operation of 'files'" in unknown.stderr
    binary = cli("files", "write", "bin.dat", "x")
    assert binary.code == 0
    (work / "bin.dat").write_bytes(b"\xff\xfe\x00\x01")
    refused = cli("files", "read", "bin.dat")
    assert refused.code == 1 and "not UTF-8 text" in refused.stderr


def test_command_run_and_bounded_environment(cli, work: Path, tmp_path: Path) -> None:
    extra = user_policy(tmp_path, "allowed_binaries: [printenv]\n")
    env = {
        **extra,
        "RUNTIME_GITHUB_TOKEN": "ghp_" + "x" * 36,
        "AWS_SECRET_ACCESS_KEY": "nope",
        "LANG": "C.UTF-8",
    }
    result = cli("--output", "json", "command", "run", "printenv", extra_env=env)
    assert result.code == 0
    printed = result.json()["steps"][0]["data"]["stdout"]
    names = sorted(line.split("=", 1)[0] for line in printed.splitlines())
    # confined, the step also gets its private TMPDIR (and bubblewrap sets PWD); every
    # program gets hardened git (GIT_*), for any git it may start
    confined = ["PWD", "TMPDIR"] if sandbox.probe(os.environ.get("PATH", "")).ok else []
    assert "GIT_CONFIG_COUNT" in names and "GIT_CONFIG_GLOBAL" in names
    assert [n for n in names if not n.startswith("GIT_")] == sorted(
        ["HOME", "LANG", "PATH", *confined]
    )
    not_allowed = cli("command", "run", "curl", "http://example.com")
    assert not_allowed.code == 3


# -- time limits and signals (real processes) -------------------------------------------------


def test_binary_timeout_kills_the_process_group(cli, work: Path, tmp_path: Path) -> None:
    extra = user_policy(tmp_path, "allowed_binaries: [sleep]\n")
    write(
        work / "cap.md",
        capability(
            'version: v1\nworkflow:\n  - binary: sleep\n    args: ["30"]\n  - provider: files\n    args: [write, after.txt, x]\n'
        ),
    )
    started = time.monotonic()
    result = cli("capability", "execute", "--timeout", "1", "cap.md", extra_env=extra)
    assert time.monotonic() - started < 10
    assert result.code == 1
    assert "timed out after 1 s" in result.stderr
    assert not (work / "after.txt").exists()


@pytest.mark.parametrize("value", ["inf", "1e309", "nan", "-5", "0", "86401", "soon"])
@pytest.mark.parametrize("command", ["capability execute | cap.md", "command run | sleep 0"])
def test_timeout_is_checked_as_the_policy_file_checks_it(
    cli, work: Path, home: Path, tmp_path: Path, value: str, command: str
) -> None:
    """Positive, finite and at most a day, like timeout_seconds: else exit 2, nothing ran."""
    extra = user_policy(tmp_path, "allowed_binaries: [sleep]\n")
    write(
        work / "cap.md", capability("version: v1\nworkflow:\n  - binary: sleep\n    args: ['0']\n")
    )
    head, tail = (part.split() for part in command.split("|"))
    result = cli(*head, "--timeout", value, *tail, extra_env=extra)
    assert result.code == 2, result.stdout + result.stderr
    assert f"--timeout must be a number above 0 and at most 86400 (seconds), not '{value}'" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    assert not (home / "audit").exists() or "run.start" not in "".join(
        p.read_text() for p in (home / "audit").iterdir()
    )
    assert cli(*head, "--timeout", "0.5", *tail, extra_env=extra).code == 0


@pytest.mark.parametrize(
    ("sig", "code", "status"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
def test_signal_stops_the_step_and_records_it(
    work: Path, home: Path, env: dict[str, str], tmp_path: Path, sig: int, code: int, status: str
) -> None:
    policy = write(tmp_path / "policy.yaml", "allowed_binaries: [sleep]\n")
    # a duration no other test (or another run of the suite) uses: pgrep finds this one
    seconds = f"60.{os.getpid()}{int(sig)}"
    pattern = f"sleep {seconds}"
    write(
        work / "cap.md",
        capability(f'version: v1\nworkflow:\n  - binary: sleep\n    args: ["{seconds}"]\n'),
    )
    proc = subprocess.Popen(
        [str(RUNTIME_BIN), "capability", "execute", "cap.md"],
        cwd=work,
        env={**env, "RUNTIME_POLICY_FILE": str(policy)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    child = None
    while time.monotonic() < deadline and child is None:
        out = subprocess.run(
            ["pgrep", "-f", pattern], capture_output=True, text=True
        ).stdout.split()
        child = int(out[0]) if out else None
        time.sleep(0.05)
    assert child is not None, "the sleep step never started"
    proc.send_signal(sig)
    stdout, _ = proc.communicate(timeout=20)
    assert proc.returncode == code, stdout
    time.sleep(0.2)
    assert subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 1
    records = audit(home)
    assert records[-2]["event"] == "step" and records[-2]["status"] == status
    assert records[-1]["event"] == "run.end" and records[-1]["status"] == status


def test_no_traceback_on_internal_error(cli_proc, work: Path) -> None:
    result = cli_proc("capability", "validate", "/dev/null/x.md")
    assert result.code == 2
    assert "Traceback" not in result.stderr
    assert sys.executable  # the CLI ran in its own process


def test_a_run_leaves_an_embedding_programs_frozen_heap_frozen(cli, work: Path, home: Path) -> None:
    # a program that froze its heap (gc.freeze) and then calls main() finds it still frozen
    import gc

    mine = [object()]  # a container the collector tracks, alive from before the freeze
    gc.freeze()
    try:
        result = execute_notes(cli)
        assert result.code == 0, result.stdout + result.stderr
        collectable = (o for generation in range(3) for o in gc.get_objects(generation))
        assert not any(o is mine for o in collectable)
    finally:
        gc.unfreeze()


def test_a_run_leaves_an_embedding_programs_heap_unfrozen(cli, work: Path, home: Path) -> None:
    # main() is what programs embed: only the `runtime` command freezes, as it exits
    import gc

    assert gc.get_freeze_count() == 0
    mine = [object()]
    result = execute_notes(cli)
    assert result.code == 0, result.stdout + result.stderr
    assert gc.get_freeze_count() == 0
    collectable = (o for generation in range(3) for o in gc.get_objects(generation))
    assert any(o is mine for o in collectable)


def test_a_steps_output_lines_follow_its_result_line(work: Path, env: dict[str, str]) -> None:
    """Progress on stderr and output on stdout keep their order in one log (2>&1)."""
    proc = subprocess.run(
        [
            str(RUNTIME_BIN),
            *("capability", "execute", str(EXAMPLES / "notes-roundtrip.md")),
            *("--input", "folder=notes", "--input", "note=Hello = world"),
        ],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    read = next(i for i, line in enumerate(lines) if line.startswith("[3/4] files read "))
    assert " ok " in lines[read]
    assert lines[read + 1] == "Hello = world"
    assert lines[read + 2].startswith("[4/4] files list notes ... ok ")


def test_a_refusal_never_quotes_a_secret_named_input(cli, work: Path, home: Path) -> None:
    # the value reaches a refusal's message (a path preflight cannot find): the error on
    # the terminal, the JSON document and the audit record all show it redacted
    secret = "s3cr3t-value-0123456789"
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  api_token:\n    required: true\nworkflow:\n"
            '  - provider: files\n    args: [read, "${api_token}"]\n'
        ),
    )
    text = cli("capability", "execute", "cap.md", "--input", f"api_token={secret}")
    doc = cli("capability", "execute", "cap.md", "-o", "json", "--input", f"api_token={secret}")
    for result in (text, doc):
        assert result.code == 5, result.stdout + result.stderr
        assert secret not in result.stdout + result.stderr
    assert "api_token" in text.stderr or "missing" in text.stderr, text.stderr
    audit = (home / "audit" / "audit.jsonl").read_text()
    assert "run.refused" in audit
    assert secret not in audit
