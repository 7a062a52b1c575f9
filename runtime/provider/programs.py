"""What runtime knows of a program a provider's operations run, as data: its
:class:`ProgramProfile`, with the command-line grammar the policy reads
(:class:`Subcommand`, :class:`ApiRequest`, :class:`Handover`, :data:`UNKNOWN`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from runtime.provider.inspection import Decision

# What stands for an input's value when a step is decided before its inputs are known
# (validation): no value contains it (an input with a NUL is refused). A rule that would
# decide on it does not decide (a program's ``refusal`` included): it is left to plan
# time, so that what is refused then is refused whatever the inputs are.
UNKNOWN = "\x00"


class Subcommand(NamedTuple):
    """The subcommand a program's args name (:meth:`ProgramProfile.subcommand`)."""

    name: str | None  # None: the args name no subcommand (``git --version``)
    position: int  # its index in the args (len(args) when none)
    problem: str = ""  # why no subcommand could be told, when the args cannot be read


class ApiRequest(NamedTuple):
    """The request a program's ``api`` subcommand sends (``gh api ARGS``), read from the
    args after the subcommand (:attr:`ProgramProfile.read_api`): the policy decides it as
    the owning provider's ``api`` operation (``github api METHOD ROUTE``) and, when it
    goes to the GraphQL endpoint, each of its ``documents`` as the provider's GraphQL
    operation."""

    method: str  # upper case ("" with a problem)
    route: str  # as the program requests it
    problem: str = ""  # why the args cannot be read as the program reads them
    hint: str = ""  # what to write instead, with a problem
    graphql: bool = False  # the route is the provider's GraphQL endpoint
    documents: tuple[str, ...] = ()  # the GraphQL documents it sends, in order
    graphql_problem: str = ""  # why its documents cannot be known before the step runs


class Handover(NamedTuple):
    """Args a program's call hands to another program (``gh repo clone REPO DIR -- ARGS``
    runs ``git clone ARGS DIR``), read by :attr:`ProgramProfile.hands_over`: the policy
    decides them as that program's own call (``git clone ARGS``), and an input among
    them must not start with ``-`` unless that program's ``--`` came first."""

    command: str  # the handing call's command, as its words ("repo clone")
    program: str  # the program handed to ("git")
    words: tuple[str, ...]  # what leads the handed args in that program's call: ("clone",)
    # indexes into the caller's args of what the other program gets, in its order
    indexes: tuple[int, ...]
    # the index of the caller's `--`, after which its args are the other program's
    # options again; None when there is none
    dash: int | None
    problem: str = ""  # why the args cannot be read as the program reads them
    hint: str = ""  # what to write instead, with a problem


def find_subcommand(
    program: str, global_options: Mapping[str, bool], args: Sequence[str]
) -> Subcommand:
    """The first positional of ``args`` after the ``global_options`` (option -> whether it
    takes a value) ``program`` accepts before its subcommand. Anything else before the
    subcommand is not understood, so no subcommand can be named."""
    index = 0
    while index < len(args):
        arg = args[index]
        if not arg.startswith("-") or arg == "-":
            return Subcommand(arg, index)
        name, eq, _ = arg.partition("=")
        if name not in global_options:
            return Subcommand(
                None,
                index,
                f"'{arg}' before the subcommand is not a global option runtime knows for {program}",
            )
        index += 2 if global_options[name] and not eq else 1
    return Subcommand(None, len(args))


@dataclass(frozen=True)
class ProgramProfile:
    """What runtime knows of a program a step runs, as data that the sandbox and the
    policy read.

    The engine declares the programs it knows (git); a provider declares the
    programs its operations run (github runs gh) and what they need from it.
    Profiles of one program are merged (the engine's, then the providers'). Inside the
    sandbox the program may execute itself, the programs it ``runs`` (found on PATH,
    with their own profiles), the programs in its ``helper_dirs`` (folders, relative to
    the folder the program's real file is in: git's exec path ``../lib/git-core``)
    and what the policy's ``admitted_helpers`` names; nothing else. It reaches the hosts
    of the credentials in ``hosts_of`` (the context's host and its aliases) and those
    the policy's ``binary_hosts`` names for it, through runtime's proxy; no other
    network.

    Its command-line grammar, as far as the policy reads it (every part optional; a
    program without one is read as knowing nothing of it):

    * ``global_options``: the options it accepts before its subcommand (option ->
      whether it takes a value), for :meth:`subcommand`;
    * ``api``: the subcommand that calls the owning provider's API as its ``api`` and
      GraphQL operations do (gh's ``api``), read by ``read_api`` (the args after the
      subcommand) into the :class:`ApiRequest` the policy decides as those operations;
    * ``hands_over``: the args a call hands to another program (:class:`Handover`), or
      None;
    * ``named_hosts``: (what, host) for each host a call names: a program with it is
      pinned to its credential's host, and a call naming another is refused;
    * ``refusal``: a refusal of the program's own (a :class:`Decision`), or None; an arg
      holding :data:`UNKNOWN` is not decided on.
    """

    name: str
    runs: tuple[str, ...] = ()
    helper_dirs: tuple[str, ...] = ()
    hosts_of: tuple[str, ...] = ()
    global_options: Mapping[str, bool] = field(default_factory=dict, hash=False)
    api: str | None = None
    read_api: Callable[[Sequence[str]], ApiRequest] | None = None
    hands_over: Callable[[Sequence[str]], Handover | None] | None = None
    named_hosts: Callable[[Sequence[str]], list[tuple[str, str]]] | None = None
    refusal: Callable[[Sequence[str]], Decision | None] | None = None

    def subcommand(self, args: Sequence[str]) -> Subcommand:
        """The first positional after the global options the program accepts."""
        return find_subcommand(self.name, self.global_options, args)
