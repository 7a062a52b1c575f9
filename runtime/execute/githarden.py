"""Hardened git: an environment in which configuration cannot make git start a program.

A capability may run ``git`` as an allow-listed binary step, but neither its
author nor its input values are trusted, and neither is the configuration of
the repositories it works in (a step may write ``.git/config``; a checkout may
contain a crafted bare repository). git starts programs named by configuration
in many places. :func:`git_environment` returns the variables to add to git's
(already minimal, allow-listed) environment so that:

* the system and the user's global configuration are not read at all
  (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_SYSTEM``, ``GIT_CONFIG_GLOBAL``); the
  user's ``user.name`` / ``user.email`` (see :func:`read_identity`) are passed
  back explicitly;
* every program-running setting that can be named is overridden in
  command-line scope (``GIT_CONFIG_COUNT`` / ``GIT_CONFIG_KEY_<n>`` /
  ``GIT_CONFIG_VALUE_<n>``), which git reads after the repository's own
  configuration, so for single-valued keys ours wins;
* a few environment variables, which git consults before any configuration,
  close what a command-line value cannot (``GIT_PAGER``, ``GIT_ASKPASS``,
  ``GIT_PROXY_COMMAND``, ``GIT_ALLOW_PROTOCOL``...).

The engine gives these variables to EVERY program a step starts
(``RunServices.run_program``), not only to ``git`` itself: whatever starts a
git (gh for ``repo clone``, ``pr create`` or to read a checkout's remotes; a
build tool a user policy allows) hands its environment on, so that git is
hardened too. Programs that are not git ignore them.

Everything is declared once, in :data:`HARDENING` (key, value, why): a key with
a dot is a configuration key, an upper-case key is an environment variable.
Each claim below was checked against git 2.39 by experiment (see
``tests/integration/test_git_hardening.py``); the list of settings was
re-derived from ``git help -c`` (git-config(1)) of that version.

Covered, one setting each (see :data:`HARDENING` for the value and why)
----------------------------------------------------------------------
``core.fsmonitor``, ``core.hooksPath`` (unless the policy allows hooks),
``core.pager``, ``core.editor``, ``sequence.editor``, ``core.askPass``,
``core.sshCommand``, ``core.alternateRefsCommand``, ``credential.helper``,
the signing programs (``gpg.program``, ``gpg.<format>.program``,
``gpg.ssh.defaultKeyCommand``) and what runs them unasked
(``commit.gpgSign``, ``tag.gpgSign``, ``tag.forceSignAnnotated``,
``push.gpgSign``, ``log.showSignature``, ``merge.verifySignatures``),
``interactive.diffFilter``, ``tar.tgz.command`` / ``tar.tar.gz.command``,
``help.format`` / ``help.autoCorrect``, ``protocol.ext.allow`` /
``protocol.fd.allow``, and for lifetime and discovery
``safe.bareRepository``, ``gc.auto``, ``maintenance.auto``,
``clean.requireForce``.

How the settings that cannot be named one by one are covered
-------------------------------------------------------------
* ``pager.<cmd>`` (a string value names a pager): ``GIT_PAGER`` is consulted
  before ``pager.<cmd>`` and ``core.pager``, and ``cat`` means "no pager".
  Besides, git starts a pager only when stdout is a terminal, which a step's
  stdout never is.
* ``protocol.allow``, ``protocol.<name>.allow``, and what reaches a transport
  by another road (``url.<base>.insteadOf`` / ``pushInsteadOf`` rewriting a
  URL to ``ext::`` or ``fd::``, ``remote.<name>.vcs`` naming a remote helper
  ``git-remote-<vcs>``): ``GIT_ALLOW_PROTOCOL`` overrides every protocol
  setting, so only file, git, http, https and ssh are used, whatever any
  configuration (the repository's, an included file's, ``clone --config``'s)
  allows.
* ``credential.<url>.helper``: the empty ``credential.helper``, read last,
  resets the whole list of helpers, URL-scoped ones too. (gh adds its own
  helper with ``-c`` after ours, for its host only: that one is gh's.)
* ``include.path`` / ``includeIf.<condition>.path``: what a repository's
  configuration includes is read in the including file's scope, before the
  command line, so every override here still wins over it; the system and
  global files, whose includes could name programs in protected scope, are
  not read at all.
* ``uploadpack.packObjectsHook`` needs nothing: git reads it only from
  "protected" configuration (system, global, command line), never from a
  repository, and the first two are /dev/null here. It cannot be set to a
  harmless value anyway (an empty value would be run as a program).
* ``core.gitProxy``: the FIRST matching entry wins (unlike nearly every other
  key), so a command-line value cannot override a repository's; an empty
  ``GIT_PROXY_COMMAND`` is consulted first and switches it off.

NOT covered (layers 1 to 3 and the operating system must hold them)
--------------------------------------------------------------------
* ``alias.<name>`` (``!cmd`` runs a shell): git never lets an alias shadow a
  builtin nor a ``git-<name>`` program on PATH, so an alias is reached only
  through a subcommand name git does not know; the policy's subcommand
  allow-list is what keeps aliases unreachable. ``help.autoCorrect`` is
  pinned so that a mistyped subcommand is never "corrected" into an alias.
* ``diff.external``: git 2.39 has no value that switches it off: an empty
  value (in configuration or ``GIT_EXTERNAL_DIFF``) makes every ``git diff``
  die with "cannot run". It is used only by porcelain ``git diff`` producing a
  patch (not ``--stat``/``--name-only``/``--quiet``, not ``log -p``/``show``
  without ``--ext-diff``); ``--no-ext-diff`` disables it.
* drivers: ``diff.<driver>.command`` / ``diff.<driver>.textconv``,
  ``merge.<driver>.driver``, ``filter.<driver>.clean|smudge|process`` (driver
  names are free). They need both a definition in repository configuration
  and an attributes line selecting the driver (``.gitattributes``,
  ``.git/info/attributes``, or a file ``core.attributesFile`` names).
* ``remote.<name>.uploadpack`` / ``receivepack`` (remote names are free; a
  ``[remote "<url>"]`` section even applies to a bare URL). For ``ssh://``
  they run on the server; for local paths and ``file://`` git runs them
  locally through the shell. ``--upload-pack``/``--receive-pack``/``--exec``
  options are the policy's business.
* ``submodule.<name>.update = !cmd`` (``git submodule update``),
  ``sendemail.*``, ``imap.tunnel``, ``mergetool.*``/``difftool.*``,
  ``guitool.*``, ``browser.<tool>.cmd``/``web.browser`` (``git web--browse``,
  ``instaweb``), custom ``tar.<format>.command`` (``git archive
  --format=<format>`` or ``-o name.<format>``): each needs a specific
  subcommand or option that the policy must not allow. ``git help``/``--help``
  (man viewers, browsers) are made to fail by an invalid ``help.format``.
* ``init.templateDir`` in a repository's configuration: ``git init`` run again
  in that repository copies the template's hooks into it. They run only where
  hooks run (a policy's ``git_hooks: true``, or the other side of a local
  push, below).

The other repository of a local transport
-----------------------------------------
For a local path or ``file://`` URL, git starts ``git-upload-pack`` /
``git-receive-pack`` in the other repository with ``GIT_CONFIG_COUNT`` and
``GIT_CONFIG_PARAMETERS`` unset, on purpose ("another repository": git's
``local_repo_env``). So none of the command-line overrides above, and none of
the ``-c`` a program such as gh adds, reach that side; the environment
variables do (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_SYSTEM``,
``GIT_CONFIG_GLOBAL``, ``GIT_ALLOW_PROTOCOL``, ``GIT_PAGER``,
``GIT_ASKPASS``...). Pushing into (or fetching from) a local repository
therefore runs ITS hooks (``hooks/``, its ``core.hooksPath``), its
``core.alternateRefsCommand`` (through the shell), ``receive.procReceiveRefs``
with its hook, ``receive.autogc``... whatever ``git_hooks`` says. (A
submodule is not "another repository": git keeps both variables for the git
it runs there.) What holds this side:

* a capability cannot write a repository's configuration or hooks: ``git
  config`` only reads, ``clone --config`` and ``--template`` are denied, and
  the files provider never writes in any git repository, bare ones included
  (``providers/files``: it looks at the file system when the step runs, so a
  repository an earlier step created counts);
* what is left is a repository that already holds such settings (one a
  checkout brought in, with executable hooks), and a folder whose ``config``
  was written BEFORE ``git init --bare`` made it a repository (git init keeps
  an existing ``config``): the operating-system layer (no shell, nothing
  written by the step executable) is the backstop. Dropping ``file`` from
  ``GIT_ALLOW_PROTOCOL`` would close it here, at the price of every local
  clone, fetch and push.

Other residual risks
--------------------
* ``git -c``, ``git --config-env`` and ``GIT_CONFIG_PARAMETERS`` are read after
  ``GIT_CONFIG_COUNT`` and win over it: the policy must refuse git's global
  options (also ``--exec-path``, ``--git-dir``...) and ``git clone``'s
  ``-c``/``--config``, wherever the args come from (gh forwards the args after
  its ``--`` to ``git clone``: they are decided as git's), and the environment
  allow-list must not pass ``GIT_CONFIG_*`` / ``GIT_EXEC_PATH`` / ``GIT_SSH*``
  through.
* Signing and verification still run the default programs (gpg, gpgsm,
  ssh-keygen) when a step asks for them explicitly (``-S``, ``--verify``,
  ``--verify-signatures``).
* ssh reads the user's ``~/.ssh/config`` (``ProxyCommand``...): that is the
  user's own, trusted file. ``GIT_SSH_COMMAND`` is left alone (it wins over
  ``core.sshCommand``; ``GIT_SSH`` does not). Runs have no controlling
  terminal, so ssh cannot prompt either.
* ``author.*`` / ``committer.*`` in repository config still beat ``user.*``
  for the recorded identity (not a program; only ``user.*`` is passed here).
"""

