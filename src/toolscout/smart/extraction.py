"""Arguments from plain words without an LLM: spans of the request matched to a tool's parameters.

`smart` mode's deterministic parameter mapper (spec 004 "Parameter Mapping", issue 23). It reads
typed spans out of the request (URLs, e-mail addresses, hosts, paths and file names, numbers with
units, dates and times, quoted strings, `key=value` and `key: value`, booleans, enum values named
in the text) and gives each parameter of the input schema the span that fits it best, by name,
type, format and description. It never invents a value: every argument is a span of the request
(or an enum value the request names), and a required parameter nothing fits is reported in
`missing_required` rather than guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from toolscout.search.text import STOPWORDS, stem
from toolscout.smart.spans import TYPED, Span, find_spans, words_of

# A pairing of a parameter and a span counts only from this score (see `_score`).
THRESHOLD = 0.5
# Words before a number or a name that tie it to a parameter ("limit 5", "timeout of 30").
_NEAR = 4

# What a parameter's name, format or description says about the kind of value it takes.
_CUES: dict[str, frozenset[str]] = {
    cue: words_of(signs)
    for cue, signs in {
        "url": "url uri link endpoint website webpage page href site",
        "email": "email mail recipient sender address",
        "path": "path file filename filepath dir directory folder document",
        "host": "host hostname domain server target address ip destination",
        "date": "date day when deadline since until start end birthday",
        "time": "time hour clock alarm at",
    }.items()
}
_FORMATS = {
    "uri": "url",
    "url": "url",
    "uri-reference": "url",
    "email": "email",
    "hostname": "host",
    "ipv4": "host",
    "date": "date",
    "date-time": "date",
    "time": "time",
}
# A parameter named only so is a mail recipient ("to" alone; `where_to` is a place).
_MAIL_FIELDS = frozenset({"to", "cc", "bcc"})
# Words that are a unit's or a currency's: a parameter named so takes a number's unit ("5 miles").
_UNITISH = words_of("unit currency")


@dataclass(frozen=True)
class Evidence:
    """Why a parameter got its value: the span's kind and text, and the score of the pairing."""

    kind: str
    text: str
    score: float


@dataclass
class Extraction:
    """What the request says for each parameter: `arguments`, the `missing_required` ones, and why."""

    arguments: dict[str, Any] = field(default_factory=dict[str, Any])
    missing_required: list[str] = field(default_factory=list[str])
    evidence: dict[str, Evidence] = field(default_factory=dict[str, Evidence])


@dataclass(frozen=True)
class _Param:
    name: str
    type: str
    words: frozenset[str]
    described: frozenset[str]
    cues: frozenset[str]
    described_cues: frozenset[str]
    enum: tuple[Any, ...]
    required: bool


def _params(schema: Mapping[str, Any]) -> list[_Param]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return []
    required = schema.get("required")
    needed = {str(r) for r in cast(list[Any], required)} if isinstance(required, list) else set[str]()
    found: list[_Param] = []
    for name, raw in cast(dict[str, Any], properties).items():
        spec = cast(dict[str, Any], raw) if isinstance(raw, dict) else {}
        kind = spec.get("type")
        if isinstance(kind, list):
            kind = next((k for k in cast(list[Any], kind) if k != "null"), "string")
        name_words = words_of(name)
        described = words_of(str(spec.get("description") or ""))
        cues = {cue for cue, signs in _CUES.items() if name_words & signs}
        if name_words and name_words <= _MAIL_FIELDS:  # `to`, `cc`: e-mail's own field names
            cues.add("email")
        fmt = _FORMATS.get(str(spec.get("format") or ""))
        if fmt:
            cues.add(fmt)
        # The description speaks too, more softly ("destination": a host by name, a path by description).
        described_cues = {cue for cue, signs in _CUES.items() if described & signs and cue != "time"} - cues
        enum = spec.get("enum")
        found.append(
            _Param(
                str(name),
                str(kind or "string"),
                name_words,
                described - STOPWORDS,
                frozenset(cues),
                frozenset(described_cues),
                tuple(cast(list[Any], enum)) if isinstance(enum, list) else (),
                str(name) in needed,
            )
        )
    return found


