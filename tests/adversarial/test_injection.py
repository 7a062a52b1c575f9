"""Argument and input injection through the real CLI entry point (``cli``).

Input values full of shell syntax -- spaces, quotes, ``$``, ``${...}``,
backticks, ``;``, ``|``, newlines, leading dashes, ``--`` -- are passed with
``--input k=v`` and with ``--input k=@file``, and must reach the programs
exactly:

* as separate argv entries, byte for byte (a recording binary, ``argdump``,
  allowed by a user policy, writes its argv to a file; ``printf '<%s>'``
  echoes one; ``files write`` stores one and the test reads it back);
* never through a shell: canary commands (``$(touch CANARY)``, ``; touch
  CANARY``...) never create their file;
* a substituted value is never substituted again (``${a}`` in a value stays).

Denied argument runs stay refused when the run only appears after
substitution (``git push origin ${ref}`` with ``ref=--force``): exit 3, and
nothing ran (a recording ``git`` first on PATH proves it). A NUL byte in an
input is a clean usage error (exit 2), whichever way it comes.

The campaign prints ``injection: N inputs, K shell interpretations, D denied
runs let through``. Two more tests go beyond the policy's literal rules:
spellings git accepts for the same denied runs, and input values that move a
GitHub REST call to another route (``..`` path segments).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import FULL, dump_binary, user_policy
from tests.conftest import Result, capability, check_schema, write
from tests.github_double import GitHubDouble

INJECT = """\
version: v1
inputs:
  a:
    description: the value under test
    required: true
  b:
    description: a second value
workflow:
  - binary: argdump
    args: ["${a}", "x${a}y", "${b}", "--", "${a}${a}", "${{ a }}"]
  - binary: printf
    args: ["<%s>", "${a}"]
  - provider: files
    args: [write, out.txt, "${a}"]
"""

# The same values after an authored "--": a value starting with "-" is then an operand.
INJECT_OPERANDS = """\
version: v1
inputs:
  a:
    description: the value under test
    required: true
workflow:
  - binary: argdump
    args: ["--", "${a}", "x${a}y"]
  - binary: printf
    args: ["--", "<%s>", "${a}"]
"""

GIT_REF = """\
version: v1
inputs:
  ref:
    required: true
workflow:
  - binary: argdump
    args: [first, step]
  - binary: git
    args: [push, origin, "${ref}"]
"""

GIT_TWO = """\
version: v1
inputs:
  a:
    required: true
  b:
    required: true
workflow:
  - binary: argdump
    args: [first, step]
  - binary: git
    args: ["${a}", "${b}"]
