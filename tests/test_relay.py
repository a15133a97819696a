"""What an upstream sends back during a call reaches the client that made it: progress, sampling,
elicitation, logs; and a client cancelling a call cancels it upstream.

Against `server-everything` (it has a tool for each) over real stdio, and an in-process server for
what it cannot show (logs on demand, cancellation, two clients at once).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.helpers.gateway_client import ERAS, text
from tests.helpers.paths import PYTHON, ROOT, node_path, npm_tool
from tests.servers.chatty import Chatty
from toolscout.config import GatewayConfig
from toolscout.gateway.core import Gateway
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = [
    pytest.mark.anyio,
    # Handshake-era logging (an upstream's log lines, a client's logging level): the SDK marks it
    # deprecated as of 2026-07-28 (SEP-2577), and toolscout still relays it for handshake-era peers.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def everything() -> AsyncGenerator[Gateway]:
    server = {"command": str(npm_tool("mcp-server-everything")), "args": ["stdio"], "env": {"PATH": node_path()}}
    async with Gateway.from_config(GatewayConfig.model_validate({"mcpServers": {"everything": server}})) as gateway:
        with anyio.fail_after(60):
            await gateway.settle()
        yield gateway


def run(tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"server": "everything", "tool": tool, "arguments": arguments or {}}


async def answer_with_a_model(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text="sampled!"), model="test-model")


@pytest.mark.parametrize("era", ERAS)
async def test_progress_sampling_and_elicitation_round_trips_with_server_everything(era: str) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="decline")

    reported: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total))

    async with (
        everything() as gateway,
        Client(
            build_server(gateway), mode=era, sampling_callback=answer_with_a_model, elicitation_callback=decline
        ) as client,
    ):
        done = await client.call_tool(
            "execute_tool",
            run("trigger-long-running-operation", {"duration": 0.3, "steps": 3}),
            progress_callback=on_progress,
        )
        assert not done.is_error
        assert reported == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]

        # At 2026-07-28 the questions come as InputRequiredResult rounds (rounds.py), which the SDK's
        # client answers through the same callbacks: the same outcome in both eras.
        sampled = await client.call_tool("execute_tool", run("trigger-sampling-request", {"prompt": "hi"}))
        elicited = await client.call_tool("execute_tool", run("trigger-elicitation-request"))
        assert not sampled.is_error and '"text": "sampled!"' in text(sampled)
        assert "declined" in text(elicited) and asked and asked[0].mode == "form"


async def test_a_client_without_sampling_makes_the_upstream_fail_clearly_not_hang() -> None:
    async with everything() as gateway, Client(build_server(gateway), mode="legacy") as client:
        with anyio.fail_after(30):
            result = await client.call_tool("execute_tool", run("trigger-sampling-request", {"prompt": "hi"}))
        assert result.is_error and "does not support it" in text(result)


@asynccontextmanager
async def chatty_gateway() -> AsyncGenerator[tuple[Gateway, Chatty]]:
    chatty = Chatty()
    # A handshake-era upstream: it sends its requests on its own, as most servers do today.
    async with Gateway([UpstreamSpec("chatty", InProcessUpstream(chatty.server), protocol="legacy")]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        yield gateway, chatty


def call(tool: str) -> dict[str, Any]:
    return {"server": "chatty", "tool": tool, "arguments": {}}


@pytest.mark.parametrize("era", ERAS)
async def test_upstream_logs_reach_the_calling_client_and_the_gateway_log(
    era: str, caplog: pytest.LogCaptureFixture
) -> None:
    logged: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params)

    caplog.set_level(logging.INFO, logger="toolscout")
    async with (
        chatty_gateway() as (gateway, _),
        # At 2026-07-28 a request opts in to logs with a level (the SDK client stamps it on each).
        Client(build_server(gateway), mode=era, logging_callback=on_log, log_level="info") as client,
    ):
        await client.call_tool("execute_tool", call("log"))
        assert [(m.level, m.logger, m.data) for m in logged] == [("warning", "chatty", "oven preheating")]
        assert "chatty [chatty]: oven preheating" in caplog.text
        if era == "legacy":
            await client.set_logging_level("error")  # pyright: ignore[reportDeprecated]
            await client.call_tool("execute_tool", call("log"))
            assert len(logged) == 1  # below the level this client asked for


@pytest.mark.parametrize("era", ERAS)  # at 2026-07-28 the call runs in rounds (rounds.py): cancelled all the same
async def test_cancelling_a_call_cancels_it_upstream(era: str) -> None:
    async with chatty_gateway() as (gateway, chatty), Client(build_server(gateway), mode=era) as client:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "execute_tool", call("hang"))
                await chatty.holding.wait()
                tg.cancel_scope.cancel()  # the SDK client sends notifications/cancelled
            await chatty.cancelled.wait()


async def test_a_request_that_could_belong_to_either_of_two_clients_is_refused() -> None:
    # Over stdio nothing on a handshake-era upstream's request says which call it is for (in
    # process the SDK runs it inside the call, so the gateway knows).
    stdio = {"command": PYTHON, "args": ["-m", "tests.servers.chatty"], "cwd": str(ROOT), "protocol": "legacy"}
    config = GatewayConfig.model_validate({"mcpServers": {"chatty": stdio}})
    async with (
        Gateway.from_config(config) as gateway,
        # Both call themselves the same: a client is its connection, not its name.
        Client(build_server(gateway), mode="legacy", sampling_callback=answer_with_a_model) as first,
        Client(build_server(gateway), mode="legacy", sampling_callback=answer_with_a_model) as second,
    ):
        with anyio.fail_after(30):
            await gateway.settle()
            async with anyio.create_task_group() as tg:
                tg.start_soon(first.call_tool, "execute_tool", call("hold"))
                asked = {**call("ask"), "arguments": {"after_hold": True}}
                refused = await second.call_tool("execute_tool", asked)
                assert refused.is_error and "calls from 2 clients are in flight" in text(refused)
                await second.call_tool("execute_tool", call("release"))
            # One client's calls only: no doubt whose model to ask.
            answered = await first.call_tool("execute_tool", call("ask"))
            assert text(answered) == "sampled!"
