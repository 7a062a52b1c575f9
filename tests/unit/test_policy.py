"""The policy: loading the shipped default and a user's file, and its decisions.

``load_policy`` reads ``policies/default.yaml`` and then the user's file on top:
lists are unioned, scalars replaced, no denial of the default lifted. The
decisions (``decide_binary``, ``decide_operation``) are checked here on the
args a step would run with, as the plan gives them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from providers.github import PROVIDER as GITHUB
from runtime.errors import ExitCode, InvalidPolicy
from runtime.plan import policy_file as policy_module
from runtime.plan.binding import bind, resolve_call
from runtime.plan.policy import Policy, run_matches
from runtime.plan.policy_file import load_policy
from runtime.provider import Decision, Operation, Positional


@pytest.fixture(scope="module")
def default() -> Policy:
    return load_policy(None)


def user_policy(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    os.chmod(path, mode)
    return path


def refused(decision: Decision, rule: str) -> None:
    """The decision refuses, by a rule that starts with ``rule``."""
    assert not decision.allowed, decision
    assert decision.rule.startswith(rule), decision


def allowed(decision: Decision) -> None:
    assert decision.allowed, decision


# -- loading ------------------------------------------------------------------------------


def test_the_default_policy(default: Policy) -> None:
    assert default.sources == ["default"]
    assert default.allowed_binaries["git"] == "default"
    assert default.denied_binaries["curl"] == "default"
    assert default.timeout() == 300.0
    assert default.require_confinement == (False, "default")
    assert default.git_hooks == (False, "default")
    assert default.credential_for_binary("gh") == "github"
    assert default.allowed_destructive == []
    assert default.read_roots == (["."], "default")


def test_a_missing_home_policy_is_the_default_alone(tmp_path: Path) -> None:
    policy = load_policy(tmp_path / "policy.yaml")
    assert policy.sources == ["default"]


def test_an_empty_user_policy_changes_nothing_but_its_source(tmp_path: Path) -> None:
    path = user_policy(tmp_path, "")
    policy = load_policy(path)
    assert policy.sources == ["default", str(path)]
    assert policy.allowed_binaries == load_policy(None).allowed_binaries


def test_a_user_policy_unions_lists_and_replaces_scalars(tmp_path: Path) -> None:
    path = user_policy(
        tmp_path,
        "version: v1\n"
        "allowed_binaries: [make, git]\n"
        "denied_binaries: [jq]\n"
        "allowed_subcommands:\n  git: [archive]\n"
        "denied_arguments:\n  git:\n    - [commit, --amend]\n"
        "denied_operations: [github Repo Delete]\n"
        "allowed_destructive: [Files DELETE]\n"
        "timeout_seconds: 12.5\n"
        "read_roots: [/srv/data]\n"
        "git_hooks: true\n",
    )
    policy = load_policy(path)
    source = str(path)
    assert policy.sources == ["default", source]
    # lists: the default's entries stay, the user's are added (with their source)
    assert policy.allowed_binaries["make"] == source
    assert policy.allowed_binaries["git"] == "default"  # first listed keeps its source
    assert policy.denied_binaries["jq"] == source and "curl" in policy.denied_binaries
    assert policy.allowed_subcommands["git"]["archive"] == source
    assert policy.allowed_subcommands["git"]["status"] == "default"
    assert (("commit", "--amend"), source) in policy.denied_arguments["git"]
    assert (("push", "--force"), "default") in policy.denied_arguments["git"]
    assert (("github", "repo", "delete"), source) in policy.denied_operations
    assert policy.allowed_destructive == [(("files", "delete"), source)]
    # scalars and roots: replaced
    assert policy.timeout_seconds == (12.5, source)
    assert policy.read_roots == (["/srv/data"], source)
    assert policy.write_roots == (["."], "default")
    assert policy.git_hooks == (True, source)
    # and they decide
    allowed(policy.decide_binary("make", ["all"]))
    refused(policy.decide_binary("jq", ["."]), "denied_binaries: jq")
    allowed(policy.decide_binary("git", ["archive", "HEAD"]))
    refused(policy.decide_binary("git", ["commit", "--amend"]), "denied_arguments: git commit")


def test_a_user_policy_never_lifts_a_default_denial(tmp_path: Path) -> None:
    path = user_policy(
        tmp_path,
        "allowed_binaries: [curl, python3.12, sh]\n"
        "allowed_subcommands:\n  git: [push]\n"
        "binary_credentials:\n  gh: github\n  tool: github\n",
    )
    policy = load_policy(path)
    for name in ("curl", "python3.12", "sh"):
        decision = policy.decide_binary(name, [])
        refused(decision, "denied_binaries:")
        assert "(default)" in decision.rule
        assert decision.hint == "a denied binary is never run, whatever a user policy allows"
    refused(policy.decide_binary("git", ["push", "--force"]), "denied_arguments: git push --force")
    assert policy.binary_credentials["gh"] == ("github", "default")
    assert policy.binary_credentials["tool"] == ("github", str(path))


def test_a_user_policy_cannot_change_a_default_credential(tmp_path: Path) -> None:
    # refused at the entry, not dropped without a word: gh keeps the default's github
    path = user_policy(tmp_path, "version: v1\nbinary_credentials:\n  tool: github\n  gh: mine\n")
    with pytest.raises(InvalidPolicy) as raised:
        load_policy(path)
    assert raised.value.message == (
        f"{path}:4:7: binary_credentials: 'gh' gets the 'github' credential from the default "
        "policy, which a user policy cannot change"
    )
    assert raised.value.hint == "remove 'gh' from binary_credentials in this file"


def test_require_confinement_can_be_demanded(tmp_path: Path) -> None:
    path = user_policy(tmp_path, "require_confinement: true\n")
    assert load_policy(path).require_confinement == (True, str(path))


def test_require_confinement_once_demanded_cannot_be_waived(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = policy_module.default_policy_data()
    strict: dict[str, Any] = {**shipped, "require_confinement": True}
    monkeypatch.setattr(policy_module, "default_policy_data", lambda: strict)
    path = user_policy(tmp_path, "require_confinement: false\n")
    assert load_policy(path).require_confinement == (True, "default")


def test_a_missing_runtime_policy_file_fails_closed(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(InvalidPolicy) as caught:
        load_policy(missing, explicit=True)
    assert caught.value.message == f"RUNTIME_POLICY_FILE names {missing}, which does not exist"
    assert caught.value.exit_code == ExitCode.INVALID == 2
    assert "unset RUNTIME_POLICY_FILE" in (caught.value.hint or "")


@pytest.mark.parametrize(("mode", "who"), [(0o620, "its group"), (0o602, "anyone")])
def test_a_policy_file_others_can_write_is_refused(tmp_path: Path, mode: int, who: str) -> None:
    path = user_policy(tmp_path, "allowed_binaries: [make]\n", mode)
    with pytest.raises(InvalidPolicy) as caught:
        load_policy(path)
    assert f"can be written by {who} (mode {mode:04o})" in caught.value.message
    assert caught.value.hint == f"chmod go-w {path}"


def test_a_readable_policy_file_is_trusted(tmp_path: Path) -> None:
    path = user_policy(tmp_path, "allowed_binaries: [make]\n", 0o644)
    assert "make" in load_policy(path).allowed_binaries


def test_a_policy_file_in_a_folder_anyone_can_write_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    path = user_policy(folder, "allowed_binaries: [make]\n")
    os.chmod(folder, 0o777)
    with pytest.raises(InvalidPolicy) as caught:
        load_policy(path)
    assert "a folder anyone can write" in caught.value.message
    os.chmod(folder, 0o1777)  # the sticky bit: only the owner may replace the file
    assert "make" in load_policy(path).allowed_binaries


def test_a_policy_path_that_is_not_a_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "policy.yaml"
    folder.mkdir(mode=0o700)
    with pytest.raises(InvalidPolicy, match="is a folder, not a regular file"):
        load_policy(folder, explicit=True)


def test_a_policy_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_bytes(b"allowed_binaries: [caf\xe9]\n")
    os.chmod(path, 0o600)
    with pytest.raises(InvalidPolicy, match=r"policy.yaml:1:23: the policy file is not UTF-8"):
        load_policy(path)


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ("version: v2\n", 1, 10, "unsupported policy version 'v2'"),
        ("version: v1\ntimeout_seconds: 0\n", 2, 18, "'timeout_seconds' must be a number"),
        ("version: v1\ntimeout_seconds: 86401\n", 2, 18, "'timeout_seconds' must be a number"),
        ("version: v1\ntimeout_seconds: soon\n", 2, 18, "not 'soon'"),
        ("version: v1\nallowed_binary: [x]\n", 2, 1, "unknown policy key 'allowed_binary'"),
        ("version: v1\nallowed_binaries: git\n", 2, 19, "'allowed_binaries' must be a list"),
        ("git_hooks: yes\n", 1, 12, "'git_hooks' must be true or false"),
    ],
)
def test_a_bad_policy_value_is_refused_at_its_position(
    tmp_path: Path, text: str, line: int, column: int, message: str
) -> None:
    path = user_policy(tmp_path, text)
    with pytest.raises(InvalidPolicy) as caught:
        load_policy(path)
    failure = caught.value
    assert failure.message.startswith(f"{path}:{line}:{column}: ")
    assert message in failure.message
    first = failure.problems[0]
    assert (first.file, first.line, first.column, first.code) == (
        str(path),
        line,
        column,
        "invalid-policy",
    )


def test_every_problem_of_a_policy_file_is_reported(tmp_path: Path) -> None:
    path = user_policy(tmp_path, "version: v3\ntimeout_seconds: -1\nbogus: 1\n")
    with pytest.raises(InvalidPolicy) as caught:
        load_policy(path)
    assert [(p.line, p.column) for p in caught.value.problems] == [(1, 10), (2, 18), (3, 1)]


# -- decide_binary: names -------------------------------------------------------------------


def test_runtime_never_runs_itself_even_when_allowed() -> None:
    policy = Policy(allowed_binaries={"runtime": "mine", "rt": "mine"})
    refused(policy.decide_binary("runtime", ["capability", "execute"]), "built-in: runtime")
    refused(policy.decide_binary("rt", [], real_name="runtime"), "built-in: runtime")


@pytest.mark.parametrize(
    ("name", "entry"),
    [
        ("python", "python"),
        ("python3.11", "python"),
        ("perl5.36", "perl"),
        ("node-18", "node"),
        ("ruby3.1", "ruby"),
        ("bash5", "bash"),
        ("gawk-5.1.0", "gawk"),
        ("vim.basic", "vim"),  # Debian alternatives variants
        ("vim.tiny", "vim"),
        ("nc.openbsd", "nc"),
    ],
)
def test_denied_binaries_cover_their_versioned_names(
    default: Policy, name: str, entry: str
) -> None:
    decision = default.decide_binary(name, ["-c", "x"])
    refused(decision, f"denied_binaries: {entry} (default)")
    if name != entry:
        assert decision.reason == f"{name} is {entry} by another name"


@pytest.mark.parametrize("name", ["pythonista", "shell", "nodes", "perl-tidy", "vim.Basic", "nc."])
def test_a_name_that_merely_starts_like_a_denied_one_is_not_denied(
    default: Policy, name: str
) -> None:
    # not denied by name: refused (or not) by allowed_binaries, like any unknown name
    assert default.denied_name(name) is None
    refused(default.decide_binary(name, []), "allowed_binaries")
    policy = Policy(allowed_binaries={name: "mine"}, denied_binaries=default.denied_binaries)
    allowed(policy.decide_binary(name, []))


def test_the_real_file_a_name_leads_to_is_decided_too(default: Policy) -> None:
    policy = Policy(allowed_binaries={"mysh": "mine"}, denied_binaries=default.denied_binaries)
    allowed(policy.decide_binary("mysh", [], real_name="mysh"))
    for real in ("dash", "bash5.2", "python3.12"):
        decision = policy.decide_binary("mysh", [], real_name=real)
        refused(decision, "denied_binaries:")
        assert decision.reason.startswith("mysh is ")


def test_a_binary_not_in_allowed_binaries_is_refused(default: Policy) -> None:
    decision = default.decide_binary("make", [])
    refused(decision, "allowed_binaries")
    assert decision.reason == "make is not in allowed_binaries"


# -- decide_binary: subcommands -------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["status"],
        ["-C", "sub", "log", "--oneline"],
        ["--no-pager", "-P", "diff"],
        ["--namespace=x", "show"],
        ["--version"],  # no subcommand runs
        [],
        ["config", "user.name"],
    ],
)
def test_allowed_git_subcommands(default: Policy, args: list[str]) -> None:
    allowed(default.decide_binary("git", args))


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["st"], "'st' is not an allowed git subcommand"),
        (["archive", "--remote=x"], "'archive' is not an allowed git subcommand"),
        (["-C", "dir", "difftool"], "'difftool' is not an allowed git subcommand"),
        (["--frobnicate", "status"], "'--frobnicate' before the subcommand is not a global option"),
        (["-Cdir", "status"], "'-Cdir' before the subcommand is not a global option"),
    ],
)
def test_refused_git_subcommands(default: Policy, args: list[str], reason: str) -> None:
    decision = default.decide_binary("git", args)
    refused(decision, "allowed_subcommands: git")
    assert decision.reason.startswith(reason)


def test_gh_subcommands(default: Policy) -> None:
    allowed(default.decide_binary("gh", ["pr", "list"], api_owner=GITHUB))
    allowed(default.decide_binary("gh", ["--version"], api_owner=GITHUB))
    allowed(default.decide_binary("gh", ["--help", "repo", "view"], api_owner=GITHUB))
    refused(
        default.decide_binary("gh", ["extension", "exec", "x"], api_owner=GITHUB),
        "allowed_subcommands: gh",
    )
    refused(
        default.decide_binary("gh", ["-R", "a/b", "pr", "list"], api_owner=GITHUB),
        "allowed_subcommands: gh",
    )
    # gh's grammar is its provider's (github's profile of it): without its owner, gh is a
    # program runtime knows nothing of, so an option before the subcommand is not read
    decision = default.decide_binary("gh", ["--version"])
    refused(decision, "allowed_subcommands: gh")
    assert decision.reason.startswith("'--version' before the subcommand is not a global")


def test_a_binary_without_listed_subcommands_takes_any_first_arg(default: Policy) -> None:
    allowed(default.decide_binary("echo", ["status", "--frobnicate"]))


# -- decide_binary: git config ------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["user.name"],
        ["--get", "user.name"],
        ["--get-all", "remote.origin.url"],
        ["--get-regexp", "^user"],
        ["--list"],
        ["-l", "--show-origin"],
        ["get", "user.name"],
        ["list"],
        ["--file", "other.cfg", "user.name"],
        ["-f", "other.cfg", "--get", "user.name"],
        ["--type=bool", "core.bare"],
        ["--local", "--", "user.name"],
    ],
)
def test_git_config_reading_forms_are_allowed(default: Policy, args: list[str]) -> None:
    allowed(default.decide_binary("git", ["config", *args]))


@pytest.mark.parametrize(
    "args",
    [
        ["alias.st", "!sh -c 'touch x'"],
        ["core.pager", "less"],
        ["--add", "user.name", "x"],
        ["--unset", "user.name"],
        ["--replace-all", "a.b", "c"],
        ["-e"],
        ["set", "user.name", "x"],
        ["unset", "user.name"],
        ["edit"],
        ["--list", "--add", "a.b", "c"],
        ["--frobnicate", "user.name"],
        ["--file", "f", "a.b", "c"],
        ["--", "a.b", "c"],
    ],
)
def test_git_config_writing_forms_are_refused(default: Policy, args: list[str]) -> None:
    decision = default.decide_binary("git", ["config", *args])
    refused(decision, "built-in: git config only reads")


@pytest.mark.parametrize(
    "args",
    [
        ["user.name", "Mallory"],
        ["user.email", "mallory@example.com"],
        ["--local", "User.Name", "Mallory"],
    ],
)
def test_git_config_may_set_the_repository_identity(default: Policy, args: list[str]) -> None:
    allowed(default.decide_binary("git", ["config", *args]))


@pytest.mark.parametrize(
    "args",
    [
        ["--global", "user.name", "x"],
        ["--worktree", "user.name", "x"],
        ["user.name", "-x"],
        ["user.name", "x", "y"],
        ["user.signingKey", "x"],
        ["--local", "--local", "user.name", "x"],
    ],
)
def test_git_config_sets_no_identity_elsewhere_or_other_keys(
    default: Policy, args: list[str]
) -> None:
    refused(default.decide_binary("git", ["config", *args]), "built-in: git config only reads")


def test_git_config_is_decided_after_global_options(default: Policy) -> None:
    refused(default.decide_binary("git", ["-C", "x", "config", "a.b", "c"]), "built-in: git config")
    allowed(default.decide_binary("git", ["-C", "x", "config", "a.b"]))


# -- decide_binary: options an input may not fill ----------------------------------------------


@pytest.mark.parametrize(
    ("authored", "resolved", "option"),
    [
        (["pr", "list", "--jq", "${q}"], ["pr", "list", "--jq", ".[]"], "--jq"),
        (["pr", "list", "--jq=${q}"], ["pr", "list", "--jq=.[]"], "--jq"),
        (["pr", "list", "-q", "${q}"], ["pr", "list", "-q", ".[]"], "-q"),
        (["pr", "list", "-q${q}"], ["pr", "list", "-q.[]"], "-q"),
        (["api", "-t", "${q}", "/user"], ["api", "-t", "{{.}}", "/user"], "api -t"),
        (["api", "--input", "${f}", "/user"], ["api", "--input", "f", "/user"], "--input"),
    ],
)
def test_gh_options_an_input_may_not_fill(
    default: Policy, authored: list[str], resolved: list[str], option: str
) -> None:
    decision = default.decide_binary("gh", resolved, authored=authored, api_owner=GITHUB)
    refused(decision, f"literal_options: gh {option} (default)")
    assert "would come from input" in decision.reason
    # the same value written in the capability is allowed
    allowed(default.decide_binary("gh", resolved, authored=resolved, api_owner=GITHUB))
    # a command typed by the user has no authored form: nothing came from an input
    allowed(default.decide_binary("gh", resolved, authored=None, api_owner=GITHUB))


def test_a_scoped_short_option_counts_for_its_subcommand_only(default: Policy) -> None:
    # gh's -t is --template for api, --title for pr create
    authored = ["pr", "create", "-t", "${title}", "-b", "x"]
    allowed(
        default.decide_binary(
            "gh", ["pr", "create", "-t", "T", "-b", "x"], authored=authored, api_owner=GITHUB
        )
    )
    # git's -u is --upload-pack for clone, --set-upstream for push
    pushed = default.decide_binary(
        "git", ["push", "-u", "origin", "main"], authored=["push", "-u", "${remote}", "main"]
    )
    allowed(pushed)
    cloned = default.decide_binary(
        "git", ["clone", "-u", "evil", "url"], authored=["clone", "-u", "${pack}", "url"]
    )
    refused(cloned, "literal_options: git clone -u")
    assert cloned.reason == "the value of -u would come from input 'pack'"


@pytest.mark.parametrize(
    "authored",
    [
        ["fetch", "--upload-pack=${p}"],
        ["fetch", "--upload-pa=${p}"],  # git accepts a long option's abbreviation
        ["fetch", "--upl", "${p}"],
        ["log", "--output=${p}"],
        ["log", "--out", "${p}"],
    ],
)
def test_long_options_an_input_may_not_fill_include_abbreviations(
    default: Policy, authored: list[str]
) -> None:
    resolved = [a.replace("${p}", "value") for a in authored]
    decision = default.decide_binary("git", resolved, authored=authored)
    refused(decision, "literal_options: git --")
    assert "would come from input 'p'" in decision.reason


def test_an_input_after_an_authored_separator_fills_no_option(default: Policy) -> None:
    resolved = ["pr", "view", "--", "--template={{.}}"]
    allowed(
        default.decide_binary(
            "gh", resolved, authored=["pr", "view", "--", "--template=${p}"], api_owner=GITHUB
        )
    )
    refused(
        default.decide_binary(
            "gh",
            ["pr", "view", "--template={{.}}"],
            authored=["pr", "view", "--template=${p}"],
            api_owner=GITHUB,
        ),
        "literal_options: gh --template",
    )


def test_a_user_policy_can_list_more_literal_options(tmp_path: Path) -> None:
    policy = load_policy(user_policy(tmp_path, "literal_options:\n  git: [log --format]\n"))
    authored = ["log", "--format=${f}"]
    refused(
        policy.decide_binary("git", ["log", "--format=%H"], authored=authored),
        "literal_options: git log --format",
    )
    # scoped to log: not for show
    allowed(
        policy.decide_binary("git", ["show", "--format=%H"], authored=["show", "--format=${f}"])
    )


# -- decide_binary: denied argument runs --------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "run"),
    [
        (["push", "--force"], "push --force"),
        (["push", "origin", "main", "--force"], "push --force"),  # not next to each other
        (["push", "--forc"], "push --force"),  # an abbreviation
        (["push", "--fo", "origin"], "push --force"),
        (["push", "--force=true"], "push --force"),  # with a value
        (["push", "-f"], "push -f"),
        (["push", "-uf", "origin"], "push -f"),  # a cluster
        (["push", "-fu", "origin"], "push -f"),
        (["push", "origin", "+main"], "push +*"),  # a prefix pattern
        (["push", "origin", "+refs/heads/a:refs/heads/b"], "push +*"),
        (["push", "origin", ":old-branch"], "push :*"),
        (["push", "--delete", "origin", "x"], "push --delete"),
        (["push", "--del", "origin", "x"], "push --delete"),
        (["grep", "-Oless", "pattern"], "grep -O"),  # a short option with its value attached
        (["grep", "-nO", "pattern"], "grep -O"),
        (["clone", "-c", "core.sshCommand=sh", "u", "d"], "clone -c"),
        (["clone", "-qc", "core.sshCommand=sh", "u", "d"], "clone -c"),
        (["branch", "-D", "old"], "branch -D"),
        (["stash", "drop"], "stash drop"),
        (["checkout", "--", "."], "checkout --"),
        (["fetch", "--upload-pack=/tmp/x"], "--upload-pack"),
        (["checkout", "--force", "main"], "checkout --force"),
    ],
)
def test_denied_argument_runs_in_any_spelling(default: Policy, args: list[str], run: str) -> None:
    decision = default.decide_binary("git", args)
    refused(decision, f"denied_arguments: git {run} (default)")
    assert decision.reason == "the arguments contain a denied run"


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "core.pager=sh", "log"],
        ["-ccore.pager=sh", "log"],  # not a global option runtime reads: refused too
        ["--config-env=core.pager=X", "log"],
        ["-C", ".", "-c", "core.pager=sh", "log"],
    ],
)
def test_gits_own_configuration_options_are_refused(default: Policy, args: list[str]) -> None:
    decision = default.decide_binary("git", args)
    assert not decision.allowed, args
    assert decision.rule in (
        "built-in: git's configuration is not set from the command line",
        "allowed_subcommands: git",
    )


@pytest.mark.parametrize(
    "args",
    [["log", "-c", "-1"], ["grep", "-c", "x"], ["commit", "-c", "HEAD"], ["diff", "--", "x"]],
)
def test_a_subcommands_own_options_are_not_gits(default: Policy, args: list[str]) -> None:
    allowed(default.decide_binary("git", args))


@pytest.mark.parametrize(
    "args",
    [
        ["push", "origin", "main"],
        ["push", "origin", "main:release"],
        ["push", "--follow-tags"],
        ["push", "--f"],  # too short to name one option: git itself refuses it as ambiguous
        ["--force", "push"],  # a run's tokens must come in its order
        ["log", "--", "push"],
        ["commit", "-m", "push --force"],  # one arg, not two
    ],
)
def test_runs_that_are_not_the_denied_ones(default: Policy, args: list[str]) -> None:
    assert not default.decide_binary("git", args).rule.startswith("denied_arguments"), args


def test_gh_denied_runs(default: Policy) -> None:
    refused(
        default.decide_binary("gh", ["auth", "token"], api_owner=GITHUB), "allowed_subcommands: gh"
    )
    refused(
        default.decide_binary("gh", ["repo", "delete", "a/b", "--yes"], api_owner=GITHUB),
        "denied_arguments: gh repo delete",
    )
    refused(
        default.decide_binary("gh", ["release", "download", "v1", "-Ddir"], api_owner=GITHUB),
        "denied_arguments: gh release download -D",
    )
    allowed(
        default.decide_binary("gh", ["release", "download", "v1", "-p", "*.tgz"], api_owner=GITHUB)
    )


EXT = "url.ext::sh -c touch% pwned% #.insteadOf=https://github.com/"


@pytest.mark.parametrize(
    ("args", "rule"),
    [
        # gh hands the args after its `--` to git clone: decided as git's
        (
            ["repo", "clone", "a/b", "d", "--", "--config=protocol.ext.allow=always"],
            "denied_arguments: git --config",
        ),
        (["repo", "clone", "a/b", "d", "--", f"--config={EXT}"], "denied_arguments: git --config"),
        (["repo", "clone", "a/b", "--", "-c", EXT], "denied_arguments: git clone -c"),
        (
            ["repo", "clone", "a/b", "--", "-qcprotocol.ext.allow=always"],
            "denied_arguments: git clone -c",
        ),
        (["repo", "clone", "a/b", "--", "--conf", EXT], "denied_arguments: git --config"),
        (["repo", "clone", "a/b", "--", "-u", "touch pwned"], "denied_arguments: git clone -u"),
        (["repo", "clone", "a/b", "--", "--upload-pack=x"], "denied_arguments: git --upload-pack"),
        (["repo", "clone", "a/b", "--", "--template=t"], "denied_arguments: git --template"),
        (
            ["repo", "clone", "a/b", "--", "--separate-git-dir=s"],
            "denied_arguments: git --separate-git-dir",
        ),
        (
            ["repo", "fork", "a/b", "--clone", "--", "--config=core.fsmonitor=x"],
            "denied_arguments: git --config",
        ),
        # a form runtime cannot read as gh reads it
        (["repo", "clone", "--depth=1", "a/b", "--", "-q"], "built-in: gh repo clone hands args"),
        (["repo", "-h", "clone", "a/b", "--", "-q"], "built-in: gh repo clone hands args"),
    ],
)
def test_the_args_gh_hands_to_git_clone_are_decided_as_gits(
    default: Policy, args: list[str], rule: str
) -> None:
    decision = default.decide_binary("gh", args, api_owner=GITHUB)
    refused(decision, rule)
    if rule.startswith("denied"):
        assert f"gh {args[0]} {args[1]} runs `git clone" in decision.reason


def test_the_args_gh_hands_to_git_clone_keep_gits_literal_options(default: Policy) -> None:
    authored = ["repo", "clone", "a/b", "--", "--reference", "${r}"]
    decision = default.decide_binary(
        "gh", [*authored[:-1], "../x"], authored=authored, api_owner=GITHUB
    )
    refused(decision, "literal_options: git --reference")
    assert "input 'r'" in decision.reason


def test_a_provider_operation_that_runs_gh_repo_clone_is_decided_the_same(
    default: Policy,
) -> None:
    """The github provider declares no such operation; one that did would be decided as
    the binary step is (decide_call decides its program's call with decide_binary)."""
    operation = Operation(
        words=("repo", "clone"),
        summary="clone",
        transport="cli",
        effect="write",
        positionals=(Positional("REPO"),),
        passthrough=True,
        program="gh",
    )
    authored = ["a/b", "d", "--", "${a}", "--config=protocol.ext.allow=always"]
    resolved = ["a/b", "d", "--", "--depth=1", "--config=protocol.ext.allow=always"]
    call = resolve_call(bind(operation, authored)[0], resolved)
    refused(
        default.decide_call(GITHUB, operation, call, authored=authored),
        "denied_arguments: git --config",
    )
    safe = ["a/b", "d", "--", "--depth=1"]
    allowed(default.decide_call(GITHUB, operation, resolve_call(bind(operation, safe)[0], safe)))


def test_ordinary_gh_clones_are_allowed(default: Policy, tmp_path: Path) -> None:
    for args in (
        ["repo", "clone", "a/b"],
        ["repo", "clone", "a/b", "dir", "--", "--depth=1", "--single-branch"],
        ["repo", "clone", "-u", "up", "a/b", "--", "--filter=blob:none"],
        ["repo", "fork", "a/b", "--clone", "--remote", "--", "--depth", "1"],
        ["repo", "view", "a/b", "--", "--config=x"],  # view hands nothing to git
    ):
        allowed(default.decide_binary("gh", args, api_owner=GITHUB))
    # a user policy that denies git denies the git gh would run with it
    denying = load_policy(user_policy(tmp_path, "denied_binaries: [git]\n"))
    refused(
        denying.decide_binary("gh", ["repo", "clone", "a/b"], api_owner=GITHUB),
        "denied_binaries: git",
    )
    allowed(denying.decide_binary("gh", ["pr", "list"], api_owner=GITHUB))


@pytest.mark.parametrize(
    ("run", "args", "expected"),
    [
        (("push", "--force"), ["push", "--force"], True),
        (("push", "--force"), ["push", "x", "y", "--force"], True),
        (("push", "--force"), ["--force", "push"], False),
        (("push", "--force"), ["push"], False),
        (("push", "--force"), ["push", "--force-with-lease"], False),
        (("push", "--force-with-lease"), ["push", "--force-w"], True),
        (("push", "--force-with-lease"), ["push", "--force-with-lease=main"], True),
        (("clean", "-f"), ["clean", "-dfx"], True),
        (("clean", "-f"), ["clean", "-dx"], False),
        (("clean", "-f"), ["clean", "--dry-run"], False),
        (("push", "+*"), ["push", "+"], True),
        (("push", "+*"), ["push", "main+1"], False),
        (("stash", "clear"), ["stash", "clear"], True),
        (("stash", "clear"), ["stash", "clearly"], False),
    ],
)
def test_run_matches(run: tuple[str, ...], args: list[str], expected: bool) -> None:
    assert run_matches(run, args) is expected


# -- decide_binary: gh api, decided like the provider's api call ------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["api", "-X", "DELETE", "/repos/a/b"],
        ["api", "-XDELETE", "/repos/a/b"],
        ["api", "-X", "delete", "repos/a/b"],
        ["api", "--method", "DELETE", "/repos/a/b"],
        ["api", "--method=Delete", "/repos/a/b"],
        ["api", "/repos/a/b", "-X", "DELETE"],  # flags after the route
        ["api", "-iX", "DELETE", "/repos/a/b"],  # in a cluster
        ["api", "--paginate", "-X", "DELETE", "--", "/repos/a/b"],
    ],
)
def test_gh_api_delete_in_any_spelling_is_a_destroy(default: Policy, args: list[str]) -> None:
    decision = default.decide_binary("gh", args, api_owner=GITHUB)
    refused(decision, "effect destroy (allowed_destructive)")
    assert "'github api' destroys what it names" in decision.reason


