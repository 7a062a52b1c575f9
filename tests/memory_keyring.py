"""An in-memory keyring backend for tests: nothing touches the OS keyring.

Two ways to use it:

* hand an instance to the Auth Engine directly::

      AuthEngine(workspace, Redactor(), keyring_backend=MemoryKeyring(store={}))

* select it for the real CLI (in process) through keyring's own switch::

      PYTHON_KEYRING_BACKEND=tests.memory_keyring.MemoryKeyring

  (the repository root must be importable, which it is when pytest runs from
  it).  keyring caches the backend it picked in a module global, so a test
  that selects it this way must also reset that cache; see
  :func:`use_memory_keyring`.

Instances created without ``store=`` share one class-level dictionary, so
every instance keyring makes during a test sees the same secrets, and
:attr:`MemoryKeyring.reads` lists every read of any of them; call
:meth:`MemoryKeyring.reset` between tests.

The backend has a high priority (:data:`PRIORITY`) when it is selected, but
it is *not viable for keyring's automatic detection*: its ``priority`` raises
``RuntimeError`` (keyring's documented way of saying "not suitable here")
unless ``PYTHON_KEYRING_BACKEND`` names this class. Merely importing this
module therefore never changes which keyring other tests in the same process
get.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

import keyring
import keyring.core
from jaraco.classes.properties import classproperty
from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError

PRIORITY = 50.0
SELECTOR = f"{__name__}.MemoryKeyring"


class MemoryKeyring(KeyringBackend):
    """Secrets in a dict keyed by ``(service, username)``."""

    _shared: ClassVar[dict[tuple[str, str], str]] = {}
    # every get_password asked of any instance, as (service, username): how often a run
    # would have gone to the Secret Service (a locked keyring may prompt each time)
    reads: ClassVar[list[tuple[str, str]]] = []

    @classproperty
    def priority(cls) -> float:
        if os.environ.get("PYTHON_KEYRING_BACKEND") == SELECTOR:
            return PRIORITY
        raise RuntimeError(
            f"MemoryKeyring is a test backend: select it with PYTHON_KEYRING_BACKEND={SELECTOR}"
        )

    def __init__(self, store: dict[tuple[str, str], str] | None = None) -> None:
        super().__init__()
        self.store = self._shared if store is None else store

    @classmethod
    def reset(cls) -> None:
        """Forget every secret held in the shared store, and every read."""
        cls._shared.clear()
        cls.reads.clear()

    @classmethod
    def shared(cls) -> dict[tuple[str, str], str]:
        """The shared store (what instances made by keyring itself use)."""
        return cls._shared

    def get_password(self, service: str, username: str) -> str | None:
        self.reads.append((service, username))
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        try:
            del self.store[(service, username)]
        except KeyError:
            raise PasswordDeleteError(f"no password for {username!r} in {service!r}") from None


class BrokenKeyring(KeyringBackend):
    """A backend whose every operation raises, like a keyring daemon that went away."""

    @classproperty
    def priority(cls) -> float:
        raise RuntimeError("BrokenKeyring is only ever handed to the Auth Engine explicitly")

    def __init__(self, error: Exception | None = None) -> None:
        super().__init__()
        self.error = error or RuntimeError("the keyring daemon went away")

    def get_password(self, service: str, username: str) -> str | None:
        raise self.error

    def set_password(self, service: str, username: str, password: str) -> None:
        raise self.error

    def delete_password(self, service: str, username: str) -> None:
        raise self.error


def use_memory_keyring(monkeypatch: Any) -> dict[tuple[str, str], str]:
    """Make ``keyring.get_keyring()`` resolve (again) to a fresh MemoryKeyring.

    Sets ``PYTHON_KEYRING_BACKEND`` in ``os.environ`` and clears keyring's
    cached backend, so the next ``get_keyring()`` builds the backend from the
    variable. The CLI fixtures replace the whole environment per call, so
    callers pass ``PYTHON_KEYRING_BACKEND`` in their ``extra_env`` as well.
    Returns the shared store for assertions.
    """
    MemoryKeyring.reset()
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", SELECTOR)
    monkeypatch.setattr(keyring.core, "_keyring_backend", None)
    return MemoryKeyring.shared()