def _value(param: _Param, span: Span) -> Any | None:
    """The argument a span gives a parameter without an enum: a `key=value`'s text read as the type."""
    return _keyvalue(param, span) if span.kind == "keyvalue" else _coerce(param, span)


def _coerce(param: _Param, span: Span) -> Any | None:
    """The span's value in the parameter's type, or None when it cannot be that type."""
    if param.type in ("integer", "number"):
        return None if span.number is None else _as_number(param, span.number)
    if param.type == "boolean":
        return span.flag
    if param.type in ("string", "null"):
        return span.value
    return None


def _as_number(param: _Param, number: float) -> int | float | None:
    """`number` as the parameter's type: a whole number as an int, a fraction only for `number`."""
    if number.is_integer():
        return int(number)
    return number if param.type == "number" else None


def _named_near(param: _Param, span: Span, words: Sequence[tuple[int, str]]) -> bool:
    """Whether one of the parameter's name words stands just before the span (or just after a number)."""
    before = [w for end, w in words if end <= span.start][-_NEAR:]
    after = [w for start, w in words if start >= span.end][:2] if span.kind == "number" else []
    # Only the name's own words: "to" in `where_to` stands before half the values of a request.
    return bool((param.words - STOPWORDS) & {*before, *after})


def _described_near(param: _Param, span: Span, words: Sequence[tuple[int, str]]) -> bool:
    """Whether a word of the parameter's description stands next to the span ("5 pings": count)."""
    before = [w for end, w in words if end <= span.start][-2:]
    after = [w for start, w in words if start >= span.end][:1]
    return bool(param.described & {*before, *after})


def _score(param: _Param, span: Span, words: Sequence[tuple[int, str]]) -> float:
    """How well `span` fits `param`: 1 for `param=value`, 0 for a span it cannot take."""
    if span.kind in ("unit", "after"):
        if param.type != "string" or param.enum or param.cues & set(TYPED):
            return 0.0
        unitish = bool(param.words & _UNITISH)
        if span.kind == "unit":  # a number's unit fills only a unit (or currency) parameter
            return (0.7 if span.key in param.words else 0.6) if unitish else 0.0
        if span.key not in param.words:
            return 0.0
        # A lower-case word after "to" is a unit or code ("to km"), not a place or a verb ("to stay").
        return 0.7 if unitish or (span.value or " ")[0].isupper() or span.text.startswith('"') else 0.0
    if span.kind == "keyvalue":
        return 1.0 if span.key is not None and words_of(span.key) == param.words else 0.0
    if param.enum:
        if span.kind == "enum" and span.key == param.name:
            # A bare number counts only beside the parameter's words ("3 rooms" is no star rating). By
            # name alone cost SGD's "for 4 people" seats (exact 0.302 -> 0.235); with the description,
            # 25 fewer wrong values over the corpus for 0.006 exact (benchmarks/smart_extraction.py).
            if span.text.isdigit() and not (_named_near(param, span, words) or _described_near(param, span, words)):
                return 0.0
            # The longest value named wins: "Premium Economy" over "Economy".
            return 0.9 + min(len(span.text), 50) / 1000
        return 0.0
    if span.kind == "enum":
        return 0.0
    if _coerce(param, span) is None:
        return 0.0
    near = _named_near(param, span, words)
    if param.type == "boolean":
        return 0.85 if near else 0.0
    if param.type in ("integer", "number"):
        unit = span.unit is not None and bool(param.words & words_of(span.unit))
        if near or unit:
            return 0.8
        return 0.65 if _described_near(param, span, words) else 0.45
    if span.kind in param.cues:
        return 0.9 if near else 0.8
    if span.kind in param.described_cues:
        return 0.7
    if span.kind in TYPED and near:
        return 0.75
    if span.kind == "quoted":
        return 0.75 if near else 0.4
    if span.kind == "named" and param.words & words_of(span.key or ""):
        return 0.8
    return 0.0