@pytest.mark.parametrize(
    ("args", "method"),
    [
        (["api", "-X", "PUT", "repos/a/b/actions/secrets/TOKEN"], "put"),
        (["api", "-f", "encrypted_value=x", "repos/a/b/actions/secrets/TOKEN"], "post"),
        (["api", "-F", "x=1", "/orgs/o/actions/secrets/T"], "post"),
        (["api", "--input", "body.json", "/repos/a/b/environments/e/secrets/T"], "post"),
        (["api", "--method", "patch", "/repos/a/b/actions/SECRETS/T"], "patch"),
    ],
)
def test_gh_api_writes_to_secrets_are_denied_operations(
    default: Policy, args: list[str], method: str
) -> None:
    decision = default.decide_binary("gh", args, api_owner=GITHUB)
    refused(decision, f"denied_operations: github api {method} */secrets/* (default)")
    assert decision.reason.startswith(f"gh api {method.upper()} /")


def test_gh_api_reads_are_allowed(default: Policy) -> None:
    allowed(default.decide_binary("gh", ["api", "/repos/a/b/actions/secrets"], api_owner=GITHUB))
    allowed(
        default.decide_binary(
            "gh",
            ["api", "-X", "GET", "-F", "per_page=5", "/repos/a/b/actions/secrets/T"],
            api_owner=GITHUB,
        )
    )


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["api", "--frobnicate", "/x"], "gh api option '--frobnicate' is not one runtime can read"),
        (["api", "-Z", "/x"], "gh api option '-Z' is not one runtime can read"),
        (["api"], "gh api names no route"),
        (["api", "-X", "GET"], "gh api names no route"),
    ],
)
def test_gh_api_args_runtime_cannot_read_are_refused(
    default: Policy, args: list[str], reason: str
) -> None:
    decision = default.decide_binary("gh", args, api_owner=GITHUB)
    refused(decision, "built-in: gh api must be readable")
    assert decision.reason == reason