"""


@dataclass
class Scene:
    cli: Callable[..., Result]
    work: Path
    tmp: Path
    env: dict[str, str]
    argv_log: Path
    git_log: Path
    canary: Path

    def run(self, *args: str) -> Result:
        return self.cli(*args, extra_env=self.env)

    def execute(self, cap: str, *inputs: str, json_output: bool = True) -> Result:
        pairs = [x for pair in inputs for x in ("--input", pair)]
        head = ("--output", "json") if json_output else ()
        return self.run(*head, "capability", "execute", cap, *pairs)

    def records(self, log: Path) -> list[dict[str, Any]]:
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]

    def reset(self) -> None:
        for path in (self.argv_log, self.git_log, self.work / "out.txt"):
            path.unlink(missing_ok=True)

    def canaries(self) -> list[Path]:
        """Files a shell would have created."""
        names = {self.canary.name, "pwned"}
        found = []
        for folder in (self.tmp, self.work, Path.cwd()):
            found += [folder / n for n in names if (folder / n).exists()]
        return found


@pytest.fixture
def scene(cli: Callable[..., Result], work: Path, tmp_path: Path) -> Iterator[Scene]:
    bin_dir = tmp_path / "bin"
    argv_log = tmp_path / "argv.jsonl"
    git_log = tmp_path / "git.jsonl"
    dump_binary(bin_dir, "argdump", argv_log)
    dump_binary(bin_dir, "git", git_log)  # first on PATH: records instead of pushing
    policy = user_policy(tmp_path / "policy.yaml", ["argdump", "printf"], writable=[tmp_path])
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "RUNTIME_POLICY_FILE": str(policy),
    }
    write(work / "inject.md", capability(INJECT))
    write(work / "operands.md", capability(INJECT_OPERANDS))
    write(work / "git-ref.md", capability(GIT_REF))
    write(work / "git-two.md", capability(GIT_TWO))
    yield Scene(cli, work, tmp_path, env, argv_log, git_log, tmp_path / "CANARY")


def hostile_values(canary: Path) -> list[str]:
    c = str(canary)
    values = [
        "hello world",
        "  leading and trailing  ",
        "'single quoted'",
        '"double quoted"',
        "it's",
        "mixed '\"` quotes",
        "$HOME",
        "${HOME}",
        "$PATH:$0",
        "${b}",
        "${a}",
        "${{ secrets.GITHUB_TOKEN }}",
        "$((1+1))",
        "!!",
        "$(touch pwned)",
        f"$(touch {c})",
        f"`touch {c}`",
        f"; touch {c}",
        f"x; touch {c}",
        f"| touch {c}",
        f"x | touch {c}",
        f"&& touch {c}",
        f"|| touch {c}",
        f"x & touch {c}",
        f"\ntouch {c}\n",
        f"x\n; touch {c}",
        f"> {c}",
        f">{c}",
        f"$(printf x > {c})",
        f"';touch {c};'",
        f'";touch {c};"',
        "line one\nline two",
        "crlf\r\nline",
        "tab\there",
        "-rf",
        "-",
        "--",
        "--help",
        "--output=json",
        "--input=a=b",
        "-f",
        "--force",
        "*",
        "~",
        "~/x",
        "?",
        "[a-z]*",
        "{a,b}",
        "a\\b",
        "\\",
        "\\n",
        "%s%n%x%%",
        "#comment",
        "",
        " ",
        "=",
        "a=b",
        "@file",
        "@@x",
        "..",
        "../../etc/passwd",
        "/etc/passwd",
        "\x1b[31mred\x1b[0m",
        "\x7f\x01\x02",
        "é ünïcödé 😀 \u202e",
        "\u2028\u2029\x85",
        "x" * 30000,
    ]
    return values


def as_input(name: str, value: str) -> str:
    """``--input`` text for a literal value (a leading '@' is written '@@')."""
    return f"{name}=@{value}" if value.startswith("@") else f"{name}={value}"


@dataclass
class Tally:
    inputs: int = 0
    shell: int = 0
    let_through: int = 0


def check_delivery(scene: Scene, value: str, pair: str, tally: Tally, failures: list[str]) -> None:
    scene.reset()
    tally.inputs += 1
    result = scene.execute("inject.md", pair, "b=${a}")
    shown = repr(value[:60])
    if scene.canaries():
        tally.shell += 1
        failures.append(f"{shown}: a shell ran: {scene.canaries()}")
        for path in scene.canaries():
            path.unlink()
    if value.startswith("-"):
        # where the author wrote no option, a value starting with "-" would be one: refused
        # before anything runs, naming the input; after an authored "--" it is delivered
        check_option_refused(scene, result, shown, failures)
        check_operands(scene, value, pair, shown, failures)
        return
    if value == "":
        # an empty value of a required input is refused before anything runs, naming it
        ran = scene.records(scene.argv_log)
        doc = result.json()
        if result.code != 2 or ran or doc["error"]["code"] != "empty-input":
            failures.append(f"{shown}: an empty required input: exit {result.code}, ran {ran}")
        return
    if result.code != 0:
        failures.append(
            f"{shown}: exit {result.code}: {result.stdout[-300:]}{result.stderr[-300:]}"
        )
        return
    doc = result.json()
    check_schema(doc, "execute")
    records = scene.records(scene.argv_log)
    expected = [value, f"x{value}y", "${a}", "--", value + value, "${{ a }}"]
    if [r["argv"] for r in records] != [expected]:
        got = [r["argv"] for r in records]
        failures.append(f"{shown}: argdump received {got!r:.300}")
    printed = doc["steps"][1]["data"]["stdout"]
    if printed != f"<{value}>":
        failures.append(f"{shown}: printf printed {printed!r:.200}")
    stored = (scene.work / "out.txt").read_bytes()
    # files write ends the text with a newline (specs/files.md)
    if stored != (value if value.endswith("\n") or not value else value + "\n").encode():
        failures.append(f"{shown}: files write stored {stored!r:.200}")


def check_option_refused(scene: Scene, result: Result, shown: str, failures: list[str]) -> None:
    ran = scene.records(scene.argv_log)
    if result.code != 2 or ran or (scene.work / "out.txt").exists():
        failures.append(f"{shown}: an input that would be an option: exit {result.code}, ran {ran}")
        return
    doc = result.json()
    check_schema(doc, "error")
    if doc["error"]["code"] != "input-as-option" or "input 'a'" not in doc["error"]["message"]:
        failures.append(f"{shown}: refused without naming the input: {doc['error']}")


def check_operands(scene: Scene, value: str, pair: str, shown: str, failures: list[str]) -> None:
    scene.reset()
    result = scene.execute("operands.md", pair)
    if result.code != 0:
        failures.append(f"{shown} after '--': exit {result.code}: {result.stdout[-300:]}")
        return
    got = [r["argv"] for r in scene.records(scene.argv_log)]
    if got != [["--", value, f"x{value}y"]]:
        failures.append(f"{shown} after '--': argdump received {got!r:.300}")
    printed = result.json()["steps"][1]["data"]["stdout"]
    if printed != f"<{value}>":
        failures.append(f"{shown} after '--': printf printed {printed!r:.200}")


def check_refused(scene: Scene, cap: str, inputs: tuple[str, ...], tally: Tally) -> str | None:
    """A denied run: refused before anything ran (not even the step before it): exit 3 by
    the policy, or exit 2 when an input would have become an option. Returns a failure."""
    scene.reset()
    tally.inputs += 1
    result = scene.execute(cap, *inputs)
    ran = scene.records(scene.argv_log) + scene.records(scene.git_log)
    if result.code not in (2, 3) or ran:
        tally.let_through += 1
        return f"{cap} {inputs}: exit {result.code}, ran {[r['argv'] for r in ran]}"
    doc = result.json()
    check_schema(doc, "error")
    expected = "policy-refused" if result.code == 3 else "input-as-option"
    if doc["error"]["code"] != expected or "nothing ran" not in doc["error"]["message"]:
        return f"{cap} {inputs}: refusal without its reason: {doc['error']}"
    return None


DENIED_REF = [
    "--force",
    "-f",
    "--force-with-lease",
    "--force-with-lease=main",
    "--delete",
    "-fq",
    "-qf",
]
DENIED_PAIRS = [
    ("push", "--force"),
    ("push", "-f"),
    ("push", "--force-with-lease"),
    ("push", "--force-with-lease=main:abc123"),
    ("push", "--delete"),
    ("reset", "--hard"),
    ("clean", "-f"),
    ("clean", "-fdx"),
    ("clean", "--force"),
    ("-c", "core.sshCommand=touch pwned"),
    ("--config-env=core.sshCommand=X", "fetch"),
]


def test_injection_campaign(scene: Scene, figure: Callable[[str], None]) -> None:
    tally = Tally()
    failures: list[str] = []
    values = hostile_values(scene.canary)
    if not FULL:  # the reduced campaign: every value directly, a third also from a file
        deliveries = [("direct", v) for v in values] + [("file", v) for v in values[::3]]
    else:
        deliveries = [(how, v) for v in values for how in ("direct", "file")]
    for index, (how, value) in enumerate(deliveries):
        if how == "direct":
            pair = as_input("a", value)
        else:
            source = scene.tmp / f"value-{index}.txt"
            source.write_bytes(value.encode("utf-8"))
            pair = f"a=@{source}"
        check_delivery(scene, value, pair, tally, failures)

    # NUL bytes: a clean usage error, nothing run, whichever way the value comes
    nul_file = scene.tmp / "nul.txt"
    nul_file.write_bytes(b"before\x00after")
    for pair in ("a=before\x00after", "a=\x00", f"a=@{nul_file}"):
        scene.reset()
        tally.inputs += 1
        result = scene.execute("inject.md", pair)
        ran = scene.records(scene.argv_log)
        if result.code != 2 or ran or (scene.work / "out.txt").exists():
            failures.append(f"NUL {pair!r}: exit {result.code}, ran {ran}")
        elif result.json()["error"]["code"] != "usage" or "NUL" not in result.stdout:
            failures.append(f"NUL {pair!r}: not named: {result.stdout[:300]}")

    # denied runs, whole only after substitution
    for ref in DENIED_REF:
        failure = check_refused(scene, "git-ref.md", (f"ref={ref}",), tally)
        if failure:
            failures.append(failure)
    for a, b in DENIED_PAIRS:
        failure = check_refused(scene, "git-two.md", (f"a={a}", f"b={b}"), tally)
        if failure:
            failures.append(failure)
    # options that make git or gh run a program or read the token, from an input: refused
    # whether the input is the option itself, fills its value, or names the subcommand
    for cap, inputs in option_attacks(scene):
        failure = check_refused(scene, cap, inputs, tally)
        if failure:
            failures.append(failure)
    # `runtime command run` decides the same way
    for args in (("push", "origin", "--force"), ("push", "-f"), ("reset", "--hard")):
        scene.reset()
        tally.inputs += 1
        result = scene.run("command", "run", "git", *args)
        if result.code != 3 or scene.records(scene.git_log):
            tally.let_through += 1
            failures.append(f"command run git {args}: exit {result.code}")

    # no word splitting: a whole denied run inside ONE value is one (harmless) argument
    scene.reset()
    result = scene.execute("git-ref.md", "ref=main --force")
    # (the runtime reads the user's git identity with git config --global, once per run)
    got = [
        r["argv"] for r in scene.records(scene.git_log) if r["argv"][:2] != ["config", "--global"]
    ]
    if result.code != 0 or got != [["push", "origin", "main --force"]]:
        failures.append(f"'main --force' as one value: exit {result.code}, git got {got}")

    assert not scene.canaries()
    figure(
        f"injection: {tally.inputs} inputs, {tally.shell} shell interpretations, "
        f"{tally.let_through} denied runs let through"
    )
    assert not failures, "\n".join(failures)


# Templates where an input value becomes, or fills, an option that runs a program or writes
# a file, or names the subcommand (an alias). Each is written into its own capability.
OPTION_TEMPLATES = [
    ("git", '[fetch, "${v}"]'),
    ("git", '[ls-remote, "${v}", .]'),
    ("git", '[clone, "${v}", dst]'),
    ("git", '[push, "${v}", origin]'),
    ("git", '[log, -1, "--format=%s", "${v}"]'),
    ("git", '["${v}", status]'),
    ("gh", '[api, user, "${v}"]'),
    ("gh", '[pr, list, "${v}"]'),
]
OPTION_VALUES = [
    "--upload-pack=touch {canary}; git-upload-pack",
    "-utouch {canary}",
    "--receive-pack=touch {canary}",
    "--exec=touch {canary}",
    "--output={canary}",
    "-o{canary}",
    "--config=alias.x=!touch {canary}",
    "-calias.x=!touch {canary}",
    "--jq=env.GH_TOKEN",
    "-qenv.GH_TOKEN",
    "--hostname=evil.example",
    "--method=DELETE",
    "-XDELETE",
]
# The author wrote the option; the input fills its value, which the policy keeps literal.
LITERAL_TEMPLATES = [
    ("git", '[fetch, "--upload-pack=${v}", origin]'),
    ("git", '[fetch, --upload-pack, "${v}", origin]'),
    ("git", '[fetch, "--upload-p=${v}", origin]'),
    ("git", '[clone, -u, "${v}", src, dst]'),
    ("git", '[log, "--output=${v}"]'),
    ("git", '[push, "--receive-pack=${v}", origin]'),
    ("gh", '[api, user, --jq, "${v}"]'),
    ("gh", '[api, user, -q, "${v}"]'),
    ("gh", '[pr, list, "--jq=${v}"]'),
    ("gh", '[api, user, --hostname, "${v}"]'),
]
# Whole args that name a subcommand the policy does not allow, or a writing git config.
SUBCOMMAND_VALUES = ["x", "send-pack", "daemon", "difftool", "rebase", "submodule", "config"]


def option_attacks(scene: Scene) -> list[tuple[str, tuple[str, ...]]]:
    canary = str(scene.canary)
    attacks: list[tuple[str, tuple[str, ...]]] = []
    templates = [(b, a, "option") for b, a in OPTION_TEMPLATES]
    templates += [(b, a, "literal") for b, a in LITERAL_TEMPLATES]
    for index, (binary, args, kind) in enumerate(templates):
        name = f"option-{index}.md"
        body = "version: v1\ninputs:\n  v:\n    required: true\nworkflow:\n"
        body += "  - binary: argdump\n    args: [first, step]\n"
        body += f"  - binary: {binary}\n    args: {args}\n"
        write(scene.work / name, capability(body))
        values = OPTION_VALUES if kind == "option" else [v.split("=", 1)[-1] for v in OPTION_VALUES]
        attacks += [(name, (f"v={value.format(canary=canary)}",)) for value in values]
    body = "version: v1\ninputs:\n  v:\n    required: true\nworkflow:\n"
    body += "  - binary: argdump\n    args: [first, step]\n"
    body += '  - binary: git\n    args: ["${v}", alias.x, "!touch CANARY"]\n'
    write(scene.work / "subcommand.md", capability(body))
    attacks += [("subcommand.md", (f"v={value}",)) for value in SUBCOMMAND_VALUES]
    return attacks


def test_input_names_and_pairs_are_not_injectable(scene: Scene) -> None:
    for pair in ("a b=1", "a;b=1", "=x", "noequals", "a=1", "--input=a"):
        scene.reset()
        inputs = [pair, "a=1"] if pair != "a=1" else [pair, pair]
        result = scene.execute("inject.md", *inputs)
        assert result.code == 2, (pair, result.stdout, result.stderr)
        assert not scene.records(scene.argv_log)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # git takes a unique prefix of a long option, and refspecs carry force and delete
        ("push", "--force-w"),  # = --force-with-lease
        ("push", "--force-with"),  # = --force-with-lease
        ("push", "--del"),  # = --delete
        ("push", "-d"),  # = --delete
        ("push", "+main"),  # a forced update of main
        ("push", "+HEAD:main"),
        ("push", ":main"),  # deletes the remote branch main
        ("reset", "--har"),  # = --hard
        ("clean", "--forc"),  # = --force
        # what reset --hard does, spelled otherwise
        ("checkout", "-f"),
        ("checkout", "--forc"),
        ("switch", "--discard-changes"),
    ],
)
def test_equivalent_spellings_of_denied_git_runs_are_refused(scene: Scene, a: str, b: str) -> None:
    """Spellings git 2.39 accepts for the default policy's denied runs (checked against a
    real repository: each forced, deleted, hard-reset or cleaned). A policy that refuses
    ``push --force`` but runs ``push --force-w`` lets the denied run through. As typed by
    the user (``runtime command run``) and as written in a capability."""
    scene.reset()
    typed = scene.run("command", "run", "git", a, b, "origin")
    body = f"version: v1\nworkflow:\n  - binary: git\n    args: [{a}, {json.dumps(b)}]\n"
    write(scene.work / "spelled.md", capability(body))
    written = scene.execute("spelled.md")
    ran = [r["argv"] for r in scene.records(scene.git_log)]
    assert typed.code == 3 and written.code == 3 and not ran, (
        f"git {a} {b}: exit {typed.code}/{written.code}; git ran with {ran}: let through"
    )


# -- input values inside GitHub REST routes --------------------------------------------------------

TOKEN = "rt-injection-token-5e1f"


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN) as double:
        double.add_org("acme")
        double.add_repo("acme", "app")
        yield double


def github_env(gh: GitHubDouble) -> dict[str, str]:
    return gh.runtime_env()


GITHUB_STEPS = """\
version: v1
inputs:
  v:
    required: true
