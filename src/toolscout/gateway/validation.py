"""Checking tool arguments against the tool's input schema before they leave the gateway.

Most arguments pass the quick check first: a test compiled once from the input schema that
accepts only arguments the schema surely accepts. The rest go to jsonschema, bounded in steps,
time and violations kept, with every `pattern` matched under a time limit.
"""

from __future__ import annotations

import functools
import itertools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import anyio
import regex

from toolscout.errors import ArgumentValidationError, ValidationTooCostly
from toolscout.naming import tool_label

if TYPE_CHECKING:
    # jsonschema is imported with the first schema compiled: a large part of the gateway's own import
    # time, and the first search needs none of it.
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator


logger = logging.getLogger(__name__)

_MAX_CACHED = 4096
PATTERN_SECONDS = 0.5
"""The most time one `pattern` (or `patternProperties` key) of an input schema may take to match.
jsonschema matches with `re`, which backtracks without a bound while holding the GIL: an upstream's
`^(a+)+$` and a 26-character argument held the gateway for seconds. A value that takes longer is a
violation (the upstream's own check would hang on it as well)."""

MAX_STEPS = 50_000
"""The most keyword evaluations (`type`, `anyOf`, `$ref`, ... each time one judges a value) one
validation may take. A schema refused on arrival (`toolscout.schemas`) never gets
near it; what reaches it is a schema the static estimate misses or arguments so large that
checking them costs more than the call is worth. jsonschema keeps every violation it finds, so
the bound on work is a bound on memory too."""
MAX_SECONDS = 1.0
"""The most time one validation may take, whatever the machine's speed."""
MAX_VIOLATIONS = 100
"""The most violations one refusal lists (the first found; fixing them shows the next)."""
MAX_VIOLATION_CHARS = 240
"""The longest message of one violation: the value it quotes is cut in the middle."""


class ArgumentValidator:
    """Validates arguments against input schemas, compiling each schema once.

    A schema that is itself invalid cannot judge arguments; the upstream then
    gets the call unvalidated (and a warning is logged) rather than the tool
    becoming unusable because of its own metadata.

    jsonschema judges every keyword through a new validator object for every property, which for
    a typical tool costs more than the rest of the gateway's own work on a call. Most input
    schemas use only `type`, `properties`, `required`, `additionalProperties`, `items`, `enum` and
    `anyOf` (and annotations); for those, a quick check compiled once accepts the arguments that
    are surely valid, and only the others (invalid ones, to list every violation) go to jsonschema.
    """

    def __init__(self) -> None:
        # Keyed by id(); the schema object is kept alive in the value so the id cannot be reused.
        self._compiled: dict[int, tuple[dict[str, Any], Validator | None, Check | None]] = {}

    def _validator(self, schema: dict[str, Any], where: str) -> tuple[Validator | None, Check | None]:
        cached = self._compiled.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1], cached[2]
        from jsonschema import Draft3Validator, Draft202012Validator, SchemaError
        from jsonschema.validators import validator_for

        cls = _bounded(validator_for(schema, default=Draft202012Validator))
        validator: Validator | None
        check: Check | None = None
        try:
            cls.check_schema(schema)
            validator = cls(schema)
        except SchemaError as exc:
            logger.warning("%s has an invalid input schema (%s); its arguments are not validated", where, exc.message)
            validator = None
        except RecursionError:  # (refused on arrival by schema_vetting; this guards any other way in)
            logger.warning("%s has an input schema too deep to check; its arguments are not validated", where)
            validator = None
        else:
            if cls is not Draft3Validator:  # draft 3's `required` and `type` mean other things
                check = quick_check(schema, frozenset(cls.VALIDATORS))
        if len(self._compiled) >= _MAX_CACHED:
            self._compiled.clear()
        self._compiled[id(schema)] = (schema, validator, check)
        return validator, check

    def accepts(self, schema: dict[str, Any], arguments: Mapping[str, Any], *, server: str, tool: str) -> bool:
        """Whether the arguments are surely valid by the quick check (or the schema cannot judge
        them): what the event loop can afford, in time in proportion to the arguments' size, as
        decoding them took. False: `validate` decides, in a worker thread (jsonschema costs far
        more, and a schema's `pattern` up to `PATTERN_SECONDS` per value)."""
        validator, check = self._validator(schema, f"{server}.{tool}")
        if validator is None:
            return True
        return check is not None and check(arguments if isinstance(arguments, dict) else dict(arguments))

    async def check(
        self,
        schema: dict[str, Any],
        arguments: Mapping[str, Any],
        *,
        server: str,
        tool: str,
        budget: Budget | None = None,
    ) -> None:
        """Run `validate`, on the event loop when the quick check passes the arguments, else in a worker
        thread that stops with the call: a caller that leaves (cancelled) stops the validation too."""
        if self.accepts(schema, arguments, server=server, tool=tool):
            return
        budget = budget or Budget()
        run = functools.partial(self.validate, schema, arguments, server=server, tool=tool, budget=budget)
        try:
            await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        finally:
            budget.cancelled = True  # (after a cancellation, the thread stops at its next look)

    def validate(
        self,
        schema: dict[str, Any],
        arguments: Mapping[str, Any],
        *,
        server: str,
        tool: str,
        budget: Budget | None = None,
    ) -> None:
        """Raise `ArgumentValidationError` listing every violation with its JSON path (from any thread),
        or `ValidationTooCostly` when it would take more than `budget` (default: a new `Budget`)."""
        validator, check = self._validator(schema, f"{server}.{tool}")
        if validator is None:
            return
        instance = arguments if isinstance(arguments, dict) else dict(arguments)
        if check is not None and check(instance):
            return
        budget = budget or Budget()
        _running.budget = budget
        try:
            found = list(itertools.islice(validator.iter_errors(instance), MAX_VIOLATIONS))
        except _Stopped as stop:
            raise _too_costly(server, tool, str(stop)) from None
        except RecursionError:
            raise _too_costly(server, tool, "its schema and the arguments nest too deep to check") from None
        finally:
            _running.budget = None
        errors = sorted(found, key=lambda e: (list(map(str, e.absolute_path)), e.message))
        if not errors:
            return
        violations = [_violation(e) for e in errors]
        listing = "; ".join(f"{v['path']}: {v['message']}" for v in violations)
        raise ArgumentValidationError(
            f"Arguments for {tool_label(server, tool)} do not match its input schema: {listing}.",
            next_step="tool_details",
            server=server,
            tool=tool,
            violations=violations,
        )