def test_gh_api_is_decided_as_an_operation_only_for_its_owner(default: Policy) -> None:
    args = ["api", "-X", "DELETE", "/repos/a/b"]
    allowed(default.decide_binary("gh", args))  # no provider owns gh's api here


def test_allowed_destructive_lets_a_deliberate_gh_api_delete_through(tmp_path: Path) -> None:
    policy = load_policy(
        user_policy(
            tmp_path, "allowed_destructive: ['github api DELETE /repos/acme/*/releases/*']\n"
        )
    )
    allowed(
        policy.decide_binary(
            "gh", ["api", "-X", "DELETE", "/repos/acme/app/releases/1"], api_owner=GITHUB
        )
    )
    refused(
        policy.decide_binary("gh", ["api", "-X", "DELETE", "/repos/acme/app"], api_owner=GITHUB),
        "effect destroy",
    )


# -- decide_binary: gh's jq never reads the environment -----------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["api", "/user", "--jq", "env.GH_TOKEN"],
        ["api", "/user", "--jq=$ENV.GH_TOKEN"],
        ["pr", "list", "-q", "env"],
        ["pr", "list", "-q.[] | env"],
        ["pr", "list", "--json", "title", "-q", '"\\(env)"'],
        ["issue", "list", "--jq", "[.[] | env.HOME]"],
    ],
)
def test_a_jq_expression_that_reads_the_environment_is_refused(
    default: Policy, args: list[str]
) -> None:
    decision = default.decide_binary("gh", args, api_owner=GITHUB)
    refused(decision, "built-in: gh's jq never reads the environment")


