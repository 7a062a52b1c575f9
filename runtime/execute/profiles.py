"""Program profiles: what the sandbox lets a program a step runs execute and reach.

The engine declares the programs it knows itself (git: its helper programs
live in its exec path, ``libexec/git-core`` as git installs itself,
``lib/git-core`` on Debian, beside the ``bin`` folder of its real file); providers declare the
programs their operations run (:attr:`runtime.provider.ProviderBase.programs`).
The profiles of one name are merged, so a provider can add what its host
needs to the engine's git.
"""

from __future__ import annotations

from collections.abc import Iterable

from runtime.provider import ProgramProfile

# read from where git puts them, never by running the program outside its sandbox
BUILT_IN = (ProgramProfile("git", helper_dirs=("../lib/git-core", "../libexec/git-core")),)


def profile(name: str, declared: Iterable[ProgramProfile]) -> ProgramProfile:
    """Every profile of ``name`` (built in, then ``declared``), merged."""
    runs: dict[str, None] = {}
    helpers: list[str] = []
    hosts: dict[str, None] = {}
    for found in (*BUILT_IN, *declared):
        if found.name != name:
            continue
        runs.update(dict.fromkeys(found.runs))
        helpers += [d for d in found.helper_dirs if d not in helpers]
        hosts.update(dict.fromkeys(found.hosts_of))
    return ProgramProfile(name, tuple(runs), tuple(helpers), tuple(hosts))
