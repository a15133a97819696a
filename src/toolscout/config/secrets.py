"""The secrets in server entries: masked for display, found for masking by value, moved into `.env`.

A value counts as secret when it sits in `env` or `headers` or is `oauth.clientSecret`, or wherever
`toolscout.masking` would hide it (a URL's user info or secret-sounding query parameter, after a
secret-sounding command-line flag, a well-known token format). `${VAR}` references are not secrets: they say
where the secret lives, so they are shown as written.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from toolscout.masking import MASK, has_reference, looks_like_token, mask_args, mask_text, secret_name

if TYPE_CHECKING:
    from toolscout.config.models import AnyServerConfig, GatewayConfig

_SAFE_HEADERS = frozenset({"accept", "accept-language", "content-type", "user-agent", "mcp-protocol-version"})
_CLIENT_SECRET_KEYS = frozenset({"clientSecret", "client_secret"})
"""`oauth.clientSecret` as a file or a dump may spell it (the model takes either name)."""
_FOUND = "\x00"
"""The marker `secrets_in` masks with, to find what was masked: no configuration text holds one."""


def _mask(value: str) -> str:
    return value if has_reference(value) else MASK


def mask_server(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of one `mcpServers` entry that is safe to print.

    `env` and `headers` values and `oauth.clientSecret` are hidden whole; the command, its arguments,
    the URL and every other text are masked by `toolscout.masking` (a token in the `command` string as
    much as in `args`).
    """
    masked: dict[str, Any] = {}
    for key, value in entry.items():
        if key in ("env", "headers") and isinstance(value, Mapping):
            masked[key] = {k: _mask(str(v)) for k, v in cast(Mapping[str, Any], value).items()}
        elif key == "oauth" and isinstance(value, Mapping):
            masked[key] = _mask_oauth(cast(Mapping[str, Any], value))
        elif key == "args" and isinstance(value, list):
            masked[key] = mask_args(str(a) for a in cast(list[Any], value))
        elif isinstance(value, str):
            masked[key] = mask_text(value)
        else:
            masked[key] = value
    return masked


def _mask_oauth(oauth: Mapping[str, Any]) -> dict[str, Any]:
    # The client secret is hidden whole, as an `env` value is: no pattern of `mask_text` would know it.
    # The rest (the client id, scopes, the redirect URI) says which client signs in, and is shown.
    masked: dict[str, Any] = {}
    for key, value in oauth.items():
        if key in _CLIENT_SECRET_KEYS and value is not None:
            masked[key] = _mask(str(value))
        else:
            masked[key] = mask_text(value) if isinstance(value, str) else value
    return masked


def shown_server(config: AnyServerConfig) -> dict[str, Any]:
    """A server's configuration entry as anyone may be shown it: its transport (`type`) and the keys it
    sets other than to their defaults, as a file writes them, with every secret masked (`mask_server`)."""
    entry = config.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    entry.pop("kind", None)
    return mask_server({"type": config.kind, **entry})