@pytest.mark.parametrize(
    "expression", [".environment", ".env", "$env", ".[] | .envelope", "{environ: .a}"]
)
def test_a_jq_expression_that_only_selects_fields_is_allowed(
    default: Policy, expression: str
) -> None:
    allowed(default.decide_binary("gh", ["pr", "list", "--jq", expression], api_owner=GITHUB))


def test_a_jq_expression_after_the_separator_is_not_an_option(default: Policy) -> None:
    allowed(default.decide_binary("gh", ["pr", "view", "--", "--jq", "env"], api_owner=GITHUB))


# -- decide_operation --------------------------------------------------------------------------


def test_denied_operations_match_the_leading_words_in_any_case(tmp_path: Path) -> None:
    policy = load_policy(user_policy(tmp_path, "denied_operations: [github repo DELETE]\n"))
    for args in (["repo", "delete", "a/b"], ["REPO", "Delete"], ["repo", "delete", "x", "y=1"]):
        decision = policy.decide_operation("GitHub", args)
        refused(decision, "denied_operations: github repo delete")
    for args in (["repo"], ["repo", "view", "delete"], ["repo", "deleted"]):
        allowed(policy.decide_operation("github", args))
    allowed(policy.decide_operation("files", ["repo", "delete"]))


@pytest.mark.parametrize(
    ("args", "denied"),
    [
        (["api", "PUT", "/repos/a/b/actions/secrets/X"], True),
        (["api", "put", "/repos/a/b/environments/e/secrets/X"], True),
        (["api", "Post", "/orgs/o/actions/secrets/X"], True),
        (["api", "PUT", "/repos/a/b/actions/SECRETS/X"], True),
        (["api", "GET", "/repos/a/b/actions/secrets/X"], False),
        (["api", "PUT", "/repos/a/b/topics"], False),
        (["api", "PUT", "/secrets"], False),
    ],
)
def test_glob_words(default: Policy, args: list[str], denied: bool) -> None:
    decision = default.decide_operation("github", args, effect="write", operation="api")
    assert decision.allowed is not denied, decision


