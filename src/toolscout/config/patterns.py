"""Name patterns, as tool rules and the audit log's redaction keys write them.

Patterns follow anygpt's glob-matcher, which the discovery-engine design reuses:

* a glob (`*`, `?`, `[abc]`, `{a,b}`) matches the whole tool name, ignoring case;
* `/regex/flags` searches the name; without flags it ignores case, as there;
* `!pattern` excludes: a name matching any negation never matches the rule,
  and a rule made only of negations matches every other name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Matcher = Callable[[str], bool]
"""A compiled pattern: whether it matches a name."""

_REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "u": 0, "g": 0, "y": 0, "d": 0, "v": 0}


def _glob_to_regex(glob: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        elif c == "{" and (end := glob.find("}", i + 1)) != -1:
            out.append("(?:" + "|".join(re.escape(alt) for alt in glob[i + 1 : end].split(",")) + ")")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.IGNORECASE)


def _parse_regex(pattern: str) -> re.Pattern[str]:
    last = pattern.rfind("/")
    body, flag_text = pattern[1:last], pattern[last + 1 :]
    unknown = sorted(set(flag_text) - set(_REGEX_FLAGS))
    if unknown:
        raise ValueError(f"unknown regex flag(s) {''.join(unknown)!r} in {pattern!r}; use i, m or s")
    flags = re.IGNORECASE if not flag_text else 0
    for f in flag_text:
        flags |= _REGEX_FLAGS[f]
    # JavaScript spells named groups (?<name>...); Python wants (?P<name>...).
    body = re.sub(r"\(\?<(?=[A-Za-z_])", "(?P<", body)
    try:
        return re.compile(body, flags)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None


def is_regex(pattern: str) -> bool:
    return pattern.startswith("/") and pattern.rfind("/") > 0


def compile_pattern(pattern: str) -> Matcher:
    """Compile one positive pattern (no leading `!`) into a predicate over names.

    Raises:
        ValueError: the pattern is empty or an invalid regular expression.
    """
    body = pattern[1:] if pattern.startswith("!") else pattern
    if not body:
        raise ValueError("empty pattern")
    if is_regex(body):
        compiled = _parse_regex(body)
        return lambda name: compiled.search(name) is not None
    glob = _glob_to_regex(body)
    return lambda name: glob.fullmatch(name) is not None


@dataclass(frozen=True)
class PatternSet:
    """A rule's patterns: any positive one matches, any negation vetoes."""

    positive: tuple[Matcher, ...]
    negative: tuple[Matcher, ...]

    @classmethod
    def compile(cls, patterns: Sequence[str]) -> PatternSet:
        positive = tuple(compile_pattern(p) for p in patterns if not p.startswith("!"))
        negative = tuple(compile_pattern(p[1:]) for p in patterns if p.startswith("!"))
        return cls(positive, negative)

    def matches(self, name: str) -> bool:
        if any(m(name) for m in self.negative):
            return False
        return not self.positive or any(m(name) for m in self.positive)
