"""What one upstream sends the gateway unasked, and where it goes: list changes, resource updates,
logs, and its requests to the client (sampling, elicitation).

Its requests and logs during a call go back to the client of that call (its `Relay`, relay.py),
or are refused with an error the upstream can act on; list changes and resource updates go to
the gateway (the callbacks given to `ClientCallbacks`). A handshake-era server pushes changes on
its session (`on_message`); one reached at 2026-07-28 sends them only on a `subscriptions/listen`
stream we open (`listen_for_changes`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext, IncomingMessage
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolscout import __version__
from toolscout.upstream.calls import CallsInFlight, describe_exception
from toolscout.upstream.relay import Relay, SamplingResult, current_relay
from toolscout.upstream.spec import ListKind
from toolscout.upstream.transport import UpstreamTarget

logger = logging.getLogger(__name__)

CLIENT_INFO = types.Implementation(name="toolscout", version=__version__)
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class ClientCallbacks:
    """The callbacks of the gateway's client session to one upstream."""

    def __init__(
        self,
        server: str,
        calls: CallsInFlight,
        *,
        tools_changed: Callable[[], None],
        list_changed: Callable[[ListKind], None],
        resource_updated: Callable[[str], Awaitable[None]],
    ) -> None:
        self._server = server
        self._calls = calls
        self._tools_changed = tools_changed
        self._list_changed = list_changed
        self._resource_updated = resource_updated

    def client(self, target: UpstreamTarget, mode: str) -> Client:
        """A client session to `target` in protocol `mode`, with these callbacks (not yet entered)."""
        return Client(
            target,
            mode=mode,
            client_info=CLIENT_INFO,
            message_handler=self.on_message,
            cache=None,
            # Declared so the upstream may ask; each request goes to the client of the
            # call it belongs to, which may refuse (relay.py).
            sampling_callback=self.on_sampling,
            sampling_capabilities=types.SamplingCapability(
                context=types.SamplingContextCapability(), tools=types.SamplingToolsCapability()
            ),
            elicitation_callback=self.on_elicitation,
            logging_callback=self.on_log,
            # At 2026-07-28 logs come only to requests that opt in; each client's own
            # level is applied on the way out (SessionRelay.log).
            log_level="debug",
        )

    @staticmethod
    def announces_changes(client: Client) -> bool:
        """Whether changes are to be listened for on a `subscriptions/listen` stream."""
        # Handshake-era servers push notifications/*/list_changed on their own (see on_message);
        # on 2026-07-28 they arrive only on a subscriptions/listen stream we open.
        caps = client.server_capabilities
        return client.protocol_version in MODERN_PROTOCOL_VERSIONS and any(
            c is not None and bool(c.list_changed) for c in (caps.tools, caps.resources, caps.prompts)
        )

    async def listen_for_changes(
        self, client: Client, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Follow the server's list changes on a `subscriptions/listen` stream (started once it is open)."""
        caps = client.server_capabilities
        started = False
        try:
            async with client.listen(
                tools_list_changed=bool(caps.tools and caps.tools.list_changed),
                resources_list_changed=bool(caps.resources and caps.resources.list_changed),
                prompts_list_changed=bool(caps.prompts and caps.prompts.list_changed),
            ) as subscription:
                task_status.started()
                started = True
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        self._tools_changed()
                    elif isinstance(event, ResourcesListChanged):
                        self._list_changed("resources")
                    elif isinstance(event, PromptsListChanged):
                        self._list_changed("prompts")
        except Exception as exc:
            # Without the stream the catalog can go stale, but the server itself still works.
            logger.warning("%s: stopped listening for list changes: %s", self._server, describe_exception(exc))
        if not started:
            task_status.started()

    async def on_message(self, message: IncomingMessage) -> None:
        """A notification (or a transport's exception) that arrived on the session."""
        # The SDK also hands listen-stream frames here, so one list change may be told twice: the
        # gateway compares what it lists before telling anyone (the face), so that is harmless.
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed()
        elif isinstance(message, types.ResourceListChangedNotification):
            self._list_changed("resources")
        elif isinstance(message, types.PromptListChangedNotification):
            self._list_changed("prompts")
        elif isinstance(message, types.ResourceUpdatedNotification):
            meta = message.params.meta or {}
            if SUBSCRIPTION_ID_META_KEY not in meta:  # a listen stream's are taken from the stream (watch.py)
                await self._resource_updated(message.params.uri)
        elif isinstance(message, Exception):
            logger.debug("%s: transport reported %r", self._server, message)

    def relay_for(self, what: str) -> Relay | types.ErrorData:
        """The client an upstream request or message belongs to.

        A request an upstream makes while answering a 2026-07-28 call (input required) runs in
        the calling task, so its relay is current. A handshake-era upstream's request arrives on
        its own, carrying nothing that ties it to a call: it goes to the client of the call in
        flight when there is one, or to the one client all calls in flight come from; with calls
        from several clients it would be a guess, and a guess could show one user's data to
        another, so the upstream gets an error instead.
        """
        relay = current_relay()
        if relay is not None:
            return relay
        relays = self._calls.relays
        clients = {id(r.origin) for r in relays}
        if relays and len(clients) == 1:
            return relays[-1]
        reason = (
            "no call to it is in flight"
            if not relays
            else f"calls from {len(clients)} clients are in flight and the request does not say which it is for"
        )
        return types.ErrorData(code=types.INVALID_REQUEST, message=f"toolscout cannot route {what}: {reason}.")

    async def on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> SamplingResult:
        """`sampling/createMessage`: asked of the client of the call it belongs to."""
        relay = self.relay_for("sampling/createMessage")
        if isinstance(relay, types.ErrorData):
            return relay
        logger.info("%s: sampling request relayed to %s", self._server, relay.client or "the client")
        return await relay.sample(params)

    async def on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """`elicitation/create`: asked of the client of the call it belongs to."""
        relay = self.relay_for("elicitation/create")
        if isinstance(relay, types.ErrorData):
            return relay
        logger.info("%s: elicitation request relayed to %s", self._server, relay.client or "the client")
        return await relay.elicit(params)

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        """A log message: always in the gateway's own log; to a client only when it is clear whose call it is about."""
        level = _LOG_LEVELS.get(params.level, logging.INFO)
        logger.log(level, "%s%s: %s", self._server, f" [{params.logger}]" if params.logger else "", params.data)
        relay = self.relay_for("a log message")
        if not isinstance(relay, types.ErrorData):
            await relay.log(params)
