"""`/healthz` and `/readyz` for load balancers and orchestrators: answered before authentication and
session admission (a health check carries no credential and opens no session).

* `GET /healthz`: 200 while the process serves (its event loop answers).
* `GET /readyz`: 200 when it can serve what needs its registry (the configuration is loaded, since it
  serves; the registry answers within `READY_WAIT` seconds), else 503 saying what is wrong, so that
  a balancer sends nothing to a replica whose Redis is unreachable.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from toolscout.registry.base import Registry

READY_WAIT = 2.0
"""Seconds the registry has to answer a readiness check."""


class Health:
    """ASGI middleware answering the two health paths itself, passing everything else on."""

    def __init__(self, app: ASGIApp, registry: Registry | None) -> None:
        self.app = app
        self.registry = registry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path") if scope["type"] == "http" else None
        if path == "/healthz":
            await _answer(send, 200, {"status": "ok"})
        elif path == "/readyz":
            status, body = await self._readiness()
            await _answer(send, status, body)
        else:
            await self.app(scope, receive, send)

    async def _readiness(self) -> tuple[int, dict[str, Any]]:
        if self.registry is None:
            return 200, {"status": "ready"}
        try:
            with anyio.fail_after(READY_WAIT):
                await self.registry.version()
        except TimeoutError:
            return 503, {"status": "not ready", "registry": f"no answer within {READY_WAIT:g} s"}
        except Exception as exc:  # RegistryUnavailable (Redis), sqlite3.Error, OSError (the file)
            return 503, {"status": "not ready", "registry": getattr(exc, "message", None) or str(exc)}
        return 200, {"status": "ready", "registry": "ok"}


async def _answer(send: Send, status: int, body: dict[str, Any]) -> None:
    content = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})
