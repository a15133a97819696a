"""What an upstream's OAuth sign-in adds to each HTTP request the gateway sends it, in process.

    python -m benchmarks oauth_overhead [--requests 50000] [--rounds 5]

Every HTTP and SSE upstream's connection carries the gateway's OAuth client (`UpstreamOAuth`,
upstream/oauth_client.py) as its `httpx2.Auth`, whether or not the server asks for a sign-in. Over
HTTP a proxied call takes milliseconds and its noise is larger than what the auth flow adds, so this
times the flow itself: each request driven through `async_auth_flow` and answered 200, for httpx2's
own no-op `Auth` (what a connection without it runs), a server without a sign-in, and one signed in
with a valid token (the header put on). The three are interleaved round by round; the figure is the
median of the rounds, in microseconds a request.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from pathlib import Path

import anyio
import httpx2

from benchmarks import harness
from toolscout.upstream.oauth import SignIn, SignInFile
from toolscout.upstream.oauth_client import UpstreamOAuth

URL = "http://127.0.0.1:9/mcp"


async def _per_request(auth: httpx2.Auth, requests: int) -> float:
    """Microseconds a request takes through `auth`'s flow, answered 200 at once."""
    request = httpx2.Request("POST", URL, content=b"{}")
    response = httpx2.Response(200, request=request)
    started = time.perf_counter()
    for _ in range(requests):
        flow = auth.async_auth_flow(request)
        await flow.__anext__()
        with contextlib.suppress(StopAsyncIteration):
            await flow.asend(response)
    return (time.perf_counter() - started) / requests * 1e6


async def measure(requests: int, rounds: int) -> dict[str, float]:
    directory = Path(tempfile.mkdtemp(prefix="oauth-overhead-"))
    signed_file = SignInFile(directory / "signed.json")
    token = {"access_token": "a" * 43, "token_type": "Bearer", "expires_in": 3600, "refresh_token": "r" * 43}
    client = {"client_id": "bench", "redirect_uris": ["http://127.0.0.1:9/callback"]}
    signed_file.save(SignIn(server="bench", url=URL, tokens=token, expires_at=time.time() + 3600, client=client))
    flows: dict[str, httpx2.Auth] = {
        "httpx2's no-op Auth": httpx2.Auth(),
        "no sign-in kept": UpstreamOAuth("bench", URL, None, SignInFile(directory / "none.json")),
        "signed in, valid token": UpstreamOAuth("bench", URL, None, signed_file),
    }
    for auth in flows.values():
        await _per_request(auth, 1000)  # warm-up: the first request reads the sign-in
    times: dict[str, list[float]] = {name: [] for name in flows}
    for _ in range(rounds):
        for name, auth in flows.items():
            times[name].append(await _per_request(auth, requests))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=50_000, help="requests per round and flow")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    figures = anyio.run(measure, args.requests, args.rounds)
    print(f"# OAuth client overhead per upstream request — {harness.today()}\n")
    print(f"{harness.machine_line()}; {args.rounds} rounds of {args.requests} requests per flow, interleaved.\n")
    print("| flow | µs a request (median of rounds) | added over the no-op |")
    print("|---|---|---|")
    base = figures["httpx2's no-op Auth"]
    for name, value in figures.items():
        added = "—" if value is base else f"+{value - base:.2f}"
        print(f"| {name} | {value:.2f} | {added} |")
        harness.record(f"us_per_request.{name}", round(value, 3))


if __name__ == "__main__":
    main()
