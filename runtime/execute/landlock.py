"""What the kernel's Landlock offers here, and which files a confined program may execute.

Landlock itself is applied inside the sandbox by :mod:`runtime.execute.inside`,
with three syscalls through ctypes. No binding from PyPI is used: the ones
there are development releases that predate ABI 6 (scopes), and the code
inside the sandbox must import nothing but the standard library, since it
runs with ``python -I -S`` before the program, where importing from the
virtual environment would mean trusting files a step might write.

This module runs in runtime's own process: it asks the kernel for its ABI
version (once) and reads a program's ELF interpreter, which the kernel opens
for execution too, so it must be allowed with the program.
"""

from __future__ import annotations

import functools
import os
import struct
import sys

_SYS_CREATE = 444
_CREATE_VERSION = 1

# what each ABI adds that runtime uses
EXECUTE_ABI = 1  # LANDLOCK_ACCESS_FS_EXECUTE
TCP_ABI = 4  # LANDLOCK_ACCESS_NET_CONNECT_TCP
SCOPE_ABI = 6  # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, LANDLOCK_SCOPE_SIGNAL


@functools.cache
def abi() -> int:
    """The Landlock ABI version the kernel offers; 0 when it offers none (or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        version = int(libc.syscall(_SYS_CREATE, None, 0, _CREATE_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


@functools.cache
def elf_interpreter(path: str) -> str | None:
    """The real path of the ELF interpreter (``PT_INTERP``) ``path`` names, or None for a
    static program, a script or a file that cannot be read."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF":
                return None
            wide = head[4] == 2
            order = "<" if head[5] == 1 else ">"
            if wide:
                (phoff,) = struct.unpack_from(order + "Q", head, 32)
                phentsize, phnum = struct.unpack_from(order + "HH", head, 54)
            else:
                (phoff,) = struct.unpack_from(order + "I", head, 28)
                phentsize, phnum = struct.unpack_from(order + "HH", head, 42)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            for n in range(phnum):
                entry = table[n * phentsize : (n + 1) * phentsize]
                if len(entry) < phentsize or struct.unpack_from(order + "I", entry, 0)[0] != 3:
                    continue  # not PT_INTERP
                if wide:
                    (offset,) = struct.unpack_from(order + "Q", entry, 8)
                    (size,) = struct.unpack_from(order + "Q", entry, 32)
                else:
                    (offset,) = struct.unpack_from(order + "I", entry, 4)
                    (size,) = struct.unpack_from(order + "I", entry, 16)
                f.seek(offset)
                name = f.read(min(size, 4096)).rstrip(b"\0").decode("utf-8", "replace")
                return os.path.realpath(name) if name.startswith("/") else None
    except (OSError, struct.error):
        return None
    return None


def executables(paths: list[str]) -> list[str]:
    """``paths`` as real paths, each file's ELF interpreter after it, without duplicates."""
    found: dict[str, None] = {}
    for path in paths:
        real = os.path.realpath(path)
        found.setdefault(real, None)
        if os.path.isfile(real):
            interpreter = elf_interpreter(real)
            if interpreter is not None:
                found.setdefault(interpreter, None)
    return list(found)


@functools.cache
def source() -> str:
    """The code run inside the sandbox (:mod:`runtime.execute.inside`), read once."""
    from pathlib import Path

    return (Path(__file__).with_name("inside.py")).read_text(encoding="utf-8")


def interpreter() -> tuple[str, str]:
    """(the Python that runs the code inside, the folder its standard library lives in)."""
    return os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix)
