"""Telling secrets apart in server entries: masking them for display, moving them into `.env`.

A value counts as secret when it sits in `env` or `headers`, in a URL's user info or a
query parameter with a secret-sounding name, after a secret-sounding command-line flag,
or looks like a well-known token format. `${VAR}` references are not secrets: they say
where the secret lives, so they are shown as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit, urlunsplit

MASK = "••••••"
_SECRET_NAME = re.compile(
    r"token|secret|passw|pwd|api[-_]?key|apikey|auth|credential|cookie|session|bearer|private", re.I
)
_TOKEN_SHAPES = re.compile(
    r"^(sk-|sk_|pk_|rk_|ghp_|gho_|ghu_|ghs_|github_pat_|glpat-|xox[abpr]-|AKIA|AIza|ya29\.|eyJ)[A-Za-z0-9._\-]{8,}"
)
_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$")


def is_reference(value: str) -> bool:
    """`${VAR}` or `${VAR:-default}` and nothing else."""
    return bool(_REFERENCE.match(value))


def secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def looks_like_token(value: str) -> bool:
    return bool(_TOKEN_SHAPES.match(value))


def _mask(value: str) -> str:
    return value if "${" in value else MASK


def mask_url(url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    query = "&".join(
        f"{k}={MASK if secret_name(k) and '${' not in v else v}"
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_args(args: list[str]) -> list[str]:
    out: list[str] = []
    hide_next = False
    for arg in args:
        if hide_next:
            out.append(_mask(arg))
            hide_next = False
            continue
        flag, eq, value = arg.partition("=")
        if eq and secret_name(flag):
            out.append(f"{flag}={_mask(value)}")
        elif arg.startswith("-") and secret_name(arg):
            out.append(arg)
            hide_next = True
        else:
            out.append(MASK if looks_like_token(arg) else arg)
    return out


def mask_server(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of one `mcpServers` entry that is safe to print."""
    masked = dict(entry)
    for key in ("env", "headers"):
        values = entry.get(key)
        if isinstance(values, Mapping):
            masked[key] = {k: _mask(str(v)) for k, v in cast(Mapping[str, Any], values).items()}
    if isinstance(url := entry.get("url"), str):
        masked["url"] = mask_url(url)
    if isinstance(args := entry.get("args"), list):
        masked["args"] = mask_args([str(a) for a in cast(list[Any], args)])
    return masked


def env_name(*parts: str) -> str:
    """An environment variable name from its parts: `github`, `Authorization` -> `GITHUB_AUTHORIZATION`."""
    joined = "_".join(re.sub(r"[^A-Za-z0-9]+", "_", p).strip("_") for p in parts if p)
    name = joined.upper() or "SECRET"
    return f"_{name}" if name[0].isdigit() else name


def extract_secrets(
    server: str, entry: Mapping[str, Any], taken: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Replace literal secrets in `env` and `headers` with `${VAR}` references.

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
    return new, found


def _is_secret(name: str, value: str) -> bool:
    return "${" not in value and bool(value) and (secret_name(name) or looks_like_token(value))
