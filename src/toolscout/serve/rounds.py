"""Sampling and elicitation for 2026-07-28 clients: the call waits upstream while the client answers in rounds.

At 2026-07-28 a server may not send its client a request. It answers the client's request with an
`InputRequiredResult` (its questions, and a `requestState`), and the client asks again with its
answers (`inputResponses`, the same `requestState`). An upstream, though, asks in the middle of a
call: with a request of its own in the handshake eras, or with an `InputRequiredResult` at
2026-07-28, which the SDK's client turns into the same callback. Its call cannot be restarted
without doing its work twice, so the gateway keeps it running:

1. A 2026-07-28 client's `tools/call`, `resources/read` or `prompts/get` runs in the gateway's
   own task group, with a `RoundRelay` as its relay. A client that declared neither sampling nor
   elicitation can never be asked anything, so its call never takes a second round: it runs in
   the request's own task (no task of its own to start and wait on), its upstream's questions
   refused by the request's own relay.
2. When the upstream asks (sample, elicit), the question waits in that `PendingCall`, and the
   client's request is answered with it and a `requestState` naming the call, unguessable and
   good only for the client that made the call.
3. The retry carrying the answers hands them to the waiting upstream, and waits again: for the
   result, or for the next question.

Progress and logs reach the client while one of its requests for the call is open. A client that
cancels a request cancels the call upstream; one that never comes back has its call's questions
answered with an error after `ANSWER_WAIT` seconds, and the call's result is dropped as long after
it ends. The state lives in this process; replicas sharing a registry put their id in front of the
`requestState`, and a retry that reaches another replica is forwarded back here (`Forwarder`, below).

Across replicas, a retry that lands on another replica is passed to the one that holds the call.
A call in rounds runs on the replica that started it: its upstream is waiting there for
the client's answers. Its `requestState` starts with that replica's id (`<id>.<secret>`), and each
replica publishes where it answers (`ReplicaDirectory`: the Redis registry, refreshed while it
runs). A balancer without stickiness may send the client's retry anywhere: a replica that gets a
retry for another one's call forwards the request as it came (same body, same credential: the owner
authenticates it again) and streams the owner's answer back. The owner unknown or gone: the request
is served here, which answers that the `requestState` is unknown, and the client starts over.

Only POSTs to /mcp whose JSON-RPC `params.requestState` names another replica are read and
forwarded (bodies up to `MAX_FORWARD_BYTES`); everything else passes through untouched.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, runtime_checkable

import anyio
import httpx2
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolscout.upstream.calls import Relay, SamplingResult, relaying

if TYPE_CHECKING:
    from toolscout.gateway.core import Gateway

logger = logging.getLogger(__name__)

ANSWER_WAIT = 300.0
"""Seconds a question waits for the client's answer, and a finished call for its client to come back."""

R = TypeVar("R")
AnswerT = TypeVar("AnswerT", bound=BaseModel)


class _Question:
    def __init__(self, request: types.InputRequest) -> None:
        self.request = request
        self.asked = False
        self.answered = anyio.Event()
        self.answer: types.InputResponse | None = None


class PendingCall:
    """One call in flight for a 2026-07-28 client, between its rounds."""

    def __init__(self, token: str, owner: object) -> None:
        self.token = token
        self.owner = owner
        self.current: Relay | None = None
        """The relay of the client's request open for this call, if one is."""
        self._questions: dict[str, _Question] = {}
        self._reasked = False
        self._wake = anyio.Event()
        """Set when a question comes or the call ends: what a request waiting for the next round waits for."""
        self.done = anyio.Event()
        self.finished_at: float | None = None
        self.result: object = None
        self.error: BaseException | None = None
        self.scope = anyio.CancelScope()

    async def run(self, start: Callable[[], Awaitable[object]], relay: Relay) -> None:
        with self.scope:
            try:
                with relaying(relay):
                    self.result = await start()
            except Exception as exc:  # handed to the client's request, which raises it there
                self.error = exc
        if self.scope.cancelled_caught and self.error is None:
            self.error = MCPError(code=types.INTERNAL_ERROR, message="The call was cancelled before it finished.")
        self.finished_at = anyio.current_time()
        self.done.set()
        self._wake.set()

    async def ask(self, request: types.InputRequest) -> types.InputResponse | None:
        """Put `request` to the client; its answer, or None when none came within `ANSWER_WAIT`."""
        key = secrets.token_hex(4)
        question = self._questions[key] = _Question(request)
        self._wake.set()
        try:
            with anyio.move_on_after(ANSWER_WAIT):
                await question.answered.wait()
            return question.answer
        finally:
            del self._questions[key]

    def answer(self, responses: types.InputResponses) -> None:
        for key, response in responses.items():
            question = self._questions.get(key)
            if question is not None and not question.answered.is_set():
                question.answer = response
                question.answered.set()

    async def next_round(self) -> types.InputRequiredResult | None:
        """Wait for the result (None) or for questions not put to the client yet (them, to put)."""
        while True:
            # Questions from an earlier round that are still open are put again.
            waiting = {k: q for k, q in self._questions.items() if not q.answered.is_set()}
            if waiting and (not all(q.asked for q in waiting.values()) or self._reasked):
                for question in waiting.values():
                    question.asked = True
                self._reasked = False
                requests = {k: q.request for k, q in waiting.items()}
                return types.InputRequiredResult(input_requests=requests, request_state=self.token)
            if self.done.is_set():
                return None
            if self._wake.is_set():  # told already (and acted on, above): nobody waits on a set event
                self._wake = anyio.Event()
            await self._wake.wait()

    def retried(self) -> None:
        """The client came back: whatever it left unanswered is put to it again."""
        self._reasked = True