workflow:
  - provider: github
    args: [{args}]
"""


def test_an_input_value_never_becomes_an_option(
    cli: Callable[..., Result], work: Path, gh: GitHubDouble
) -> None:
    """``repo list ${org}``: ORG is a positional as written; a value shaped like an option
    (``per_page=1``) stays the organization's name, percent-encoded in the route. A value
    no organization can have in a route (``a b``, ``a?x=1``, ``a#f``, ``a/b``) is refused
    at plan time (exit 2) and nothing is sent."""
    write(work / "list.md", capability(GITHUB_STEPS.format(args='repo, list, "${v}"')))
    for value in ("a b", "a?x=1", "a#f", "a/b"):
        gh.reset_counters()
        result = cli(
            "capability", "execute", "list.md", "--input", f"v={value}", extra_env=github_env(gh)
        )
        assert (result.code, gh.requests) == (2, []), (value, result.stderr)
    for value in ("per_page=1", "type=all", "--limit=1"):
        gh.reset_counters()
        result = cli(
            "--output",
            "json",
            "capability",
            "execute",
            "list.md",
            "--input",
            f"v={value}",
            extra_env=github_env(gh),
        )
        paths = [r.path for r in gh.requests]
        assert paths, (value, result.stdout)
        for path in paths:
            assert path.startswith("/orgs/") and path.split("?")[0].endswith("/repos"), (
                value,
                path,
            )
            assert "/user/repos" not in path, (value, path)


@pytest.mark.parametrize(
    ("args", "value", "route"),
    [
        (
            'file, put, acme/app, "${v}", message=m, content=c',
            "../collaborators/mallory",
            "/repos/acme/app/contents/",
        ),
        (
            'file, put, acme/app, "${v}", message=m, content=c',
            "../../../../user/following/mallory",
            "/repos/acme/app/contents/",
        ),
        ('file, put, "acme/${v}", README.md, message=m, content=c', "..", "/repos/acme/"),
        ('repo, view, "${v}"', "../user", "/repos/"),
        ('team, list, "${v}"', "..", "/orgs/"),
    ],
)
def test_an_input_value_never_leaves_the_operations_route(
    cli: Callable[..., Result], work: Path, gh: GitHubDouble, args: str, value: str, route: str
) -> None:
    """A value inside a route (PATH of ``file put``, OWNER/REPO, ORG) must stay inside it:
    ``..`` segments are normalised away by the HTTP client (RFC 3986), so the request goes
    to another REST route than the operation the reviewer read -- ``file put`` with PATH
    ``../collaborators/mallory`` is ``PUT /repos/acme/app/collaborators/mallory``."""
    write(work / "route.md", capability(GITHUB_STEPS.format(args=args)))
    gh.reset_counters()
    cli(
        "--output",
        "json",
        "capability",
        "execute",
        "route.md",
        "--input",
        f"v={value}",
        extra_env=github_env(gh),
    )
    sent = [f"{r.method} {r.path}" for r in gh.requests]
    outside = [s for s in sent if not s.split(" ", 1)[1].startswith(route)]
    assert not outside, f"{value!r} sent {outside} (the operation's route is {route}...)"
