"""``runtime mcp serve``: the official MCP SDK's low-level ``Server`` over stdio.

The SDK is the optional extra ``runtime-engine[mcp]``; only this module imports
it, and only ``runtime mcp serve`` imports this module. The low-level server
serves both protocol eras on one connection, whichever the client opens with:
2026-07-28 (no handshake: each request carries its envelope, ``server/discover``,
multi-round-trip requests) and the ``initialize`` handshake of older clients.

The tools and resources are data (:mod:`runtime.cli.mcp_tools`); each call is
walked through the pipeline in a worker thread (:mod:`runtime.cli.mcp_calls`),
one call at a time: a run sets the diagnostic stream's redactor for its whole
walk (:func:`runtime.log.use_redactor`), so two runs at once could log one's
secrets with the other's redactor. What the call needs of the protocol, the
worker asks of the event loop (``anyio.from_thread``):

* progress: a notification as each step starts and ends (when the client gave
  a progress token);
* confirmation (``agents.confirm``): an older client is sent an elicitation
  (``elicitation/create``) and the step waits for the user's answer; a
  2026-07-28 client, to which a server sends no requests, gets an
  ``input_required`` result asking the same, and calls again with the answer
  and the request state (sealed by the SDK's ``RequestStateBoundary``, bound to
  the tool and its arguments); the state holds a digest of the steps asked
  about, so an answer confirms those very steps, or is asked again;
* cancellation (``notifications/cancelled``): the SDK cancels the handler; the
  handler sets the call's :class:`~runtime.execute.cancel.Cancellation`, which
  stops the running step's processes at once, and waits for the worker, so the
  run is recorded (cancelled) before the server goes on. A signal to the server,
  or the client going away (stdin closed), cancels every call the same way.

While it serves, stdout is the protocol's alone: the SDK moves descriptor 1 to
stderr for the rest of the process, so whatever else writes there (a warning, a
program) lands on stderr. The SDK's loggers are silenced (they may quote what a
client sent, an input holding a secret among it); runtime's own notes go to
stderr, and its event stream is ``--log-level``'s.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types as types
from anyio import from_thread
from mcp.server.lowlevel.server import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from runtime import __version__
from runtime.cli.mcp_calls import Answer, Answered, Caller, NeedsInput, Question, Session, call_tool
from runtime.cli.mcp_tools import Offer, Tool, offer, resources
from runtime.errors import Cancelled, RuntimeFailure, Terminated
from runtime.execute.cancel import Cancellation
from runtime.text import json_dumps

for _name in ("mcp", "mcp_types"):
    _logger = logging.getLogger(_name)
    _logger.addHandler(logging.NullHandler())
    _logger.propagate = False

INSTRUCTIONS = (
    "runtime runs capabilities (Markdown files with one runtime block) and provider "
    "operations deterministically, under the user's policy: every tool call is validated, "
    "planned, decided by the policy, preflighted and recorded in the audit log, as the "
    "`runtime` command line does. A refused call is a tool result with isError, its "
    "structuredContent the error document (code, message, hint, problems at their "
    "positions). The resources are the references: runtime://specs/capability-spec.md "
    "for writing capabilities, one per provider for its operations."
)

# What a confirmation asks: one yes or no
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "confirm": {
            "type": "boolean",
            "title": "Run it",
            "description": "Yes: run the steps listed. No: refuse the run; nothing runs.",
        }
    },
    "required": ["confirm"],
}
CONFIRM_KEY = "confirm"


def serve(session: Session) -> int:
    """Serve until the client closes stdin (0) or a signal ends the server (128 + n)."""
    server = _RuntimeServer(session)
    anyio.run(server.main)
    return server.exit_code


class _RuntimeServer:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.lock = threading.Lock()  # one walk at a time (see the module's doc)
        self.running: set[Cancellation] = set()
        self.said: set[str] = set()
        self.exit_code = 0
        session.warn = self._warn

    # -- the lifecycle --------------------------------------------------------------

    async def main(self) -> None:
        server: Server[Any] = Server(
            "runtime",
            version=__version__,
            title="runtime",
            instructions=INSTRUCTIONS,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_read_resource=self.read_resource,
        )
        # seals the state of a multi-round-trip call under a key of this process's
        server.middleware.append(
            RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience="runtime")
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._signals, tg.cancel_scope)
            async with stdio_server(stdin=_stdin_lines()) as (read, write):
                await server.run(read, write, server.create_initialization_options())
            tg.cancel_scope.cancel()

    async def _signals(self, scope: anyio.CancelScope) -> None:
        """A terminating signal ends the server as it ends a run: each call's running
        step is stopped and recorded, then the server exits with 128 + n."""
        wanted = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
        with anyio.open_signal_receiver(*wanted) as received:
            async for signum in received:
                self.exit_code = 128 + signum
                for cancellation in list(self.running):
                    cancellation.cancel(by=Terminated(signum))
                scope.cancel()
                return

    def _note(self, text: str) -> None:
        """A note on stderr, once per server (a policy warning, a capability skipped)."""
        if text not in self.said:
            self.said.add(text)
            sys.stderr.write(f"runtime mcp serve: {text}\n")
            sys.stderr.flush()

    def _warn(self, problem: Any) -> None:
        self._note(f"{problem.file}:{problem.line}:{problem.column}: warning: {problem.message}")

    # -- listing ----------------------------------------------------------------------

    async def list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        found: Offer = await anyio.to_thread.run_sync(self._offer)
        return types.ListToolsResult(tools=[_sdk_tool(t) for t in found.tools])

    def _offer(self) -> Offer:
        with self.lock:
            try:
                found = offer(self.session.workspace())
            except RuntimeFailure as failure:  # a broken policy or config: nothing to offer
                raise _listing_error(failure, self.session) from None
        for note in found.skipped:
            self._note(note)
        return found

    async def list_resources(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=r.uri,
                    name=r.name,
                    title=r.title,
                    description=r.description,
                    mime_type="text/markdown",
                )
                for r in resources()
            ]
        )

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        found = next((r for r in resources() if r.uri == uri), None)
        if found is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"no resource {uri}",
                data={"resources": [r.uri for r in resources()]},
            )
        text = found.path.read_text(encoding="utf-8")
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        )

    # -- calling ----------------------------------------------------------------------

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        call = _Call(self, ctx, params)
        self.running.add(call.cancel)
        try:
            answer = await anyio.to_thread.run_sync(call.work, abandon_on_cancel=True)
        except NeedsInput as waiting:
            return _input_required(waiting.question)
        except anyio.get_cancelled_exc_class():
            # the client cancelled (or went away, or a signal came): stop the step, and
            # let the run record itself before the handler ends
            call.cancel.cancel()
            for scope in call.asking:
                scope.cancel()
            if call.abandon():
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(call.done.wait)
            raise
        finally:
            self.running.discard(call.cancel)
            call.cancel.close()  # the worker is done with it, or never began
        if answer is None:  # cancelled before it began (a signal): nothing ran
            from runtime.cli.documents import error_document

            stopped = Cancelled()
            answer = Answer(error_document(stopped), True, f"{stopped.message}; nothing ran")
        return _result(answer)


class _Call:
    """One tools/call: the worker's side (:meth:`work`) and what it asks of the loop."""

    def __init__(
        self, server: _RuntimeServer, ctx: Any, params: types.CallToolRequestParams
    ) -> None:
        self.server = server
        self.ctx = ctx
        self.params = params
        self.modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        self.cancel = Cancellation()
        self.done = threading.Event()
        # queued, running or abandoned: a call cancelled before its worker began never
        # begins (see abandon)
        self.state = "queued"
        self.state_lock = threading.Lock()
        self.asking: list[anyio.CancelScope] = []
        info = ctx.session.client_params.client_info if ctx.session.client_params else None
        self.client = {"name": info.name, "version": info.version} if info else None

    def work(self) -> Answer | None:
        with self.state_lock:
            if self.state == "abandoned":
                return None
            self.state = "running"
        try:
            with self.server.lock:
                if self.cancel.cancelled:  # while an earlier call held the lock: nothing ran
                    return None
                caller = Caller(self.client, self.ask, self.progress, self.cancel)
                return call_tool(
                    self.server.session, self.params.name, self.params.arguments or {}, caller
                )
        finally:
            self.done.set()

    def abandon(self) -> bool:
        """For a cancelled call: whether its worker began (then it is waited for: its
        run records itself); one that had not will not."""
        with self.state_lock:
            if self.state == "queued":
                self.state = "abandoned"
                return False
            return True

    def progress(self, done: float, total: float, message: str) -> None:
        self._loop(self.ctx.session.report_progress, done, total, message)

    def ask(self, question: Question) -> Answered | str:
        capabilities = self.ctx.session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            return "the client declares no elicitation capability, so it cannot ask the user"
        if self.modern:
            answered = (self.params.input_responses or {}).get(CONFIRM_KEY)
            if self.params.request_state == question.digest and isinstance(
                answered, types.ElicitResult
            ):
                return _action(answered)
            raise NeedsInput(question)
        found: Answered | str = self._loop(self._elicit, question)
        return found

    async def _elicit(self, question: Question) -> Answered | str:
        with anyio.CancelScope() as scope:
            self.asking.append(scope)
            if self.cancel.cancelled:
                scope.cancel()
            try:
                result = await self.ctx.session.elicit_form(
                    question.message, CONFIRM_SCHEMA, related_request_id=self.ctx.request_id
                )
            except MCPError as exc:
                return f"the client answered the elicitation with an error ({exc.error.code})"
            except Exception as exc:  # no back channel, a malformed answer
                return f"the client could not be asked ({type(exc).__name__})"
            return _action(result)
        return "the call was cancelled while the user was asked"

    def _loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        return from_thread.run(fn, *args)