class Budget:
    """The allowance of one validation: `MAX_STEPS` keyword evaluations and `MAX_SECONDS`, and whether
    its caller has left (`cancelled`, set from another thread). It is looked at on every evaluation."""

    __slots__ = ("cancelled", "deadline", "max_steps", "seconds", "steps", "stopped")

    def __init__(self, max_steps: int = MAX_STEPS, seconds: float = MAX_SECONDS) -> None:
        self.max_steps = max_steps
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.steps = 0
        self.cancelled = False
        self.stopped: str | None = None
        """Why the validation was stopped ("steps", "time", "cancelled"), once it was."""

    def step(self) -> None:
        """Count one keyword evaluation, or raise `_Stopped` saying which bound was reached."""
        self.steps += 1
        if self.steps > self.max_steps:
            self._stop("steps", f"it took more than {self.max_steps:,} steps (the validation budget)")
        if self.steps % 256 == 0:  # (a clock read costs more than a step)
            if self.cancelled:
                self._stop("cancelled", "the call was cancelled")
            if time.monotonic() > self.deadline:
                self._stop("time", f"it took more than {self.seconds:g} s (the validation budget)")

    def _stop(self, bound: str, why: str) -> None:
        self.stopped = bound
        raise _Stopped(why)


class _Stopped(Exception):
    """A validation ran out of its `Budget` (the message says which bound)."""


class _Running(threading.local):
    budget: Budget | None = None


_running = _Running()
"""The budget of the validation running on this thread: jsonschema hands its keyword functions no
context of ours, and a validation runs on one thread from start to end."""


def _too_costly(server: str, tool: str, why: str) -> ValidationTooCostly:
    return ValidationTooCostly(
        f"Arguments for {tool_label(server, tool)} could not be checked against its input schema: {why}. Nothing was "
        "sent. Send smaller or simpler arguments; if even small ones fail, the tool's input schema is too "
        "costly to validate and its server's owner must simplify it.",
        server=server,
        tool=tool,
    )


