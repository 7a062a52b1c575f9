"""Providers, found through the ``runtime.providers`` entry-point group.

A third party adds a provider by publishing an entry point in that group
whose object satisfies :class:`runtime.provider.Provider`. Loading a provider
imports only its declarations; transports are imported when a step runs.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # at run time only the entry points' own modules import it
    from runtime.provider import Provider

GROUP = "runtime.providers"


class Registry:
    def __init__(self) -> None:
        self.providers: dict[str, Provider] = {}
        self.broken: dict[str, str] = {}  # name -> why it failed to load

    def get(self, name: str) -> Provider | None:
        return self.providers.get(name)

    def names(self) -> list[str]:
        return sorted(self.providers)


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
        missing = [a for a in ("name", "operations", "execute") if not hasattr(obj, a)]
        if missing:
            registry.broken[ep.name] = f"not a provider (no {', '.join(missing)})"
            continue
        registry.providers[ep.name] = cast("Provider", obj)
    return registry


def provider_names() -> list[str]:
    """Names of registered providers without importing them (for help output)."""
    from runtime.home.entrypoints import entry_points

    return sorted({ep.name for ep in entry_points(GROUP)})
