"""Demo MCP server "text": counting, case styles, slugs, regex matches and diffs.

Run it with ``python -m toolscout.demo.text [--transport stdio|http|sse]``.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from typing import Annotated, Any, Literal

import regex
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from toolscout.demo._serve import serve, tool_doc

CaseStyle = Literal["upper", "lower", "title", "snake", "kebab", "camel", "pascal"]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

# A generous cap: these tools are pure functions, but a model can paste a whole book.
MAX_TEXT = 1_000_000
InputText = Annotated[str, Field(max_length=MAX_TEXT, description="The text to work on.")]
MATCH_SECONDS = 1.0
"""The most time find_matches spends matching, all matches together. Python's `re` backtracks
without a bound: `(a+)+$` on a few dozen "a"s runs for seconds holding the GIL, and the whole server
freezes. The `regex` module takes the same syntax, stops at a timeout (checked as it matches, not
between matches) and lets other threads run while it matches."""

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_SENTENCE_END = re.compile(r"[.!?…]+(?=[\s\"'”’)\]]|$)")
# Split "XMLHttpRequest2Go" as XML / Http / Request2 / Go: a case change marks a word boundary.
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


class TextStats(BaseModel):
    """Counts returned by word_count."""

    words: int = Field(description='Runs of letters or digits; contractions like "don\'t" count once.')
    characters: int = Field(description="All characters, including spaces and line breaks.")
    characters_excluding_spaces: int = Field(description="Characters that are not whitespace.")
    lines: int = Field(description="Number of lines; 0 for empty text.")
    sentences: int = Field(description="Runs ending in . ! ? or …, plus a trailing unterminated sentence.")
    paragraphs: int = Field(description="Blocks of text separated by blank lines.")


class RegexMatch(BaseModel):
    """One match of the pattern."""

    match: str = Field(description="The matched text.")
    start: int = Field(description="Offset of the first matched character (0-based, in characters).")
    end: int = Field(description="Offset just past the last matched character.")
    groups: list[str | None] = Field(description="Numbered capture groups; null for a group that did not take part.")
    named_groups: dict[str, str | None] = Field(description="Named capture groups, (?P<name>...).")


class MatchList(BaseModel):
    """The result of find_matches."""

    count: int = Field(description="Number of matches returned.")
    truncated: bool = Field(description="True when there were more matches than max_matches.")
    matches: list[RegexMatch] = Field(description="Matches in order of position.")


class TextDiff(BaseModel):
    """The result of diff_text."""

    identical: bool = Field(description="True when before and after are exactly the same.")
    lines_added: int = Field(description="Lines only in after.")
    lines_removed: int = Field(description="Lines only in before.")
    diff: str = Field(description="Unified diff from before to after; empty when identical.")


def _words_for_identifier(text: str) -> list[str]:
    return [w for chunk in re.split(r"[\W_]+", text) for w in _CAMEL_BOUNDARY.split(chunk) if w]


def _change_case(text: str, style: CaseStyle) -> str:
    match style:
        case "upper":
            return text.upper()
        case "lower":
            return text.lower()
        case "title":
            # str.title() would turn "don't" into "Don'T"; capitalise whole words instead.
            return _WORD.sub(lambda m: m[0][:1].upper() + m[0][1:].lower(), text)
        case "snake" | "kebab":
            return ("_" if style == "snake" else "-").join(w.lower() for w in _words_for_identifier(text))
        case "camel" | "pascal":
            words = [w[:1].upper() + w[1:].lower() for w in _words_for_identifier(text)]
            if style == "camel" and words:
                words[0] = words[0].lower()
            return "".join(words)


def build_server() -> MCPServer[Any]:
    """Create the text server."""
    mcp: MCPServer[Any] = MCPServer(
        "text",
        instructions="Deterministic text utilities: counting words, changing case, making URL slugs, "
        "finding regex matches with their positions, and diffing two texts.",
        version="0.1.0",
    )

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def word_count(text: InputText) -> TextStats:
        """Count the words, characters, lines, sentences and paragraphs in a text.

        Words are runs of letters or digits (so "state-of-the-art" is four words and
        "don't" one). Sentences are counted by their terminal punctuation, so abbreviations
        such as "e.g." can inflate the count.
        """
        stripped = text.strip()
        ends = list(_SENTENCE_END.finditer(stripped))
        # Words after the last terminator are a sentence that is missing its full stop.
        tail = stripped[ends[-1].end() :] if ends else stripped
        sentences = len(ends) + (1 if _WORD.search(tail) else 0)
        return TextStats(
            words=len(_WORD.findall(text)),
            characters=len(text),
            characters_excluding_spaces=sum(not c.isspace() for c in text),
            lines=len(text.splitlines()),
            sentences=sentences,
            paragraphs=len([p for p in re.split(r"\n\s*\n", stripped) if p.strip()]),
        )

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def change_case(
        text: InputText,
        style: Annotated[
            CaseStyle,
            Field(
                description='Target style: "upper", "lower", "title" (Each Word Capitalised), "snake" '
                '(snake_case), "kebab" (kebab-case), "camel" (camelCase) or "pascal" (PascalCase).'
            ),
        ],
    ) -> str:
        """Rewrite text in another letter case or identifier style and return the new text.

        upper, lower and title keep spacing and punctuation. snake, kebab, camel and pascal
        build an identifier: they split on spaces, punctuation and existing case changes
        ("XMLHttpRequest" is XML, Http, Request) and drop everything else.
        """
        return _change_case(text, style)

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def slugify(
        text: InputText,
        max_length: Annotated[
            int, Field(ge=1, le=500, description="Longest slug to return; cut at a hyphen where possible.")
        ] = 80,
    ) -> str:
        """Turn text into a lower-case ASCII URL slug such as "hello-world".

        Accents are stripped ("Crème brûlée" becomes "creme-brulee"); other characters that have
        no ASCII form are dropped, and runs of anything but letters and digits become one hyphen.
        """
        ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
        slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
        if not slug:
            raise ToolError("The text has no letters or digits that can be written in ASCII, so no slug is possible.")
        if len(slug) > max_length:
            cut = slug[:max_length]
            # Prefer ending on a whole word; a single over-long word gets a hard cut.
            if slug[max_length] != "-" and "-" in cut:
                cut = cut.rsplit("-", 1)[0]
            slug = cut.strip("-")
        return slug

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def find_matches(
        text: InputText,
        pattern: Annotated[
            str,
            Field(
                min_length=1, max_length=1000, description=r'Python regular expression, e.g. "\b\d{4}-\d{2}-\d{2}\b".'
            ),
        ],
        ignore_case: Annotated[bool, Field(description="Match letters regardless of case.")] = False,
        max_matches: Annotated[int, Field(ge=1, le=1000, description="Stop after this many matches.")] = 100,
    ) -> MatchList:
        """Find every match of a regular expression in a text, with positions and capture groups.

        Uses Python's re syntax. Offsets count characters from 0, and end is exclusive, so
        text[start:end] is the match. ^ and $ match at line boundaries (multiline mode).
        """
        flags = regex.MULTILINE | regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0)
        try:
            compiled = regex.compile(pattern, flags)
        except regex.error as exc:
            raise ToolError(f"Invalid regular expression: {exc}.") from exc
        matches: list[RegexMatch] = []
        truncated = False
        try:
            for m in compiled.finditer(text, timeout=MATCH_SECONDS, concurrent=True):
                if len(matches) == max_matches:
                    truncated = True
                    break
                matches.append(
                    RegexMatch(
                        match=m[0], start=m.start(), end=m.end(), groups=list(m.groups()), named_groups=m.groupdict()
                    )
                )
        except TimeoutError:
            raise ToolError(
                f"The pattern took more than {MATCH_SECONDS:g} s to match, so matching was stopped: it backtracks "
                "too much on this text (nested repetition such as (a+)+ or (a|a)*). Rewrite it without a "
                "repetition inside a repetition, e.g. a+ instead of (a+)+, or search a smaller part of the text."
            ) from None
        return MatchList(count=len(matches), truncated=truncated, matches=matches)

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def diff_text(
        before: Annotated[str, Field(max_length=MAX_TEXT, description="The original text.")],
        after: Annotated[str, Field(max_length=MAX_TEXT, description="The changed text.")],
        context_lines: Annotated[
            int, Field(ge=0, le=100, description="Unchanged lines to show around each change.")
        ] = 3,
    ) -> TextDiff:
        """Compare two texts line by line and return a unified diff, as produced by `diff -u`.

        Lines starting with "-" are only in before, "+" only in after. Also reports how many
        lines were added and removed.
        """
        diff = list(
            difflib.unified_diff(
                before.splitlines(), after.splitlines(), "before", "after", n=context_lines, lineterm=""
            )
        )
        # Skip the two file headers; every other line is a hunk header or starts with " ", "+" or "-".
        body = [line for line in diff[2:] if not line.startswith("@@")]
        return TextDiff(
            identical=before == after,
            lines_added=sum(line.startswith("+") for line in body),
            lines_removed=sum(line.startswith("-") for line in body),
            diff="\n".join(diff),
        )

    return mcp


def main(argv: list[str] | None = None) -> None:
    """Entry point for ``python -m toolscout.demo.text``."""
    serve(build_server(), argv)


if __name__ == "__main__":
    main()