from __future__ import annotations

import subprocess
import unicodedata
from collections.abc import Mapping

# (key, value, why). A key containing "." is a configuration key, passed in
# command-line scope; any other key is an environment variable.
Override = tuple[str, str, str]

HOOKS_PATH_KEY = "core.hooksPath"
IDENTITY_KEYS = ("user.name", "user.email")

HARDENING: tuple[Override, ...] = (
    # -- configuration sources
    ("GIT_CONFIG_NOSYSTEM", "1", "system config is not read"),
    ("GIT_CONFIG_SYSTEM", "/dev/null", "system config is not read"),
    ("GIT_CONFIG_GLOBAL", "/dev/null", "user's global config is not read; identity is passed"),
    # -- environment variables consulted before any configuration
    ("GIT_PAGER", "cat", "no pager, whatever core.pager or pager.<cmd> say"),
    ("GIT_EDITOR", "false", "a command needing an editor fails at once"),
    ("GIT_TERMINAL_PROMPT", "0", "never prompt for credentials on the terminal"),
    # An empty value is not "unset" (prompt.c: `askpass && *askpass`): nothing runs and
    # neither core.askPass nor SSH_ASKPASS is consulted; an empty core.askPass does the same.
    ("GIT_ASKPASS", "", "empty: no askpass; core.askPass and SSH_ASKPASS are skipped"),
    # Surprise: core.gitProxy is first-match-wins, so a command-line value loses to the
    # repository's; an empty GIT_PROXY_COMMAND is consulted first and means "no proxy".
    ("GIT_PROXY_COMMAND", "", "core.gitProxy off (first match wins: config cannot override)"),
    ("GIT_ALLOW_PROTOCOL", "file:git:http:https:ssh", "no ext::, fd:: or remote helpers"),
    # -- programs named by configuration
    ("core.fsmonitor", "false", "fsmonitor hook runs on status, diff, add..."),
    (HOOKS_PATH_KEY, "/dev/null", "hooks off (unless the policy allows them)"),
    ("core.pager", "cat", "no pager"),
    ("core.editor", "false", "no editor"),
    ("sequence.editor", "false", "no rebase todo editor (it wins over GIT_EDITOR)"),
    ("core.askPass", "", "no askpass program"),
    ("core.sshCommand", "ssh", "plain ssh, not a repository-chosen command"),
    # An empty value would be run as a program named "" (fetch/push would fail).
    ("core.alternateRefsCommand", "true", "alternates advertise no refs (a hint only)"),
    ("credential.helper", "", "empty resets the helper list, credential.<url>.helper too"),
    # gpg.program and gpg.openpgp.program are two names of ONE setting (the last read wins).
    ("gpg.program", "gpg", "default signing program"),
    ("gpg.openpgp.program", "gpg", "default signing program"),
    ("gpg.x509.program", "gpgsm", "default signing program"),
    ("gpg.ssh.program", "ssh-keygen", "default signing program"),
    # Empty: git tries to start "" ("cannot run"), which starts nothing, then asks for a key.
    ("gpg.ssh.defaultKeyCommand", "", "no key command"),
    ("commit.gpgSign", "false", "no signing unless asked (-S)"),
    ("tag.gpgSign", "false", "no signing unless asked (-s)"),
    ("tag.forceSignAnnotated", "false", "no signing unless asked (-s)"),
    ("push.gpgSign", "false", "no signing unless asked (--signed)"),
    ("log.showSignature", "false", "no gpg run by every git log"),
    ("merge.verifySignatures", "false", "no gpg run by every merge and pull"),
    # Only applied to add -p's coloured diff (stdout a terminal, TERM not dumb).
    ("interactive.diffFilter", "cat", "add -p filters its diff through cat"),
    ("tar.tgz.command", "git archive gzip", "git's internal gzip"),
    ("tar.tar.gz.command", "git archive gzip", "git's internal gzip"),
    # man.viewer is a list searched in order, so it cannot be overridden; an invalid
    # help.format makes `git help X` and `git X --help` die ("unrecognized help format").
    ("help.format", "none", "invalid on purpose: git help dies before a man viewer or browser"),
    ("help.autoCorrect", "0", "a mistyped subcommand is never run as an alias"),
    ("protocol.ext.allow", "never", "ext:: runs a command"),
    ("protocol.fd.allow", "never", "fd:: talks to inherited descriptors"),
    # -- repository discovery and lifetime
    ("safe.bareRepository", "explicit", "a bare repository in the tree is not discovered"),
    ("gc.auto", "0", "no gc --auto left running after the step"),
    ("maintenance.auto", "false", "no maintenance --auto left running after the step"),
    ("clean.requireForce", "true", "git clean deletes only with -f"),
)