def _counted(keyword: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap `keyword` (a jsonschema keyword function) so that it counts against the running validation's budget."""

    def counted(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        budget = _running.budget
        if budget is not None:
            budget.step()
        return keyword(validator, value, instance, schema)

    return counted


def _violation(error: ValidationError) -> dict[str, str]:
    message = error.message
    if len(message) > MAX_VIOLATION_CHARS:
        # jsonschema writes the offending value into its message ("'...' is too long"): a 10 MB
        # argument would come back whole to the model. Its start and the verdict at the end stay.
        head, tail = MAX_VIOLATION_CHARS * 2 // 3, MAX_VIOLATION_CHARS // 3
        message = f"{message[:head]} … {message[-tail:]}"
    return {"path": error.json_path, "message": message}


_BOUNDED: dict[type[Any], type[Any]] = {}


def _bounded(cls: type[Validator]) -> type[Validator]:
    """Return `cls` with every keyword counted against the running validation's `Budget`, and `pattern` and
    `patternProperties` matched under `PATTERN_SECONDS` (regex module, the GIL let go while it
    matches) instead of `re` without a bound."""
    found = _BOUNDED.get(cls)
    if found is None:
        from jsonschema import validators

        keywords: dict[str, Callable[..., Any]] = {
            **cast(dict[str, Callable[..., Any]], cls.VALIDATORS),
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
        }
        extend = cast(Callable[..., type[Any]], validators.extend)  # pyright: ignore[reportUnknownMemberType]
        found = _BOUNDED[cls] = extend(cls, {name: _counted(keyword) for name, keyword in keywords.items()})
    return found


class _Slow(Exception):
    """A pattern took longer than `PATTERN_SECONDS` to match."""


def _search(pattern: str, text: str) -> bool:
    try:
        compiled = regex.compile(pattern, regex.VERSION0)
    except regex.error:  # a pattern `re` alone reads: matched as jsonschema would (rare)
        return re.search(pattern, text) is not None
    try:
        return compiled.search(text, timeout=PATTERN_SECONDS, concurrent=True) is not None
    except TimeoutError:
        raise _Slow from None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "string"):
        return
    shown = instance if len(instance) <= 80 else instance[:77] + "..."
    try:
        if not _search(pattern, instance):
            yield ValidationError(f"{shown!r} does not match {pattern!r}")
    except _Slow:
        yield ValidationError(
            f"{shown!r} takes more than {PATTERN_SECONDS:g} s to match {pattern!r} (the pattern backtracks "
            "on it); send a shorter or simpler value"
        )


def _pattern_properties(validator: Any, properties: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in cast(dict[str, Any], instance).items():
            try:
                matched = _search(pattern, key)
            except _Slow:
                slow = f"the key {key[:80]!r} takes more than {PATTERN_SECONDS:g} s to match {pattern!r}"
                yield ValidationError(slow)
                continue
            if matched:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


Check = Callable[[Any], bool]
"""A quick test of an instance against a schema: True only when the schema surely accepts it."""

_QUICK_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "format"}
)
"""The keywords `_quick_check` judges (`format` asserts nothing: the validators get no format checker).
A schema with any other keyword its draft asserts (`$ref`, `minimum`, `pattern`, ...) has no quick
check. Keywords the draft does not know (`title`, `description`, `x-...`) assert nothing, for
jsonschema either."""

_TYPE_CHECKS: dict[str, Check] = {
    # Subsets of what jsonschema accepts (it also takes 1.0 as an integer, Decimal as a number): a
    # value outside them goes to jsonschema, which decides.
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


_QUICK_DEPTH = 32
"""The deepest subschema the quick check compiles (deeper: jsonschema decides, under its budget)."""


def quick_check(schema: Any, known: frozenset[str], depth: int = 0) -> Check | None:
    """A check that accepts only instances `schema` accepts (draft 4 or later, already checked
    against its meta-schema); None when the schema uses a keyword it does not judge, or nests
    deeper than `_QUICK_DEPTH` (so neither compiling nor running it can exhaust the stack)."""
    if depth > _QUICK_DEPTH:
        return None
    if schema is True:
        return lambda _: True
    if not isinstance(schema, dict):
        return None  # `false`, which accepts nothing: jsonschema says why
    node = cast(dict[str, Any], schema)
    if any(k in known and k not in _QUICK_KEYWORDS for k in node):
        return None
    checks: list[Check] = []
    kind = node.get("type")
    if kind is not None:
        names = [kind] if isinstance(kind, str) else cast(list[str], kind)
        if any(n not in _TYPE_CHECKS for n in names):
            return None
        tests = [_TYPE_CHECKS[n] for n in names]
        checks.append(tests[0] if len(tests) == 1 else lambda v: any(t(v) for t in tests))
    if "enum" in node:
        # Only strings are judged here: jsonschema compares a string with strings alone, by ==.
        words = frozenset(e for e in cast(list[Any], node["enum"]) if isinstance(e, str))
        checks.append(lambda v: isinstance(v, str) and v in words)
    if "anyOf" in node:
        options = [quick_check(option, known, depth + 1) for option in cast(list[Any], node["anyOf"])]
        if any(option is None for option in options):
            return None
        branches = cast(list[Check], options)
        checks.append(lambda v: any(branch(v) for branch in branches))
    if "items" in node:
        if isinstance(node["items"], list):  # tuple validation (before 2020-12)
            return None
        item = quick_check(node["items"], known, depth + 1)
        if item is None:
            return None
        checks.append(lambda v: not isinstance(v, list) or all(item(i) for i in cast(list[Any], v)))
    object_check = _object_check(node, known, depth)
    if object_check is None:
        return None
    if object_check is not _ANY:
        checks.append(object_check)
    if not checks:
        return _ANY
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


def _ANY(_: Any) -> bool:
    return True


def _object_check(node: dict[str, Any], known: frozenset[str], depth: int) -> Check | None:
    """Compile `properties`, `required` and `additionalProperties` together (they judge objects only)."""
    properties: dict[str, Check] = {}
    for name, sub in cast(dict[str, Any], node.get("properties", {})).items():
        judged = quick_check(sub, known, depth + 1)
        if judged is None:
            return None
        properties[name] = judged
    required = cast(list[str], node.get("required", []))
    extra: Check | None = _ANY
    if "additionalProperties" in node:
        extra = quick_check(node["additionalProperties"], known, depth + 1)  # None for `false`: no other key
    if not properties and not required and extra is _ANY:
        return _ANY

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        instance = cast(dict[str, Any], value)
        for name in required:
            if name not in instance:
                return False
        for name, item in instance.items():
            judge = properties.get(name, extra)
            if judge is None or not judge(item):
                return False
        return True

    return check
