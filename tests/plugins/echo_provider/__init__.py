"""A third provider, for the tests only: one package and one entry point.

It proves that adding a provider needs nothing from the engine: it imports
only the interface's names (:mod:`runtime.provider`), declares its operations as
data (typed options included), and is found
through the ``runtime.providers`` entry point of ``runtime_echo_provider``
(the ``.dist-info`` folder beside this package; the tests put this folder on
``PYTHONPATH``).
"""

from __future__ import annotations

from runtime.provider import (
    BoundCall,
    CredentialKind,
    Operation,
    Option,
    Positional,
    ProviderBase,
    SettingKind,
    StepEnvironment,
    StepOutcome,
)

OPERATIONS = (
    Operation(
        words=("say",),
        summary="Print TEXT (and the context's greeting, if one is set)",
        transport="local",
        effect="read",
        positionals=(Positional("TEXT", help="what to print"),),
        # typed and bounded as a declaration: validation and plan refuse times=x or
        # times=0 (exit 2, at its position) before execute ever sees it
        options=(Option("times", "how many times", type="int", range=(1, 100)),),
        example="runtime echo say hello",
    ),
    Operation(
        words=("secret",),
        summary="Print the echo credential (to prove it is redacted)",
        transport="local",
        effect="read",
        credential="echo",
        example="runtime echo secret",
    ),
)


class EchoProvider(ProviderBase):
    name = "echo"
    summary = "Echoes its arguments (a test provider)"
    operations = OPERATIONS
    credentials = (
        CredentialKind(
            name="echo",
            variable="ECHO_TOKEN",
            keyring_service="runtime:echo:{host}",
            default_host="echo.invalid",
        ),
    )
    settings = (SettingKind("greeting", "a word said before TEXT"),)
    scaffold = """inputs:
  text:
    description: What to say
    required: true

workflow:
  - provider: echo
    args: [say, "${text}"]
"""

    def execute(self, operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
        if operation.name == "secret":
            token = env.run.credential("echo", env.run.default_host("echo"))
            return StepOutcome(ok=True, output=f"the token is {token}", data={"token": token})
        greeting = env.run.setting("greeting")
        text = call.positionals["TEXT"]
        times = int(call.option("times", "1") or "1")
        words = [greeting.value] if greeting else []
        line = " ".join([*words, text])
        return StepOutcome(ok=True, output="\n".join([line] * times), data={"said": line})


PROVIDER = EchoProvider()