class _Lines:
    """The client's messages, a line each, read from ``fd`` in the event loop itself.

    The SDK reads stdin in a worker thread, which nothing can cancel: a server told to
    stop by a signal would wait for the client's next line or its end. Waiting in the
    loop (``wait_readable``), the read ends with the rest when the server stops."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        os.set_blocking(fd, False)

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while b"\n" not in self.buffer:
            await anyio.wait_readable(self.fd)
            try:
                chunk = os.read(self.fd, 64 * 1024)
            except BlockingIOError:
                continue
            if not chunk:
                if not self.buffer:
                    raise StopAsyncIteration
                chunk, self.buffer = self.buffer, b""
                return chunk.decode("utf-8", "replace")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return (line + b"\n").decode("utf-8", "replace")


def _stdin_lines() -> Any:
    """stdin's lines for the SDK (which takes anything it can iterate over), from a
    descriptor of its own; descriptor 0 then reads as empty, as the SDK makes it. A
    regular file (``< requests.jsonl``), which no event loop can wait on, is left to the
    SDK (None)."""
    import fcntl
    import stat

    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    empty = os.open(os.devnull, os.O_RDONLY)
    os.dup2(empty, 0)
    os.close(empty)
    return _Lines(private)


def _action(result: types.ElicitResult) -> Answered:
    """accept (with confirm: true), decline (or confirm: false), or cancel (dismissed)."""
    if result.action == "accept":
        return "accept" if (result.content or {}).get(CONFIRM_KEY) is True else "decline"
    return "decline" if result.action == "decline" else "cancel"


def _input_required(question: Question) -> types.InputRequiredResult:
    return types.InputRequiredResult(
        input_requests={
            CONFIRM_KEY: types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=question.message, requested_schema=CONFIRM_SCHEMA
                )
            )
        },
        request_state=question.digest,
    )


def _result(answer: Answer) -> types.CallToolResult:
    """The document as --output json prints it (parsed back: a name's byte that is not
    UTF-8 is the text of its escape there), and as text beside a summary."""
    import json

    text = json_dumps(answer.document)
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text=answer.summary),
            types.TextContent(type="text", text=text),
        ],
        structured_content=json.loads(text),
        is_error=answer.is_error,
    )


def _sdk_tool(tool: Tool) -> types.Tool:
    hints = tool.annotations
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=types.ToolAnnotations(
            title=tool.title,
            read_only_hint=hints["readOnlyHint"],
            destructive_hint=hints["destructiveHint"],
            idempotent_hint=hints["idempotentHint"],
            open_world_hint=hints["openWorldHint"],
        ),
    )


def _listing_error(failure: RuntimeFailure, session: Session) -> MCPError:
    from runtime.cli.documents import error_document
    from runtime.redact import Redactor

    redact = Redactor()
    redact.add_environment(session.environ)
    return MCPError(
        code=types.INTERNAL_ERROR,
        message=redact.text(failure.message),
        data=redact.data(error_document(failure)),
    )