def test_a_question_mark_glob_matches_one_character(tmp_path: Path) -> None:
    policy = load_policy(user_policy(tmp_path, "denied_operations: ['files write ?.txt']\n"))
    refused(policy.decide_operation("files", ["write", "a.txt", "x"]), "denied_operations")
    allowed(policy.decide_operation("files", ["write", "ab.txt", "x"]))


def test_a_destroy_is_refused_unless_allowed_deliberately(default: Policy) -> None:
    decision = default.decide_operation(
        "files", ["delete", "old.txt"], effect="destroy", operation="delete"
    )
    refused(decision, "effect destroy (allowed_destructive)")
    assert decision.reason == (
        "'files delete' destroys what it names, and no allowed_destructive entry lists it"
    )
    assert "['files delete'] allows every call" in decision.hint
    assert "['files delete old.txt'] this one only" in decision.hint
    for effect in (None, "read", "write"):
        allowed(default.decide_operation("files", ["delete", "old.txt"], effect=effect))


def test_allowed_destructive_entries_match_like_denied_operations(tmp_path: Path) -> None:
    policy = load_policy(
        user_policy(
            tmp_path,
            "allowed_destructive: [FILES delete, 'github api delete /repos/acme/*']\n"
            "denied_operations: ['github api delete /repos/acme/keep']\n",
        )
    )
    decision = policy.decide_operation("files", ["delete", "x"], effect="destroy")
    allowed(decision)
    assert decision.rule.startswith("allowed_destructive: files delete")
    allowed(
        policy.decide_operation("github", ["api", "DELETE", "/repos/acme/app"], effect="destroy")
    )
    refused(
        policy.decide_operation("github", ["api", "DELETE", "/repos/other/app"], effect="destroy"),
        "effect destroy",
    )
    # a denial wins over an allowance
    refused(
        policy.decide_operation("github", ["api", "DELETE", "/repos/acme/keep"], effect="destroy"),
        "denied_operations",
    )
