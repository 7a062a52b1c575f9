"""The trusted last step inside a binary step's sandbox: Landlock, then the program.

bubblewrap builds the sandbox (mounts, namespaces) and runs this file's code
as its program, with the interpreter runtime itself runs on, started as
``python -I -S -B -c SOURCE WORDS... -- PROGRAM ARGS...``: isolated from the
environment and the working folder, without ``site``, reading the source
from argv (never from a file a step could have written). A Landlock domain
forbids changing mounts, so it can only be made here, after bubblewrap is
done, and just before the program is executed. What it does:

1. for a step that reaches the network, it listens on the sandbox's own
   loopback (a network namespace of its own, empty but for ``lo``) and
   carries each connection to runtime's host-filtering proxy, a unix socket
   bound into the sandbox. Programs find it through ``HTTPS_PROXY``; a
   loopback service the step may reach (``localhost:8443``) is listened on
   at its own address, since clients do not send loopback through a proxy;
2. it makes a Landlock ruleset that handles execution: only the files and
   folders in ``exec`` may be executed (the program, its ELF interpreter,
   its profile's helpers such as git's exec path), so no shell, interpreter
   or anything written in the roots or the private ``/tmp`` can start. Where
   the kernel offers them it also handles TCP connect (only the bridge's
   ports) and scopes abstract unix sockets and signals to the domain;
3. it restricts itself (``no_new_privs`` first) and executes the program.
   With bridges it forks first: the child is restricted and becomes the
   program, the parent carries the connections and ends with the child's
   exit status. The scope on signals keeps the program from signalling it.

Everything here is the standard library; an error is one line on stderr
starting ``runtime-confine:`` and exit status 126, before the program runs.
This module is data to the engine (:func:`source`); it never imports runtime.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported: startup is the cost of every step
if TYPE_CHECKING:  # annotations only: the code inside imports as little as it can
    import ctypes
    import socket
    from typing import Any

    Listener = tuple[socket.socket, dict[str, Any]]

EXIT_SETUP = 126

# linux/landlock.h
_SYS_CREATE, _SYS_ADD_RULE, _SYS_RESTRICT = 444, 445, 446
_CREATE_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_FS_EXECUTE = 1 << 0
_FS_REFER = 1 << 13  # ABI 2
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_PR_SET_NO_NEW_PRIVS = 38


def _fail(message: str) -> None:
    sys.stderr.write(f"runtime-confine: {message}\n")
    sys.stderr.flush()
    os._exit(EXIT_SETUP)


def _ruleset(config: dict[str, Any]) -> tuple[ctypes.CDLL, int]:
    """The Landlock ruleset (its fd) of the config: execute rights, TCP ports, scopes."""
    import ctypes
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = int(libc.syscall(_SYS_CREATE, None, 0, _CREATE_VERSION))
    if abi < 1:
        _fail("the kernel offers no Landlock: executables cannot be restricted")
    net = abi >= 4
    scoped = abi >= 6
    # From ABI 2 every ruleset denies moving a file to another folder (EXDEV) unless it
    # handles REFER and a rule allows it: allowed everywhere, as it was; Landlock still
    # refuses a move that would let a file gain the right to be executed.
    refer = _FS_REFER if abi >= 2 else 0
    attr = struct.pack("=Q", _FS_EXECUTE | refer)
    if net or scoped:
        attr += struct.pack("=Q", _NET_CONNECT_TCP if net else 0)
    if scoped:
        attr += struct.pack("=Q", _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
    buffer = ctypes.create_string_buffer(attr, len(attr))
    fd = int(libc.syscall(_SYS_CREATE, buffer, ctypes.c_size_t(len(attr)), 0))
    if fd < 0:
        _fail(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    rules = [("/", refer)] if refer else []
    rules += [(path, _FS_EXECUTE) for path in config.get("exec", [])]
    for path, access in rules:
        try:
            target = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # a helper this machine does not have
        rule = ctypes.create_string_buffer(struct.pack("=Qi", access, target), 12)
        done = libc.syscall(_SYS_ADD_RULE, fd, _RULE_PATH_BENEATH, rule, 0)
        os.close(target)
        if done != 0:
            _fail(f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
    if net:
        for port in config.get("ports", []):
            rule = ctypes.create_string_buffer(struct.pack("=QQ", _NET_CONNECT_TCP, port), 16)
            if libc.syscall(_SYS_ADD_RULE, fd, _RULE_NET_PORT, rule, 0) != 0:
                _fail(f"landlock_add_rule port {port}: {os.strerror(ctypes.get_errno())}")
    return libc, fd


def _restrict(libc: ctypes.CDLL, fd: int) -> None:
    import ctypes

    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail(f"no_new_privs: {os.strerror(ctypes.get_errno())}")
    if libc.syscall(_SYS_RESTRICT, fd, 0) != 0:
        _fail(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    os.close(fd)


def _listeners(bridges: list[dict[str, Any]]) -> list[Listener]:
    import socket

    made: list[Listener] = []
    for bridge in bridges:
        address, port = str(bridge["address"]), int(bridge["port"])
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((address, port))
            sock.listen(64)
        except OSError as exc:
            if family == socket.AF_INET6:
                continue  # no IPv6 loopback in this namespace: clients fall back to IPv4
            _fail(f"cannot listen on {address}:{port} inside the sandbox: {exc.strerror}")
        made.append((sock, bridge))
    return made


def _carry(listeners: list[Listener], proxy: str) -> None:
    """Serve every listener in daemon threads: each connection goes to the proxy's socket,
    opened with a CONNECT for a fixed target (a loopback service) or passed as it is."""
    import socket
    import threading

    def pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
                try:  # noqa: SIM105 (contextlib is one import more inside)
                    s.shutdown(how)
                except OSError:
                    pass

    def serve(client: socket.socket, target: str | None) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(proxy)
            if target:
                upstream.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
                answer = b""
                while b"\r\n\r\n" not in answer and len(answer) < 8192:
                    chunk = upstream.recv(1)
                    if not chunk:
                        break
                    answer += chunk
                if not answer.startswith((b"HTTP/1.1 200", b"HTTP/1.0 200")):
                    raise OSError("refused")
        except OSError:
            client.close()
            upstream.close()
            return
        back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
        back.start()
        pump(client, upstream)
        back.join()
        client.close()
        upstream.close()

    def accept(sock: socket.socket, target: str | None) -> None:
        while True:
            try:
                client, _ = sock.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(client, target), daemon=True).start()

    for sock, bridge in listeners:
        target = bridge.get("target")
        args = (sock, str(target) if target else None)
        threading.Thread(target=accept, args=args, daemon=True).start()


def parse(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The config words before ``--`` (``exec=PATH``, ``port=N``, ``proxy=PATH``,
    ``bridge=ADDRESS,PORT[,TARGET]``), and the program after it."""
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        _fail("usage: WORDS... -- PROGRAM [ARGS...]")
    end = argv.index("--")
    config: dict[str, Any] = {"exec": [], "ports": [], "bridges": [], "proxy": None}
    for word in argv[:end]:
        key, _, value = word.partition("=")
        if key == "exec":
            config["exec"].append(value)
        elif key == "port":
            config["ports"].append(int(value))
        elif key == "proxy":
            config["proxy"] = value
        elif key == "bridge":
            address, port, target = [*value.split(",", 2), ""][:3]
            config["bridges"].append({"address": address, "port": int(port), "target": target})
        else:
            _fail(f"unknown word {word!r}")
    return config, argv[end + 1 :]


def main(argv: list[str]) -> None:
    config, program = parse(argv)
    bridges = config.get("bridges") or []
    listeners = _listeners(bridges) if bridges else []
    libc, fd = _ruleset(config)
    if not listeners:
        _restrict(libc, fd)
        try:
            os.execv(program[0], program)
        except OSError as exc:
            _fail(f"cannot execute {program[0]}: {exc.strerror}")
    pid = os.fork()
    if pid == 0:
        for sock, _ in listeners:
            sock.close()
        _restrict(libc, fd)
        try:
            os.execv(program[0], program)
        except OSError as exc:
            _fail(f"cannot execute {program[0]}: {exc.strerror}")
    os.close(fd)
    _carry(listeners, str(config["proxy"]))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    os._exit(
        os.waitstatus_to_exitcode(status) % 256
        if os.WIFEXITED(status)
        else 128 + os.WTERMSIG(status)
    )


if __name__ == "__main__":
    main(sys.argv[1:])
