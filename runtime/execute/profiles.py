"""Program profiles: what the sandbox lets a program a step runs execute and reach.

The profiles themselves, the engine's (git) and those providers declare
(:attr:`runtime.provider.ProviderBase.programs`), merged by name, are
:mod:`runtime.plan.programs`'.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from runtime.plan.programs import BUILT_IN as BUILT_IN
from runtime.plan.programs import profile
from runtime.provider.programs import ProgramProfile


@dataclass(frozen=True)
class ProgramAccess:
    """What a confined program may execute besides itself, and the hosts it may reach."""

    executables: tuple[str, ...]
    hosts: tuple[str, ...]


def access(
    program: str,
    *,
    declared: Iterable[ProgramProfile],
    path: str,
    admitted: Mapping[str, Iterable[str]],
    named_hosts: Mapping[str, Iterable[str]],
    credential_hosts: Callable[[str], tuple[str, ...]],
) -> ProgramAccess:
    """``program`` (its absolute path) and the programs its profile says it runs, found on
    ``path``: their helper folders, the hosts of their ``hosts_of`` credentials
    (``credential_hosts``) and those ``named_hosts`` (the policy's binary_hosts) lists.
    ``admitted`` (admitted_helpers) applies to the step's own program only, for all it
    runs (one Landlock domain): git's admitted shell is not gh's, whose git holds the
    token."""
    declared = tuple(declared)
    executables: list[str] = list(admitted.get(os.path.basename(program), ()))
    hosts: dict[str, None] = {}
    seen: set[str] = set()
    pending = [(os.path.basename(program), program)]
    while pending:
        name, where = pending.pop(0)
        if name in seen:
            continue
        seen.add(name)
        executables.append(where)
        found = profile(name, declared)
        folder = os.path.dirname(os.path.realpath(where))
        for helpers in found.helper_dirs:
            place = os.path.normpath(os.path.join(folder, helpers))
            if os.path.isdir(place):
                executables.append(place)
        for credential in found.hosts_of:
            hosts.update(dict.fromkeys(credential_hosts(credential)))
        hosts.update(dict.fromkeys(named_hosts.get(name, ())))
        for other in found.runs:
            located = shutil.which(other, path=path)
            if located is not None:
                pending.append((other, located))
    return ProgramAccess(tuple(executables), tuple(hosts))
