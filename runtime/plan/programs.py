"""The profiles of the programs a step runs (:class:`runtime.provider.programs.ProgramProfile`).

The engine declares the programs it knows itself: git, its global options (read to
find its subcommand) and its helper programs, which live in its exec path
(``libexec/git-core`` as git installs itself, ``lib/git-core`` on Debian, beside the
``bin`` folder of its real file). Providers declare the programs their operations run
(:attr:`runtime.provider.ProviderBase.programs`: github's gh, with its grammar). The
profiles of one name are merged, so a provider can add what its host needs to the
engine's git. The policy reads a program's grammar from the profile of the provider
that owns it; the sandbox reads what it may execute and reach
(:mod:`runtime.execute.profiles`).
"""

from __future__ import annotations

from collections.abc import Iterable

from runtime.provider import Provider
from runtime.provider.programs import ProgramProfile

# git's global options, before its subcommand: option -> takes a value (git(1))
GIT_GLOBAL_OPTIONS: dict[str, bool] = {
    "-C": True,
    "-c": True,
    "--config-env": True,
    "--git-dir": True,
    "--work-tree": True,
    "--namespace": True,
    "--super-prefix": True,
    "--exec-path": False,
    "--html-path": False,
    "--man-path": False,
    "--info-path": False,
    "-p": False,
    "--paginate": False,
    "-P": False,
    "--no-pager": False,
    "--no-replace-objects": False,
    "--no-lazy-fetch": False,
    "--bare": False,
    "--literal-pathspecs": False,
    "--glob-pathspecs": False,
    "--noglob-pathspecs": False,
    "--icase-pathspecs": False,
    "--no-optional-locks": False,
    "--version": False,
    "-v": False,
    "--help": False,
    "-h": False,
}

# helpers read from where git puts them, never by running the program outside its sandbox
BUILT_IN = (
    ProgramProfile(
        "git",
        helper_dirs=("../lib/git-core", "../libexec/git-core"),
        global_options=GIT_GLOBAL_OPTIONS,
    ),
)


def profile(name: str, declared: Iterable[ProgramProfile]) -> ProgramProfile:
    """Every profile of ``name`` (built in, then ``declared``), merged: the lists and the
    global options unioned; of the grammar's readers (``api``, ``read_api``,
    ``hands_over``, ``named_hosts``, ``refusal``), the first profile's that has one."""
    runs: dict[str, None] = {}
    helpers: list[str] = []
    hosts: dict[str, None] = {}
    options: dict[str, bool] = {}
    merged = ProgramProfile(name)
    for found in (*BUILT_IN, *declared):
        if found.name != name:
            continue
        runs.update(dict.fromkeys(found.runs))
        helpers += [d for d in found.helper_dirs if d not in helpers]
        hosts.update(dict.fromkeys(found.hosts_of))
        for option, takes in found.global_options.items():
            options.setdefault(option, takes)
        merged = ProgramProfile(
            name,
            api=merged.api or found.api,
            read_api=merged.read_api or found.read_api,
            hands_over=merged.hands_over or found.hands_over,
            named_hosts=merged.named_hosts or found.named_hosts,
            refusal=merged.refusal or found.refusal,
        )
    return ProgramProfile(
        name,
        tuple(runs),
        tuple(helpers),
        tuple(hosts),
        options,
        merged.api,
        merged.read_api,
        merged.hands_over,
        merged.named_hosts,
        merged.refusal,
    )


def owned_profile(name: str, owner: Provider | None) -> ProgramProfile:
    """The profile of ``name`` as the engine and ``owner`` (the provider that runs the
    program, or None) declare it."""
    return profile(name, getattr(owner, "programs", ()) if owner is not None else ())