def mask_auth(auth: Mapping[str, Any], written: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the `auth` section (as dumped, camelCase) that is safe to print: each key shown as
    written when that was a `${VAR}` reference, else masked."""

    def shown(as_written: Any) -> str:
        return as_written if isinstance(as_written, str) and has_reference(as_written) else MASK

    admin_written = cast(list[Any], written.get("adminKeys") or [])
    keys_written = cast(list[Any], written.get("keys") or [])
    masked = dict(auth)
    masked["adminKeys"] = [
        shown(admin_written[i] if i < len(admin_written) else None)
        for i in range(len(cast(list[Any], auth.get("adminKeys") or [])))
    ]
    keys: list[dict[str, Any]] = []
    for i, entry in enumerate(cast(list[dict[str, Any]], auth.get("keys") or [])):
        raw = keys_written[i] if i < len(keys_written) else None
        key = cast(Mapping[str, Any], raw).get("key") if isinstance(raw, Mapping) else None
        keys.append({**entry, "key": shown(key)})
    masked["keys"] = keys
    return masked


def secrets_in(text: str) -> list[str]:
    """The parts of `text` that `mask_text` hides."""
    masked = mask_text(text, marker=_FOUND)
    if masked == text:
        return []
    import difflib  # only when something was masked: the command line's start-up need not pay for it

    matcher = difflib.SequenceMatcher(None, text, masked, autojunk=False)
    return [text[i1:i2] for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal" and _FOUND in masked[j1:j2]]


def config_secrets(config: GatewayConfig, env: Mapping[str, str] | None = None) -> set[str]:
    """Return every secret value the configuration holds, for `toolscout.masking.remember_secrets`.

    `env` values and `headers` (but `Accept`, `Content-Type`, ...) of secret-sounding names or token
    shapes, `oauth.clientSecret`, whatever `mask_text` would hide in any of a server's texts (the
    password in a URL, the value after `--api-key` in `args` or inside `command`), and, given the
    variables the file was read with, the values of those with secret-sounding names
    (`${GITHUB_TOKEN}` wherever it is used).
    """
    found: set[str] = set()
    for server in config.mcp_servers.values():
        values = server.model_dump(exclude_none=True)
        texts: list[str] = []
        for key in ("env", "headers"):
            for name, value in cast(Mapping[str, Any], values.get(key) or {}).items():
                text = str(value)
                texts.append(text)
                if (
                    (key == "headers" and name.lower() not in _SAFE_HEADERS)
                    or secret_name(name)
                    or looks_like_token(text)
                ):
                    found.add(text)
                    scheme, _, credential = text.partition(" ")
                    if credential and scheme.lower() in ("bearer", "basic", "token"):
                        found.add(credential)
        # Whatever it looks like and wherever a variable of any name brought it from: an upstream's
        # error or an agent's arguments quoting it are masked by value.
        client_secret = cast(Mapping[str, Any], values.get("oauth") or {}).get("client_secret")
        if isinstance(client_secret, str) and client_secret:
            found.add(client_secret)
        args = [str(a) for a in cast(list[Any], values.get("args") or [])]
        for flag, value in itertools.pairwise(args):
            if flag.startswith("-") and "=" not in flag and secret_name(flag):
                found.add(value)
        texts += args + [str(values.get(k) or "") for k in ("command", "url", "cwd")]
        for text in texts:
            found.update(secrets_in(text))
    found.update(config.auth.admin_keys)
    found.update(key.key for key in config.auth.keys)
    if config.registry.url:  # a Redis password in the registry's URL
        found.update(secrets_in(config.registry.url))
        password = urlsplit(config.registry.url).password
        if password:
            found.add(password)
    if env is not None:
        found.update(value for name, value in env.items() if secret_name(name) and value)
    return {value for value in found if not has_reference(value)}


def env_name(*parts: str) -> str:
    """An environment variable name from its parts: `github`, `Authorization` -> `GITHUB_AUTHORIZATION`."""
    joined = "_".join(re.sub(r"[^A-Za-z0-9]+", "_", p).strip("_") for p in parts if p)
    name = joined.upper() or "SECRET"
    return f"_{name}" if name[0].isdigit() else name


def extract_secrets(
    server: str, entry: Mapping[str, Any], taken: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Replace literal secrets (in `env`, `headers` and `oauth.clientSecret`) with `${VAR}` references.

    Returns the new entry and the variables to write to `.env`. `taken` holds the
    variables already chosen (name -> value): the same value reuses its name, a
    different value under a taken name gets a server-qualified or numbered one.
    """
    new = dict(entry)
    found: dict[str, str] = {}
    prefix = env_name(server) + "_"

    def reference(preferred: str, value: str) -> str:
        names = [preferred] if preferred.startswith(prefix) else [preferred, prefix + preferred]
        names += [f"{names[-1]}_{i}" for i in range(2, 100)]
        for name in names:
            existing = found.get(name, taken.get(name))
            if existing is None or existing == value:
                found[name] = value
                return f"${{{name}}}"
        raise ValueError(f"no free variable name for {preferred}")  # 100 clashes cannot happen in one config

    env = entry.get("env")
    if isinstance(env, Mapping):
        new["env"] = {
            k: reference(env_name(k), text) if _is_secret(k, text) else text
            for k, v in cast(Mapping[str, Any], env).items()
            for text in [str(v)]
        }
    headers = entry.get("headers")
    if isinstance(headers, Mapping):
        rewritten: dict[str, str] = {}
        for k, v in cast(Mapping[str, Any], headers).items():
            text = str(v)
            scheme, _, credential = text.partition(" ")
            if not _is_secret(k, credential or text):
                rewritten[k] = text
            elif credential and scheme.lower() in ("bearer", "basic", "token"):
                # Keep the scheme visible: "Bearer ${GITHUB_TOKEN}" reads better than a whole-header reference.
                rewritten[k] = f"{scheme} {reference(prefix + 'TOKEN', credential)}"
            else:
                rewritten[k] = reference(prefix + env_name(k), text)
        new["headers"] = rewritten
    oauth = entry.get("oauth")
    if isinstance(oauth, Mapping):
        settings = dict(cast(Mapping[str, Any], oauth))
        secret = settings.get("clientSecret")
        if isinstance(secret, str) and _is_secret("clientSecret", secret):
            # Server-qualified, as a header's is: two servers' clients have two secrets.
            settings["clientSecret"] = reference(prefix + "CLIENT_SECRET", secret)
            new["oauth"] = settings
    return new, found


def _is_secret(name: str, value: str) -> bool:
    return not has_reference(value) and bool(value) and (secret_name(name) or looks_like_token(value))
