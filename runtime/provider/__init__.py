"""The provider interface: what a provider may use, and nothing else.

A provider is a package and an entry point (group ``runtime.providers``); it imports
this package (its submodules included), the standard library and its own
dependencies only (an import contract holds it). Here, in the order a step meets
them:

* the :class:`Operation` a provider declares, as data, with its arguments
  (:class:`Positional`, :class:`Option`), and the :class:`BoundCall` the engine binds
  from a step's args as authored;
* what a provider says of a call before it runs (:class:`Inspection`, a
  :class:`Decision`, a :class:`Preview` of what it would change), and what it may ask of the run (:class:`RunContext`);
* what a step gets to run (:class:`StepEnvironment`) and gives back
  (:class:`StepOutcome`), or the failure it raises: :class:`StepError`, or a refusal
  (:class:`PolicyRefusal`, :class:`MissingCredential`, :class:`MissingCapability`),
  each with its exit code;
* what a provider declares besides its operations (:class:`CredentialKind`,
  :class:`SettingKind`) and the :class:`Provider` protocol itself, whose optional
  hooks have defaults in :class:`ProviderBase`.

The rest is in submodules a provider imports by name: :mod:`.operations` (the parts
of a declaration and of a bound call: ``Action``, ``EffectRule``, ``Piece``,
``BindingProblem``...), :mod:`.programs` (the ``ProgramProfile`` of a program it
runs), :mod:`.run` (what ``RunContext`` hands back), :mod:`.text` (output laid out as
the CLI's), :mod:`.log` (the diagnostic event stream), :mod:`.hosts` (a host
setting's check), :mod:`.tls` (the run's TLS context). ARCHITECTURE.md lists
``__all__``, and a test holds the two equal.
"""

from __future__ import annotations

from runtime.errors import MissingCapability, MissingCredential, PolicyRefusal, StepError
from runtime.provider.inspection import Decision, Inspection, Preview, PreviewFile
from runtime.provider.operations import BoundCall, Operation, Option, Positional
from runtime.provider.protocol import CredentialKind, Provider, ProviderBase, SettingKind
from runtime.provider.run import RunContext, StepEnvironment, StepOutcome

__all__ = [
    "BoundCall",
    "CredentialKind",
    "Decision",
    "Inspection",
    "MissingCapability",
    "MissingCredential",
    "Operation",
    "Option",
    "PolicyRefusal",
    "Positional",
    "Preview",
    "PreviewFile",
    "Provider",
    "ProviderBase",
    "RunContext",
    "SettingKind",
    "StepEnvironment",
    "StepError",
    "StepOutcome",
]
