"""The official MCP conformance suite, run against an upstream directly and through the gateway.

The rule (nothing is lost through the gateway): every server scenario the upstream
passes, `toolscout serve --mode passthrough` in front of it passes too, configured as a user would
(`{"url": ...}`) or with the handshake era pinned (`protocol: legacy`), in every suite: 0.1.16's
default suite and `--suite all` (a 2025-11-25 client), and the 0.2.0 prerelease's 2026-07-28 scenarios
(a 2026-07-28 client). With `protocol: auto` the gateway speaks 2026-07-28 to the upstream, where a
server written for the handshake era cannot ask its client anything nor take subscriptions: exactly
those scenarios are lost, which is why it is not the default. The suites, upstreams and gateway
configurations are in benchmarks/conformance.py, whose benchmark prints the same comparison as the
table of docs/BENCHMARKS.md.

The 2026-07-28 scenarios of the prerelease do not cover sampling, elicitation or resource
subscriptions in the form this upstream offers them (its input-required scenarios want tools of
their own), so an SDK client at 2026-07-28 checks those through the gateway below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from benchmarks.conformance import (
    SUITES,
    ConfigName,
    Suite,
    SuiteRun,
    UpstreamName,
    passthrough_gateway,
    run_suite,
    upstream_server,
)
from mcp import Client
from mcp.client.session import ClientRequestContext

from tests.servers.conformance import SEP1034_SCHEMA, SEP1330_SCHEMA

pytestmark = pytest.mark.anyio

BACK_CHANNEL = [
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "resources-subscribe",
    "resources-unsubscribe",
    "tools-call-elicitation",
    "tools-call-sampling",
]
"""What a server written for the handshake era (sampling and elicitation as requests of its own,
`resources/subscribe`) cannot do when spoken to at 2026-07-28: lost with `protocol: auto`."""
UNLISTED = ["resources-subscribe", "resources-unsubscribe", "tools-call-error", "tools-call-simple-text"]
"""What server-everything "passes" without having it: it answers a call of any tool name with a result
(its SDK turns "tool not found" into an `isError` result with text, which these scenarios accept) and
takes a subscription to any URI. toolscout never forwards a tool, resource or prompt the server did not
list (a server whose lookup is loose would otherwise run a disabled tool), so the gateway answers these
itself (-32602, unknown tool or resource) and the scenarios, calling `test_simple_text`,
`test_error_handling` and subscribing to `test://watched-resource`, which it does not list, fail."""
EXPECTED_LOSSES: dict[tuple[UpstreamName, ConfigName], dict[Suite, list[str]]] = {
    ("conformance", "auto"): {"active": BACK_CHANNEL, "all": BACK_CHANNEL},
    **{("everything", config): {"active": UNLISTED, "all": UNLISTED} for config in ("default", "legacy", "auto")},
}
MUST_PASS: dict[UpstreamName, int] = {"conformance": 30, "everything": 3}
"""How many scenarios of the default suite the upstream must pass itself for the comparison to be
worth making: tests/servers/conformance.py offers what every scenario asks for; server-everything has
tools of its own and passes the protocol-level ones."""


def report(lost: list[str], through: SuiteRun) -> str:
    return "\n".join(
        f"    {name}: " + "; ".join(through.failures.get(name, ["(not run through the gateway)"]))[:250]
        for name in lost
    )


@pytest.mark.parametrize("config", ["default", "legacy", "auto"])
@pytest.mark.parametrize("upstream", ["conformance", "everything"])
async def test_passthrough_passes_every_scenario_its_upstream_passes(
    tmp_path: Path, upstream: UpstreamName, config: ConfigName
) -> None:
    async with upstream_server(upstream) as upstream_url:
        direct = {suite: await run_suite(suite, upstream_url, tmp_path / "direct" / suite) for suite in SUITES}
        passed = len(direct["active"].passed)
        assert passed >= MUST_PASS[upstream], f"the upstream itself fails the suite:\n{direct['active'].output}"
        async with passthrough_gateway(tmp_path, upstream, upstream_url, config) as url:
            through = {suite: await run_suite(suite, url, tmp_path / config / suite) for suite in SUITES}

    expected = EXPECTED_LOSSES.get((upstream, config), {})
    unexpected: list[str] = []
    for suite in SUITES:
        lost = sorted(direct[suite].passed - through[suite].passed)
        if lost != expected.get(suite, []):
            unexpected.append(
                f"  suite {suite}: {len(lost)} of the {len(direct[suite].passed)} scenarios the upstream passes "
                f"fail through toolscout (expected {expected.get(suite, [])}):\n{report(lost, through[suite])}"
            )
    assert not unexpected, f"passthrough in front of {upstream}, config {config}:\n" + "\n".join(unexpected)


class Asked:
    """A 2026-07-28 client's model and user: answer what the upstream asks, and remember it."""

    def __init__(self) -> None:
        self.sampled: list[types.CreateMessageRequestParams] = []
        self.elicited: list[types.ElicitRequestParams] = []

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampled.append(params)
        reply = types.TextContent(text="hello from the model")
        return types.CreateMessageResult(role="assistant", content=reply, model="test-model", stop_reason="endTurn")

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicited.append(params)
        return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})


def said(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def schema_of(params: types.ElicitRequestParams) -> dict[str, Any]:
    assert isinstance(params, types.ElicitRequestFormParams)
    return params.requested_schema


@pytest.mark.parametrize("config", ["default", "legacy"])
async def test_a_2026_client_is_asked_and_subscribes_through_the_gateway(tmp_path: Path, config: ConfigName) -> None:
    """Sampling, elicitation (defaults, every kind of enum) and resource subscriptions of the conformance
    upstream, for a client at 2026-07-28: the gateway puts the upstream's requests to it as
    input-required rounds, and passes its subscription on as `resources/subscribe`."""
    asked = Asked()
    async with (
        upstream_server("conformance") as upstream_url,
        passthrough_gateway(tmp_path, "conformance", upstream_url, config) as url,
        Client(url, mode="auto", sampling_callback=asked.sample, elicitation_callback=asked.elicit) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        with anyio.fail_after(60):
            sampled = await client.call_tool("test_sampling", {"prompt": "What is 2+2?"})
            assert said(sampled) == "LLM response: hello from the model"
            [question] = asked.sampled
            assert question.messages[0].content == types.TextContent(text="What is 2+2?")

            elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            answer = 'content={"username": "ada", "email": "ada@example.com"}'
            assert said(elicited) == f"User response: action=accept, {answer}"
            assert (await client.call_tool("test_elicitation_sep1034_defaults", {})).is_error is False
            assert (await client.call_tool("test_elicitation_sep1330_enums", {})).is_error is False
            plain, defaults, enums = (schema_of(p) for p in asked.elicited)
            assert plain["required"] == ["username", "email"]
            assert defaults["properties"] == SEP1034_SCHEMA["properties"]  # every default, as the upstream sent it
            assert enums["properties"] == SEP1330_SCHEMA["properties"]  # titled, untitled and legacy enums alike

            listed = {str(r.uri) for r in (await client.list_resources()).resources}
            watched = "toolscout://conformance/test://watched-resource"
            assert watched in listed
            async with client.listen(resource_subscriptions=[watched]) as subscription:
                assert subscription.honored.resource_subscriptions == [watched]