def _clean(value: str) -> bool:
    """True for a non-empty value without control characters (newline, NUL, DEL...)."""
    return bool(value) and not any(unicodedata.category(ch) == "Cc" for ch in value)


def git_environment(identity: Mapping[str, str], *, hooks: bool = False) -> dict[str, str]:
    """The variables to add to git's environment (see the module docstring).

    ``identity`` may hold ``user.name`` and ``user.email`` (as returned by
    :func:`read_identity`); other keys are ignored, and an empty value or one
    with control characters is not passed. With ``hooks=True`` the policy
    allows hooks deliberately and ``core.hooksPath`` is left alone. The
    result owns ``GIT_CONFIG_COUNT`` and the ``GIT_CONFIG_KEY_<n>`` /
    ``GIT_CONFIG_VALUE_<n>`` it numbers.
    """
    env: dict[str, str] = {}
    config: list[tuple[str, str]] = [
        (key, identity[key]) for key in IDENTITY_KEYS if _clean(identity.get(key, ""))
    ]
    for key, value, _why in HARDENING:
        if "." not in key:
            env[key] = value
        elif not (hooks and key == HOOKS_PATH_KEY):
            config.append((key, value))
    env["GIT_CONFIG_COUNT"] = str(len(config))
    for n, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    return env


def read_identity(git: str, environ: Mapping[str, str], timeout: float = 5.0) -> dict[str, str]:
    """``user.name`` / ``user.email`` from the user's global git config only.

    git runs without a shell, with stdin from /dev/null, in ``/`` (so that no
    repository, and none of its configuration, is discovered), with only
    ``HOME``, ``XDG_CONFIG_HOME`` and ``PATH`` from ``environ`` plus
    ``GIT_CONFIG_NOSYSTEM=1``. ``include.path`` is followed; ``includeIf
    "gitdir:..."`` therefore never matches. When a key is set more than once
    the last value wins, as in git. A missing git, missing config, a failure
    or a timeout give ``{}``; values with control characters are dropped.
    """
    env = {k: environ[k] for k in ("HOME", "XDG_CONFIG_HOME", "PATH") if k in environ}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    argv = [git, "config", "--global", "--includes", "-z", "--get-regexp", r"^user\.(name|email)$"]
    try:
        done = subprocess.run(
            argv,
            env=env,
            cwd="/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        return {}
    if done.returncode != 0:
        return {}
    found: dict[str, str] = {}
    # -z: each entry is "key\nvalue\0"; a value may itself contain a newline.
    for entry in done.stdout.split(b"\0"):
        key, sep, raw = entry.partition(b"\n")
        name = key.decode("ascii", "replace").lower()
        if not sep or name not in ("user.name", "user.email"):
            continue
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError:
            found.pop(name, None)
            continue
        if _clean(value):
            found[name] = value
        else:
            found.pop(name, None)
    return {key: found[key] for key in IDENTITY_KEYS if key in found}


__all__ = ["HARDENING", "IDENTITY_KEYS", "Override", "git_environment", "read_identity"]