def can_be_asked(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether an upstream's question can ever be put to a client with `capabilities` (sampling or elicitation)."""
    return capabilities is not None and (capabilities.sampling is not None or capabilities.elicitation is not None)


class RoundRelay:
    """The relay of a call run in rounds: questions wait for the client's next request."""

    def __init__(self, pending: PendingCall, base: Relay, capabilities: types.ClientCapabilities | None) -> None:
        self._pending = pending
        self._base = base
        self._capabilities = capabilities

    @property
    def client(self) -> str | None:
        return self._base.client

    @property
    def origin(self) -> object:
        return self._base.origin

    @property
    def caller(self) -> str:
        return self._base.caller

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        current = self._pending.current
        if current is not None:
            await current.progress(progress, total, message)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        current = self._pending.current
        if current is not None:
            await current.log(params)

    async def sample(self, params: types.CreateMessageRequestParams) -> SamplingResult:
        capabilities = self._capabilities
        if capabilities is None or capabilities.sampling is None:
            return await self._base.sample(params)  # which refuses it, as for any client without it
        answer_type = types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
        return await self._ask(types.CreateMessageRequest(params=params), answer_type, "Sampling")

    async def elicit(self, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        capabilities = self._capabilities
        if capabilities is None or capabilities.elicitation is None:
            return await self._base.elicit(params)  # which refuses it
        return await self._ask(types.ElicitRequest(params=params), types.ElicitResult, "Elicitation")

    async def _ask(
        self, request: types.InputRequest, answer_type: type[AnswerT], what: str
    ) -> AnswerT | types.ErrorData:
        answer = await self._pending.ask(request)
        if answer is None:
            message = f"{what} through toolscout failed: the client did not answer within {ANSWER_WAIT:g}s."
            return types.ErrorData(code=types.INTERNAL_ERROR, message=message)
        if isinstance(answer, answer_type):
            return answer
        try:  # the wire's union may have been read as another of its arms
            return answer_type.model_validate(answer.model_dump(by_alias=True, exclude_none=True))
        except ValidationError as exc:
            message = f"{what} through toolscout failed: the client's answer is not a {answer_type.__name__}: {exc}"
            return types.ErrorData(code=types.INVALID_PARAMS, message=message)


class Rounds:
    """The calls of 2026-07-28 clients waiting for their answers, by `requestState`."""

    def __init__(self, gateway: Gateway, *, replica: str | None = None) -> None:
        """Keep the calls in rounds of one gateway. `replica` is this replica's id when replicas share
        one registry; it starts every `requestState` (see `Forwarder`)."""
        self._gateway = gateway
        self._pending: dict[str, PendingCall] = {}
        self._prefix = f"{replica}." if replica else ""

    async def run(
        self,
        owner: object,
        relay: Relay,
        capabilities: types.ClientCapabilities | None,
        params: types.InputResponseRequestParams,
        start: Callable[[], Awaitable[R]],
    ) -> R | types.InputRequiredResult:
        """Return `start()`'s result, or the questions its upstream asks meanwhile (the client retries with answers)."""
        if self._pending:
            self._forget_abandoned()
        if params.request_state is None and not can_be_asked(capabilities):
            # No question can reach this client, so there is no second round: run the call right here.
            with relaying(relay):  # which refuses any question, as the client cannot take one
                return await start()
        if params.request_state is not None:
            pending = self._pending.get(params.request_state)
            if pending is None or pending.owner is not owner:
                raise MCPError(
                    code=types.INVALID_PARAMS,
                    message="Unknown or expired requestState: send the request again without it to start over.",
                )
            pending.answer(params.input_responses or {})
            pending.retried()
        else:
            pending = PendingCall(self._prefix + secrets.token_urlsafe(24), owner)
            self._pending[pending.token] = pending
            round_relay = RoundRelay(pending, relay, capabilities)
            self._gateway.start_soon(pending.run, start, round_relay, name=f"call in rounds {pending.token[:6]}")
        pending.current = relay
        try:
            questions = await pending.next_round()
        except BaseException:
            pending.scope.cancel()  # the client gave up on the call
            self._pending.pop(pending.token, None)
            raise
        finally:
            pending.current = None
        if questions is not None:
            return questions
        self._pending.pop(pending.token, None)
        if pending.error is not None:
            raise pending.error
        return cast(R, pending.result)  # what `start` returned

    def _forget_abandoned(self) -> None:
        # A result nobody came back for is dropped in the end (checked when calls come, so no task lingers).
        now = anyio.current_time()
        for token, pending in list(self._pending.items()):
            if pending.finished_at is not None and now - pending.finished_at > ANSWER_WAIT:
                del self._pending[token]


# Retries that reach another replica

MAX_FORWARD_BYTES = 4_000_000
"""The largest retry read to find its `requestState` (a bigger body is served here)."""
FORWARDED = "x-toolscout-forwarded"
"""Marks a forwarded request: it is never forwarded again."""
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "content-length", "host"})


