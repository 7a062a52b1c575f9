"""Providers, found through the ``runtime.providers`` entry-point group.

A third party adds a provider by publishing an entry point in that group
whose object satisfies :class:`runtime.provider.Provider` (subclassing
:class:`runtime.provider.ProviderBase` gives the optional parts). Loading a provider
imports only its declarations; transports are imported when a step runs.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # at run time only the entry points' own modules import it
    from runtime.provider import Provider
    from runtime.provider.programs import ProgramProfile

GROUP = "runtime.providers"
# What a provider object must have (runtime.provider.Provider; ProviderBase gives the
# defaults of everything but name, summary, operations and execute).
PROTOCOL = (
    "name",
    "summary",
    "operations",
    "credentials",
    "settings",
    "scaffold",
    "scaffold_network",
    "execute",
    "inspect",
    "check",
    "check_token",
    "ping",
)


class Registry:
    def __init__(self) -> None:
        self.providers: dict[str, Provider] = {}
        self.broken: dict[str, str] = {}  # name -> why it failed to load

    def get(self, name: str) -> Provider | None:
        return self.providers.get(name)

    def names(self) -> list[str]:
        return sorted(self.providers)

    def credential_owner(self, credential: str) -> Provider | None:
        """The provider that declares the credential ``credential``."""
        for provider in self.providers.values():
            if any(kind.name == credential for kind in provider.credentials):
                return provider
        return None

    def program_owner(self, program: str) -> Provider | None:
        """The provider whose operations run ``program`` (github for gh): its ``api``
        subcommand, run as a binary step, is decided like the provider's ``api`` call."""
        for provider in self.providers.values():
            if any(op.program == program for op in provider.operations):
                return provider
        return None

    def program_profiles(self) -> list[ProgramProfile]:
        """The program profiles every provider declares (``programs``; none by default)."""
        return [
            p for provider in self.providers.values() for p in getattr(provider, "programs", ())
        ]

    def credential_names(self) -> list[str]:
        return sorted({k.name for p in self.providers.values() for k in p.credentials})


@cache
def load_registry() -> Registry:
    from runtime.home.entrypoints import entry_points

    registry = Registry()
    for ep in entry_points(GROUP):
        if ep.name in registry.providers:
            continue  # first registration wins; deterministic by metadata order
        try:
            obj = ep.load()
        except Exception as exc:  # a third-party provider must not take runtime down
            registry.broken[ep.name] = f"{type(exc).__name__}: {exc}"
            continue
        missing = [a for a in PROTOCOL if not hasattr(obj, a)]
        if missing:
            registry.broken[ep.name] = f"not a provider (no {', '.join(missing)})"
            continue
        registry.providers[ep.name] = cast("Provider", obj)
    return registry


def provider_names() -> list[str]:
    """Names of registered providers without importing them (for help output)."""
    from runtime.home.entrypoints import entry_points

    return sorted({ep.name for ep in entry_points(GROUP)})
