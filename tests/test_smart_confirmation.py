"""Smart mode's confirmation of destructive tools cannot be skipped.

`confirm: true` refers to a plan the gateway proposed: the `confirmation_required` answer carries an
id bound to the tool, the arguments, the caller and an expiry, good once. A real SDK client (both
protocol eras) calls `smart_tool_discovery` on the gateway's face over the demo servers and `vault`
(tests/helpers/smart_gateway.py), whose `purge_notes` is destructive and records every call it
gets: "not run" means the upstream saw nothing. Across replicas, two stateless HTTP faces share a
real redis-server, as `serve` processes behind a balancer do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import redis_server
from mcp import Client

from tests.helpers.gateway_client import ERAS, structured, text
from tests.helpers.scoped_gateway import client_with, scoped_http
from tests.helpers.smart_gateway import SMART, smart_client, smart_gateway
from toolscout.config import ToolRule
from toolscout.config.scopes import Scope
from toolscout.registry.redis import RedisRegistry
from toolscout.smart.confirmation import Confirmations

pytestmark = pytest.mark.anyio

PURGE = "purge the notes in folder 'archive'"
ARCHIVE = {"folder": "archive"}
PEOPLE = {"alice-token": Scope.of(label="alice"), "bob-token": Scope.of(label="bob")}


async def ask(client: Client, **arguments: Any) -> types.CallToolResult:
    """One `smart_tool_discovery` call, bounded."""
    with anyio.fail_after(30):
        return await client.call_tool(SMART, arguments)


async def plan(client: Client, arguments: dict[str, Any] = ARCHIVE) -> dict[str, Any]:
    """The planned call the gateway proposes for purging with `arguments` (nothing runs)."""
    held = structured(await ask(client, request=PURGE, tool="vault/purge_notes", arguments=arguments))
    assert held["status"] == "confirmation_required", held
    return held["planned_call"]


def held_because(result: types.CallToolResult, why: str) -> dict[str, Any]:
    """`result` is `confirmation_required`, says `why`, and proposes a fresh id: its planned call."""
    data = structured(result)
    assert data["status"] == "confirmation_required", data
    assert why in data["confirmation_problem"] and why in text(result)
    assert data["planned_call"]["confirmation_id"].startswith("cf1_")
    return data["planned_call"]


@pytest.mark.parametrize("era", ERAS)
async def test_confirm_true_on_a_first_call_does_not_run_a_destructive_tool(era: str) -> None:
    purged: list[dict[str, Any]] = []
    async with smart_gateway(purged=purged) as gateway, smart_client(gateway, era) as client:
        skipped = await ask(client, request=PURGE, tool="vault/purge_notes", arguments=ARCHIVE, confirm=True)
        assert purged == []  # the upstream saw no call
        fresh = held_because(skipped, "without the confirmation_id")
        # The answer's own plan is the way forward, once the user agrees.
        assert not (await ask(client, request=PURGE, **fresh)).is_error
    assert purged == [ARCHIVE]


@pytest.mark.parametrize("era", ERAS)
async def test_a_proposed_confirmation_runs_its_call_once(era: str) -> None:
    purged: list[dict[str, Any]] = []
    async with smart_gateway(purged=purged) as gateway, smart_client(gateway, era) as client:
        planned = await plan(client)
        ran = await ask(client, request=PURGE, **planned)
        assert not ran.is_error, text(ran)
        assert structured(ran)["execution_result"]["content"][0]["text"] == "purged"
        again = await ask(client, request=PURGE, **planned)
        assert purged == [ARCHIVE]
        held_because(again, "was used already")
        # An id without confirm: true runs nothing either.
        unconfirmed = await ask(client, request=PURGE, **{**(await plan(client)), "confirm": False})
        held_because(unconfirmed, "only with confirm: true")
    assert purged == [ARCHIVE]


@pytest.mark.parametrize("era", ERAS)
async def test_a_confirmation_runs_only_the_exact_call_it_was_proposed_for(era: str) -> None:
    purged: list[dict[str, Any]] = []
    rules = [ToolRule(pattern=["list_notes"], tags=["dangerous"])]  # a second tool that needs confirming
    async with smart_gateway(purged=purged, rules=rules) as gateway, smart_client(gateway, era) as client:
        planned = await plan(client)
        everything = {**planned, "arguments": {"folder": "/"}}
        held_because(await ask(client, request=PURGE, **everything), "with other arguments")
        extra = {**planned, "arguments": {**ARCHIVE, "recursive": True}}
        held_because(await ask(client, request=PURGE, **extra), "with other arguments")
        listed = {**planned, "tool": "vault/list_notes"}
        held_because(await ask(client, request=PURGE, **listed), "for another tool")
        body = planned["confirmation_id"][4:]
        altered = {**planned, "confirmation_id": "cf1_" + ("A" if body[0] != "A" else "B") + body[1:]}
        held_because(await ask(client, request=PURGE, **altered), "not signed by this gateway")
        made_up = {**planned, "confirmation_id": "cf1_yes-the-user-really-confirmed"}
        held_because(await ask(client, request=PURGE, **made_up), "is not a confirmation id this gateway proposed")
        assert purged == []
        # None of those spent it: the exact call still runs (the same call by its bare name too).
        ran = await ask(client, request=PURGE, **{**planned, "tool": "purge_notes"})
        assert not ran.is_error, text(ran)
    assert purged == [ARCHIVE]


@pytest.mark.parametrize("era", ERAS)
async def test_a_confirmation_expires(era: str) -> None:
    purged: list[dict[str, Any]] = []
    now = [1_800_000_000.0]
    confirmations = Confirmations(ttl=300, clock=lambda: now[0])
    async with (
        smart_gateway(purged=purged) as gateway,
        smart_client(gateway, era, confirmations=confirmations) as client,
    ):
        planned = await plan(client)
        assert structured(await ask(client, request=PURGE, tool="vault/purge_notes", arguments=ARCHIVE))[
            "confirmation_expires_in"
        ] == pytest.approx(300)
        now[0] += 301
        fresh = held_because(await ask(client, request=PURGE, **planned), "expired")
        assert purged == []
        now[0] += 299  # the fresh one is good for its own 300 s
        assert not (await ask(client, request=PURGE, **fresh)).is_error
    assert purged == [ARCHIVE]


@pytest.mark.parametrize("era", ERAS)
async def test_another_callers_confirmation_is_refused(era: str) -> None:
    purged: list[dict[str, Any]] = []
    async with (
        smart_gateway(purged=purged) as gateway,
        scoped_http(gateway, "smart", PEOPLE) as url,
        client_with(url, "alice-token", era) as alice,
        client_with(url, "bob-token", era) as bob,
    ):
        alices = await plan(alice)
        held_because(await ask(bob, request=PURGE, **alices), "to another caller")
        assert purged == []
        assert not (await ask(alice, request=PURGE, **alices)).is_error
    assert purged == [ARCHIVE]


@pytest.mark.parametrize("era", ERAS)
async def test_replicas_sharing_redis_honour_each_others_confirmation_once(era: str, tmp_path: Path) -> None:
    """Two stateless faces (as two `serve` replicas behind a round-robin balancer) sharing a real Redis:
    the id one proposed runs on the other, and is then spent for both."""
    purged: list[dict[str, Any]] = []
    async with (
        redis_server(tmp_path / "redis") as redis,
        RedisRegistry(redis.url) as first_registry,
        RedisRegistry(redis.url) as second_registry,
        smart_gateway(purged=purged) as gateway,
        scoped_http(gateway, "smart", PEOPLE, stateless=True, shared=first_registry) as first_url,
        scoped_http(gateway, "smart", PEOPLE, stateless=True, shared=second_registry) as second_url,
        client_with(first_url, "alice-token", era) as on_first,
        client_with(second_url, "alice-token", era) as on_second,
        client_with(second_url, "bob-token", era) as bob_on_second,
    ):
        planned = await plan(on_first)
        held_because(await ask(bob_on_second, request=PURGE, **planned), "to another caller")
        ran = await ask(on_second, request=PURGE, **planned)
        assert not ran.is_error, text(ran)
        held_because(await ask(on_first, request=PURGE, **planned), "was used already")
    assert purged == [ARCHIVE]


async def test_a_destructive_request_in_other_words_is_found_and_held() -> None:
    # "get rid of" says delete without the word: the destructive tool is found, and held.
    purged: list[dict[str, Any]] = []
    async with smart_gateway(purged=purged) as gateway, smart_client(gateway, ERAS[-1]) as client:
        data = structured(await ask(client, request="get rid of the notes in folder 'archive'"))
    assert data["status"] == "confirmation_required", data
    assert data["tool_name"] == "vault/purge_notes" and data["planned_call"]["arguments"] == ARCHIVE
    assert purged == []
