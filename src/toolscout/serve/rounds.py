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
`requestState`, and a retry that reaches another replica is forwarded back here (forwarding.py).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar, cast

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from toolscout.upstream.relay import Relay, SamplingResult, relaying

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
        """`replica`: this replica's id, which starts every `requestState` (forwarding.py), when replicas
        share one registry."""
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
        """`start()`'s result, or the questions its upstream asks meanwhile (the client retries with answers)."""
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