@runtime_checkable
class ReplicaDirectory(Protocol):
    """Where each replica of a gateway answers (the Redis registry)."""

    async def replica_url(self, replica: str) -> str | None:
        """The base URL replica `replica` serves at, None when unknown (or gone)."""
        ...

    async def announce_replica(self, replica: str, url: str, ttl: float) -> None:
        """Say that `replica` answers at `url` for the next `ttl` seconds."""
        ...


ANNOUNCE_SECONDS = 10.0
"""How often a replica says where it answers; what it said lasts three times as long."""


@asynccontextmanager
async def announcing(directory: ReplicaDirectory, replica: str, url: str) -> AsyncGenerator[None]:
    """Keep saying, while the block runs, that `replica` answers at `url` (Redis away: tried again)."""

    async def announce() -> None:
        while True:
            try:
                await directory.announce_replica(replica, url, 3 * ANNOUNCE_SECONDS)
            except Exception as exc:  # RegistryUnavailable: the next announcement may get through
                logger.warning("replica %s could not say where it answers: %s", replica, exc)
            await anyio.sleep(ANNOUNCE_SECONDS)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce, name="replica announcement")
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


def owner_of(state: str, own: str) -> str | None:
    """The replica a `requestState` belongs to, when it is not this one (`own`)."""
    replica, dot, _ = state.partition(".")
    return replica if dot and replica and replica != own else None


class Forwarder:
    """ASGI middleware forwarding another replica's input-required retries to it."""

    def __init__(self, app: ASGIApp, replica: str, directory: ReplicaDirectory, path: str = "/mcp") -> None:
        self.app = app
        self.replica = replica
        self.directory = directory
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if FORWARDED in headers:
            await self.app(scope, receive, send)
            return
        body, more = await _read(receive)
        owner = None if more else self._owner(body)
        target = await self.directory.replica_url(owner) if owner is not None else None
        if target is None:
            await self.app(scope, _replay(body, receive, more), send)
            return
        logger.info("input-required retry forwarded to replica %s", owner)
        await _forward(target.rstrip("/") + self.path, headers, body, send)

    def _owner(self, body: bytes) -> str | None:
        try:
            message = json.loads(body)
        except ValueError:
            return None
        if not isinstance(message, dict):
            return None
        params = cast(dict[str, Any], message).get("params")
        state = cast(dict[str, Any], params).get("requestState") if isinstance(params, dict) else None
        return owner_of(state, self.replica) if isinstance(state, str) else None


async def _read(receive: Receive) -> tuple[bytes, bool]:
    """The request body up to `MAX_FORWARD_BYTES`; whether more is left unread."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = cast(bytes, message.get("body", b""))
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body"):
            return b"".join(chunks), False
        if size > MAX_FORWARD_BYTES:
            return b"".join(chunks), True


def _replay(body: bytes, receive: Receive, more: bool) -> Receive:
    """A `receive` giving the inner app the body read so far, then the rest as it comes."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()

    return replay


async def _forward(url: str, headers: dict[str, str], body: bytes, send: Send) -> None:
    """POST `body` to the owner and stream its answer back as it comes (SSE included)."""
    outgoing = {k: v for k, v in headers.items() if k not in _HOP_BY_HOP}
    outgoing[FORWARDED] = "1"
    started = False
    try:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=None)) as http,
            http.stream("POST", url, content=body, headers=outgoing) as answer,
        ):
            kept = [
                (k.encode("latin-1"), v.encode("latin-1"))
                for k, v in answer.headers.items()
                if k.lower() not in _HOP_BY_HOP
            ]
            await send({"type": "http.response.start", "status": answer.status_code, "headers": kept})
            started = True
            async for chunk in answer.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except httpx2.TransportError as exc:  # the owner went away: the client starts over
        if not started:
            error = {"code": -32603, "message": f"the replica holding this call is gone ({exc}): send it again"}
            content = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
            headers_out = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 502, "headers": headers_out})
            await send({"type": "http.response.body", "body": content})
            return
    await send({"type": "http.response.body", "body": b"", "more_body": False})
