"""A demo callback tool's site: the URL a tool registered with `toolscout registry add-tool` POSTs
its arguments to (a component, in the words of the registration API).

``python -m toolscout.demo.callback_site --port 7000`` answers ``POST /ip-reputation`` with
``{"ip": "..."}`` by an MCP tool result: a made-up but stable reputation score for the address (a
real site would ask AbuseIPDB). Anything else is answered 404, or 400 with what was wrong.
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import json

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

INPUT_SCHEMA = {
    "type": "object",
    "properties": {"ip": {"type": "string", "description": "An IPv4 or IPv6 address"}},
    "required": ["ip"],
}
"""The schema to register the tool with (`toolscout registry add-tool --input-schema`)."""
HELP_DESCRIPTION = "A demo callback tool's site (the pipeline's \"component\"): the URL a tool registered with"
"""What `--help` says; kept word for word as it has always read (the module docstring's old first line)."""


def _result(text: str, *, error: bool = False, **structured: object) -> dict[str, object]:
    result: dict[str, object] = {"content": [{"type": "text", "text": text}], "isError": error}
    if structured:
        result["structuredContent"] = structured
    return result


async def ip_reputation(request: Request) -> JSONResponse:
    """The tool's one call: the gateway validated the arguments against `INPUT_SCHEMA` already."""
    try:
        arguments = json.loads(await request.body())
        address = ipaddress.ip_address(arguments["ip"])
    except (ValueError, KeyError, TypeError) as exc:
        return JSONResponse(_result(f"not an IP address: {exc}", error=True))
    score = int.from_bytes(hashlib.sha256(address.packed).digest()[:2], "big") % 101
    verdict = "private" if address.is_private else ("abusive" if score > 80 else "clean")
    text = f"{address}: abuse confidence {score}% ({verdict})"
    return JSONResponse(_result(text, ip=str(address), abuseConfidence=score, verdict=verdict))


def app() -> Starlette:
    """The site's ASGI app."""
    return Starlette(routes=[Route("/ip-reputation", ip_reputation, methods=["POST"])])


def main() -> None:
    parser = argparse.ArgumentParser(description=HELP_DESCRIPTION)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7000)
    parser.add_argument("--print-schema", action="store_true", help="print the tool's input schema and exit")
    args = parser.parse_args()
    if args.print_schema:
        print(json.dumps(INPUT_SCHEMA))
        return
    uvicorn.run(app(), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
