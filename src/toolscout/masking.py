"""The masking of secrets in anything toolscout prints, logs, records or sends, one function for all.

`mask_text` is what the log (every record, through the record factory `install_log_masking` sets),
error messages (`ToolscoutError`, an upstream's failure), `config show`, the transports' labels and
the audit log (`gateway.audit.Redactor`) pass text through. It hides:

- the values of secrets known from the configuration (`remember_secrets`): exactly, wherever they
  appear, in whatever message: the strongest guard, since no pattern has to recognise them;
- in URLs (any scheme): the user info (`https://••••••@host/path`), and query or fragment values
  whose names sound secret (`?api_key=••••••&page=2`);
- values after secret-sounding command-line flags (`--api-key ••••••`, `--password=••••••`) and of
  `name=value` pairs (`password=••••••`; with `colon=True`, `token: ••••••` too);
- a value written after a secret word with only a space (`token ••••••`, `api key ••••••`,
  `password is ••••••`) when it looks like a credential rather than a word (`looks_like_secret`:
  8 characters or more, letters and digits mixed), so that prose (`token count`, `the token limit
  is 5`, `password reset`) stays as it is;
- `Bearer`/`Basic` credentials (digits, symbols or inner capitals, as tokens and base64 have:
  `basic information` is prose), PEM private keys, and well-known token shapes (`sk-…`, `ghp_…`,
  `github_pat_…`, `xoxb-…`, `AKIA…`, JWTs, …);
- payment card numbers (13 to 19 digits, spaces or dashes allowed, Luhn-valid, of a card network's
  prefix: 2221-2720, 3, 4, 5 or 6, so a millisecond timestamp, which starts with 1, stays).

What is left (hosts, paths, flag and argument names) keeps a message useful. `${VAR}` references
are not secrets: they say where one lives, so they stay as written.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

MASK = "••••••"
MIN_REMEMBERED = 6
"""Shorter configured values are not masked by value: a 4-character one would be hidden inside
ordinary words of every message. (They are still masked where they sit: after a flag, in a URL.)"""

# Names are split into words (camelCase, snake_case, kebab-case). Stems are searched in the words
# glued back together, so `accessToken`, `X-Api-Key` and `clientsecret` match; short words must be
# whole words, or `author`, `spin` and `signal` would be hidden too.
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SECRET_STEMS = (
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "secret",
    "token",
    "apikey",
    "authorization",
    "cookie",
    "credential",
    "privatekey",
    "accesskey",
    "session",
    "bearer",
    "signature",
    "mfacode",
    "cardnumber",
    "creditcard",
)
_SECRET_WORDS = frozenset({"auth", "pwd", "pass", "otp", "totp", "hotp", "pin", "ssn", "sig", "cvv", "cvc"})
_LAST_WORD_SECRETS = frozenset({"key"})
"""`key`, `api_key`, `stripeKey`, `x-key`: a key. Not `key_id`, `keyPath` or `key_file`, which say
which key or where it is, and not `keyword` or `keys` (one word each)."""

_TOKEN_SHAPES = (
    r"sk-[A-Za-z0-9_\-]{20,}",  # OpenAI, Anthropic (sk-ant-…)
    r"[sr]k_(?:live|test)_[A-Za-z0-9]{10,}",  # Stripe
    r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}",  # GitHub tokens
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"glpat-[A-Za-z0-9_\-]{20,}",  # GitLab
    r"xox[abeprs]-[A-Za-z0-9\-]{10,}",  # Slack
    r"(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
    r"AIza[0-9A-Za-z_\-]{35}",  # Google API keys
    r"ya29\.[A-Za-z0-9_\-]{20,}",  # Google OAuth access tokens
    r"npm_[A-Za-z0-9]{36}",
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
    # toolscout's own issued tokens: `ts_` and 64 characters (tagged, `toolscout.registry.base`), or 43
    # (issued before tags); longer runs too, so that a token glued to more text is still hidden.
    r"ts_[A-Za-z0-9_\-]{40,}",
    r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+",  # JWTs
)
_TOKEN = re.compile(r"\b(?:" + "|".join(_TOKEN_SHAPES) + ")")
_SPOKEN_SECRET = re.compile(
    r"(?i)(?<![\w-])(?P<word>(?:api|access|secret|private|client)[ _-]?key|token|password|passwd|passphrase"
    r"|passcode|pwd|secret)(?P<sep>\s+(?:is\s+)?)['\"]?(?P<value>[A-Za-z0-9][A-Za-z0-9._~+/=\-]{7,})(?![\w.~+/=\-])"
)
"""`token abc123…`: a secret word, a space (or ` is `), and a value; masked if the value `looks_like_secret`."""
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)")
_SCHEME_CREDENTIAL = re.compile(r"(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/\-]{8,}=*)")
_SCHEMES = frozenset({"bearer", "basic"})
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s'\"<>`]+")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]{0,31}://)([^/?#\s]*)@")
_URL_PARAM = re.compile(r"([?&;#])([^=&;#]+)=([^&;#]*)")
_QUOTED = r"\"[^\"]*\"|'[^']*'"
_FLAG = re.compile(
    r"(?<![\w-])(?P<quote>['\"])?(?P<flag>--?[A-Za-z][\w.\-]{0,63})(?P<sep>=|\s+)"
    rf"(?P<value>(?(quote)[^'\"]*|(?:{_QUOTED}|[^\s'\"]+)))"
)
_PAIR = re.compile(
    rf"(?<![\w.\-])(?P<name>[A-Za-z_][\w.\-]{{0,63}})(?P<close>['\"]?)(?P<sep>\s*=\s*)(?P<value>{_QUOTED}|[^\s,;&'\"]+)"
)
_COLON_PAIR = re.compile(
    rf"(?<![\w.\-])(?P<name>[A-Za-z_][\w.\-]{{0,63}})(?P<close>['\"]?)(?P<sep>\s*:\s*)(?P<value>{_QUOTED}|[^\s,;&'\"{{\[]+)"
)
# Names are bounded (64 characters): a longer run of letters is no argument's or flag's name, and
# checking one would cost a long string's every word.
_CARD = re.compile(r"(?<![\w-])\d(?:[ \-]?\d){12,18}(?![\w-])")

_names: dict[str, bool] = {}
_lock = threading.Lock()
_known: frozenset[str] = frozenset()
_known_pattern: re.Pattern[str] | None = None
_generation = 0


def secret_name(name: str) -> bool:
    """Whether something called `name` (an argument, a header, a variable, a flag) holds a secret."""
    known = _names.get(name)
    if known is None:
        words = [w.lower() for w in _WORDS.findall(name)]
        glued = "".join(words)
        known = (
            any(stem in glued for stem in _SECRET_STEMS)
            or not _SECRET_WORDS.isdisjoint(words)
            or (bool(words) and words[-1] in _LAST_WORD_SECRETS)
        )
        if len(_names) >= 4096:
            _names.clear()
        _names[name] = known
    return known


def looks_like_token(value: str) -> bool:
    """Whether `value` starts with a well-known token format (`sk-…`, `ghp_…`, a JWT, …)."""
    return _TOKEN.match(value) is not None


def has_reference(value: str) -> bool:
    """Whether `value` holds a `${VAR}` reference (which says where a secret lives, and is shown)."""
    return "${" in value


def remember_secrets(values: Iterable[str]) -> None:
    """Mask these values (configured secrets) wherever they appear from now on, and their URL-encoded forms."""
    global _known, _known_pattern, _generation
    fresh = {v for value in values for v in (value.strip(), quote(value.strip(), safe="")) if len(v) >= MIN_REMEMBERED}
    with _lock:
        if fresh <= _known:
            return
        _known = _known | fresh
        ordered = sorted(_known, key=len, reverse=True)  # the longest first: a secret containing another
        _known_pattern = re.compile("|".join(re.escape(v) for v in ordered))
        _generation += 1


def forget_secrets() -> None:
    """Drop every remembered value (tests that plant their own)."""
    global _known, _known_pattern, _generation
    with _lock:
        _known, _known_pattern = frozenset(), None
        _generation += 1


def secrets_generation() -> int:
    """Changes whenever the remembered values do: a cache of verdicts on text is stale then."""
    return _generation


def mask_text(text: str, *, marker: str = MASK, colon: bool = False) -> str:
    """`text` with every secret it shows replaced by `marker` (see the module's docstring).

    `colon`: also `name: value` pairs. Off for log lines and messages, which start `server: what
    happened` (a server called `auth0` would lose its message); on for data, such as arguments.
    """
    if not text:
        return text
    if _known_pattern is not None:
        text = _known_pattern.sub(marker, text)
    if "PRIVATE KEY" in text:
        text = _PRIVATE_KEY.sub(marker, text)
    if "://" in text:
        text = _URL.sub(lambda m: _mask_url(m.group(0), marker), text)
    text = _SCHEME_CREDENTIAL.sub(
        lambda m: m.group(1) + m.group(2) + marker if _opaque(m.group(3)) else m.group(0), text
    )
    if "-" in text:
        text = _FLAG.sub(lambda m: _keep_or_mask(m, "flag", marker), text)
    if "=" in text:
        text = _PAIR.sub(lambda m: _keep_or_mask(m, "name", marker), text)
    if colon and ":" in text:
        text = _COLON_PAIR.sub(lambda m: _keep_or_mask(m, "name", marker), text)
    text = _SPOKEN_SECRET.sub(lambda m: _spoken(m, marker), text)
    text = _TOKEN.sub(marker, text)
    return _CARD.sub(lambda m: marker if card_number(m.group(0)) else m.group(0), text)


def mask_args(args: Iterable[str], *, marker: str = MASK) -> list[str]:
    """A command line's arguments, masked: the one after a secret flag of its own (`--token X`) too."""
    out: list[str] = []
    hide_next = False
    for arg in args:
        if hide_next and not has_reference(arg):
            out.append(marker)
        else:
            out.append(mask_text(arg, marker=marker))
        hide_next = arg.startswith("-") and "=" not in arg and secret_name(arg)
    return out


def install_log_masking() -> None:
    """Mask every log record as it is made, whoever logs it and whichever handler writes it.

    A record factory rather than a formatter: it covers handlers added later (a log file, pytest's
    capture) as well as the stderr log, so no log call, now or in future, can carry a secret out.
    """
    with _lock:
        current = logging.getLogRecordFactory()
        if getattr(current, "_toolscout_masking", False):
            return

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = current(*args, **kwargs)
            _mask_record(record)
            return record

        factory._toolscout_masking = True  # type: ignore[attr-defined]  # pyright: ignore[reportFunctionMemberAccess]
        logging.setLogRecordFactory(factory)


_TRACEBACKS = logging.Formatter()


def _mask_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: the handler reports it (without the arguments' text)
        record.msg, record.args = mask_text(str(record.msg)), None
        return
    record.msg, record.args = mask_text(message), None
    if record.exc_info and not record.exc_text:
        record.exc_text = mask_text(_TRACEBACKS.formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = mask_text(record.stack_info)


def _keep_or_mask(match: re.Match[str], name_group: str, marker: str) -> str:
    value = match.group("value")
    # Already masked (a URL's parameter, a `Bearer` credential), or a reference: as it is.
    if value.startswith(marker) or value.lower() in _SCHEMES or has_reference(value):
        return match.group(0)
    if not secret_name(match.group(name_group)):
        return match.group(0)
    start = match.start("value") - match.start(0)
    return match.group(0)[:start] + marker


def looks_like_secret(value: str) -> bool:
    """Whether `value`, written after a secret word in prose, looks like a credential rather than a
    word: at least 8 characters, with letters and digits both (`s3cr3t-Value9`, `ab12cd34ef`; not
    `count`, `limit`, `expired`, `12345678`, `auto-refreshed`)."""
    if len(value) < 8:
        return False
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _opaque(value: str) -> bool:
    """Whether the word after `Bearer`/`Basic` is a credential (digits, symbols or inner capitals, as
    tokens and base64 have), not prose (`basic information`, `bearer authentication`)."""
    return any(c.isdigit() or not c.isalpha() for c in value) or any(c.isupper() for c in value[1:])


def _spoken(match: re.Match[str], marker: str) -> str:
    value = match.group("value")
    kept = value.rstrip(".")  # a sentence's full stop is not part of the secret
    if not looks_like_secret(kept):
        return match.group(0)
    start = match.start("value") - match.start(0)
    return match.group(0)[:start] + marker + value[len(kept) :]


def _mask_url(url: str, marker: str) -> str:
    if url.endswith(")") and "(" not in url:  # "(http: https://…)": the parenthesis is the message's
        return _mask_url(url[:-1], marker) + ")"
    url = _USERINFO.sub(lambda m: m.group(1) + marker + "@" if not has_reference(m.group(2)) else m.group(0), url)
    return _URL_PARAM.sub(
        lambda m: (
            f"{m.group(1)}{m.group(2)}={marker}"
            if m.group(3) and secret_name(m.group(2)) and not has_reference(m.group(3))
            else m.group(0)
        ),
        url,
    )


def card_number(text: str) -> bool:
    """Whether `text` (digits, spaces, dashes) is a payment card number: see the module's docstring."""
    digits = [int(c) for c in text if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    first = digits[0]
    prefix4 = int("".join(map(str, digits[:4])))
    if first not in (3, 4, 5, 6) and not 2221 <= prefix4 <= 2720:
        return False
    total = 0
    for i, digit in enumerate(reversed(digits)):
        if i % 2:
            digit *= 2
            digit -= 9 if digit > 9 else 0
        total += digit
    return total % 10 == 0