def extract_arguments(request: str, schema: Mapping[str, Any] | None) -> Extraction:
    """The arguments `request` states for a tool with this input schema, and the required ones it does not."""
    params = _params(schema or {})
    enums = {p.name: p.enum for p in params if p.enum}
    spans = find_spans(request, enums)
    words = [(m.end(), stem(m.group(0).lower())) for m in re.finditer(r"[A-Za-z][A-Za-z0-9]*", request)]
    pairs: list[tuple[float, int, int]] = []
    for i, param in enumerate(params):
        for j, span in enumerate(spans):
            score = _score(param, span, words)
            if score >= THRESHOLD:
                pairs.append((score, i, j))
    # The lone quoted string of a request goes to the lone required string parameter.
    pairs.extend(_only_choice(params, spans, pairs))
    result = Extraction()
    used_params: set[int] = set()
    used_spans: set[int] = set()
    for score, i, j in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
        if i in used_params or any(_overlaps(spans[j], spans[k]) for k in used_spans):
            continue
        param, span = params[i], spans[j]
        value = _enum_value(param, span) if param.enum else _value(param, span)
        if value is None:
            continue
        used_params.add(i)
        used_spans.add(j)
        result.arguments[param.name] = value
        result.evidence[param.name] = Evidence(span.kind, span.text, round(score, 3))
    result.missing_required = [p.name for i, p in enumerate(params) if p.required and i not in used_params]
    return result


def _only_choice(
    params: Sequence[_Param], spans: Sequence[Span], pairs: Iterable[tuple[float, int, int]]
) -> list[tuple[float, int, int]]:
    """Pairings no word ties, made because nothing else could be meant: one value, one parameter."""
    taken = {i for _, i, _ in pairs}
    found: list[tuple[float, int, int]] = []
    open_strings = [
        i for i, p in enumerate(params) if p.required and p.type == "string" and not p.enum and i not in taken
    ]
    # Typed spans reach their parameters by cue; a host is no `city` just because it is alone.
    plain = [j for j, s in enumerate(spans) if s.kind == "quoted"]
    if len(open_strings) == 1 and len(plain) == 1:
        found.append((THRESHOLD, open_strings[0], plain[0]))
    # The lone number of a request goes to the lone numeric parameter.
    numeric = [i for i, p in enumerate(params) if p.type in ("integer", "number") and i not in taken]
    # A number counting something else ("3 baths") is not the lone number of a `number_of_beds`.
    numbers = [j for j, s in enumerate(spans) if s.kind == "number" and not _counts_other(s, params)]
    if len(numeric) == 1 and len(numbers) == 1 and _coerce(params[numeric[0]], spans[numbers[0]]) is not None:
        found.append((THRESHOLD + 0.05, numeric[0], numbers[0]))
    return found


def _counts_other(span: Span, params: Sequence[_Param]) -> bool:
    unit = span.unit
    if unit is None or not unit.isalpha():
        return False
    # "5 miles" with a unit parameter is a quantity and its unit, not a count of something else.
    return not any(words_of(unit) & (p.words | p.described) or p.words & _UNITISH for p in params)


def _overlaps(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


def _enum_value(param: _Param, span: Span) -> Any | None:
    if span.kind == "keyvalue":
        wanted = (span.value or "").lower()
        return next((v for v in param.enum if str(v).lower() == wanted), None)
    return span.enum_value if span.key == param.name else None


def _keyvalue(param: _Param, span: Span) -> Any | None:
    """A `key=value` written for this parameter, read as its type."""
    text = span.value or ""
    if param.type in ("integer", "number"):
        try:
            return _as_number(param, float(text))
        except ValueError:
            return None
    if param.type == "array":
        return _json_list(text)
    if param.type == "boolean":
        lowered = text.lower()
        return (
            True if lowered in ("true", "yes", "on", "1") else False if lowered in ("false", "no", "off", "0") else None
        )
    return text


def _json_list(text: str) -> list[Any] | None:
    """`[1, 2, 3]` written after an array parameter's name, read as JSON (None when it is not)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return cast(list[Any], value) if isinstance(value, list) else None
