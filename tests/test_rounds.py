"""Sampling and elicitation for 2026-07-28 clients, in rounds (rounds.py), against upstreams of both eras.

The `interviewer` asks its client's model, then its user, in the middle of one call: with requests
of its own in the handshake eras, with `InputRequiredResult` rounds at 2026-07-28. A client of
either era gets the same answer through the gateway; a 2026-07-28 client answers in rounds.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.helpers.gateway_client import ERAS, text
from tests.helpers.http_gateway import http_gateway
from toolscout.gateway.core import Gateway
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

NAME_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
SAMPLE = types.CreateMessageRequest(
    params=types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(text="Say hi"))], max_tokens=5
    )
)
ELICIT = types.ElicitRequest(params=types.ElicitRequestFormParams(message="Your name?", requested_schema=NAME_SCHEMA))


def _said(model: types.CreateMessageResult, user: types.ElicitResult) -> types.CallToolResult:
    assert isinstance(model.content, types.TextContent)
    return types.CallToolResult(content=[types.TextContent(text=f"model: {model.content.text}; user: {user.content}")])


class Interviewer:
    """An upstream whose `interview` tool asks the model, then the user, in the era of the call."""

    def __init__(self) -> None:
        self.rounds = 0
        tool = types.Tool(name="interview", description="Asks twice.", input_schema={"type": "object"})
        self.server: Server[Any] = Server(
            "interviewer",
            on_list_tools=lambda ctx, params: self._list(tool),
            on_call_tool=self._call,
        )

    async def _list(self, tool: types.Tool) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def _call(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        self.rounds += 1
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            related = ServerMessageMetadata(related_request_id=ctx.request_id)
            try:
                model = await ctx.session.send_request(SAMPLE, types.CreateMessageResult, metadata=related)
                user = await ctx.session.send_request(ELICIT, types.ElicitResult, metadata=related)
            except MCPError as exc:
                return types.CallToolResult(content=[types.TextContent(text=exc.error.message)], is_error=True)
            return _said(model, user)
        answers = params.input_responses or {}
        if params.request_state is None:
            return types.InputRequiredResult(input_requests={"model": SAMPLE}, request_state="model")
        if params.request_state == "model":
            model = answers["model"]
            assert isinstance(model, types.CreateMessageResult) and isinstance(model.content, types.TextContent)
            return types.InputRequiredResult(input_requests={"user": ELICIT}, request_state=model.content.text)
        said = types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=params.request_state), model="m"
        )
        user = answers["user"]
        assert isinstance(user, types.ElicitResult)
        return _said(said, user)


class Answers:
    """A client's model and user: they answer, and count the questions."""

    def __init__(self) -> None:
        self.sampled = 0
        self.elicited = 0

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.sampled += 1
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="hi!"), model="m")

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicited += 1
        assert isinstance(params, types.ElicitRequestFormParams) and params.message == "Your name?"
        return types.ElicitResult(action="accept", content={"name": "Ada"})


@asynccontextmanager
async def interviewer(protocol: str) -> AsyncGenerator[tuple[Gateway, Interviewer]]:
    upstream = Interviewer()
    async with Gateway([UpstreamSpec("interviewer", InProcessUpstream(upstream.server), protocol=protocol)]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        yield gateway, upstream


INTERVIEW: dict[str, Any] = {"server": "interviewer", "tool": "interview", "arguments": {}}
EXPECTED = "model: hi!; user: {'name': 'Ada'}"


@pytest.mark.parametrize("upstream_era", ["legacy", "auto"])
@pytest.mark.parametrize("era", ERAS)
async def test_an_upstreams_questions_reach_the_client_of_either_era(era: str, upstream_era: str) -> None:
    answers = Answers()
    async with (
        interviewer(upstream_era) as (gateway, _),
        Client(
            build_server(gateway), mode=era, sampling_callback=answers.sample, elicitation_callback=answers.elicit
        ) as client,
    ):
        with anyio.fail_after(10):
            result = await client.call_tool("execute_tool", INTERVIEW)
        assert not result.is_error, text(result)
        assert text(result) == EXPECTED
        assert (answers.sampled, answers.elicited) == (1, 1)  # each question asked once, whatever the rounds


@pytest.mark.parametrize("upstream_era", ["legacy", "auto"])
async def test_a_2026_client_answers_round_by_round_and_its_requeststate_is_its_own(upstream_era: str) -> None:
    answers = Answers()
    async with (
        interviewer(upstream_era) as (gateway, _),
        Client(build_server(gateway), mode="auto", sampling_callback=answers.sample) as client,
        Client(build_server(gateway), mode="auto", sampling_callback=answers.sample) as stranger,
    ):
        assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
        with anyio.fail_after(10):
            first = await client.session.call_tool("execute_tool", INTERVIEW, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult) and first.request_state
            assert [r.method for r in (first.input_requests or {}).values()] == ["sampling/createMessage"]
            (key,) = first.input_requests or {}

            with pytest.raises(MCPError, match="Unknown or expired requestState") as forged:
                await client.session.call_tool("execute_tool", INTERVIEW, request_state="forged", input_responses={})
            assert forged.value.error.code == types.INVALID_PARAMS
            with pytest.raises(MCPError, match="Unknown or expired requestState"):
                await stranger.session.call_tool(
                    "execute_tool", INTERVIEW, request_state=first.request_state, input_responses={}
                )

            # Coming back without the answer: the question is put again.
            again = await client.session.call_tool(
                "execute_tool", INTERVIEW, request_state=first.request_state, allow_input_required=True
            )
            assert isinstance(again, types.InputRequiredResult) and set(again.input_requests or {}) == {key}

            model = await answers.sample(None, SAMPLE.params)
            second = await client.session.call_tool(
                "execute_tool",
                INTERVIEW,
                request_state=first.request_state,
                input_responses={key: model},
                allow_input_required=True,
            )
            # This client declared no elicitation: the upstream is told, and its call fails clearly.
            assert isinstance(second, types.CallToolResult), second
            assert second.is_error and "does not support it" in text(second)


async def test_rounds_over_http() -> None:
    answers = Answers()
    async with (
        interviewer("legacy") as (gateway, _),
        http_gateway(gateway, mode="passthrough") as url,
        Client(url, mode="auto", sampling_callback=answers.sample, elicitation_callback=answers.elicit) as client,
    ):
        with anyio.fail_after(10):
            result = await client.call_tool("interviewer__interview", {})
        assert text(result) == EXPECTED


@pytest.mark.parametrize("upstream_era", ["legacy", "auto"])
async def test_a_client_that_never_answers_holds_up_nothing(upstream_era: str) -> None:
    with anyio.fail_after(10):  # the gateway closes at once, though the call waits for an answer
        async with (
            interviewer(upstream_era) as (gateway, _),
            Client(build_server(gateway), mode="auto", sampling_callback=Answers().sample) as client,
        ):
            asked = await client.session.call_tool("execute_tool", INTERVIEW, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult)
            # Another call meanwhile is not held up by the one waiting.
            listed = await client.call_tool("list_mcp_servers", {})
            assert not listed.is_error
