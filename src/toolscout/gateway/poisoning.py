"""Tool definitions that carry instructions to the model (tool poisoning), found when they arrive.

A tool's description, and every description, title, default and enum inside its schemas, is read
by the model as if it came from the user. A hostile server hides orders there: an `<IMPORTANT>`
block asking to read `~/.ssh/id_rsa` and pass it in a side parameter, "do not mention this to the
user", "when the send_email tool is used, always set the recipient to ...", text in invisible
Unicode. `instructions_in` names what it finds, in words a person can judge; it does not decide
anything itself (tool pinning shows the reasons and quarantines on its own rules).

The patterns are meant to stay quiet on ordinary descriptions: a file tool that reads files, an
email tool that sends, "Important:" in a note. They look for the model being addressed (an order,
a secret kept from the user, another tool's use changed) rather than for sensitive words alone.
The work is bounded for a hostile definition: the schema walk is iterative and capped, and so is
the text examined; a definition past a cap is itself reported, since what lies beyond was not read.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any, cast

import mcp_types

MAX_TEXT = 256 * 1024
"""The most characters of one tool's texts examined; real definitions stay far below it."""
MAX_PARTS = 20_000
"""The most schema parts (objects, arrays and values) visited; real schemas stay far below it."""
MAX_REASONS = 8

_TEXT_KEYS = ("description", "title", "default", "const", "enum", "examples")

# Characters that show nothing. Some have honest uses (ZWJ in emoji and Indic scripts, ZWNJ in
# Persian, LRM/RLM in mixed-direction text, a variation selector after an emoji or ideograph, a
# leading byte-order mark); those are reported only where they cannot be doing that job.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_ZERO_WIDTH = re.compile("[\u034f\u115f\u1160\u180e\u200b\u2060-\u2064\u3164\ufeff\uffa0]")
_JOINERS = re.compile("[\u200c\u200d]")
_INVISIBLE_RUN = re.compile("[\u00ad\u061c\u200c-\u200f]{2,}|[\ufe00-\ufe0f]{2,}|[\U000e0100-\U000e01ef]{2,}")
_TAGS = re.compile("[\U000e0000-\U000e007f]")
_FLAG_SEQUENCE = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,7}\U000e007f")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f]")
_ANSI = re.compile("\x1b")
_ASCII_CONTROL = re.compile("\x1b|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")
# Both start only where a run starts, so each run is scanned once (no quadratic retry inside it).
_BLOB = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{120,}")
_BLANK = re.compile(r"(?<![ \t\r\n])[ \t\r\n]{20,}")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_LINE_BREAKS = re.compile(r" ?\n[ \n]*")
# Letters of other scripts that look like Latin ones: "ignоre" with a Cyrillic o reads the same.
_LOOKALIKES = str.maketrans("аеорсхуіјѕԁɡοαν‘’“”", "aeopcxyijsdgoav''\"\"")

# Every pattern reads normalized text (lower case, no invisible characters, spaces collapsed) and
# bounds each gap (`[^\n]{0,N}`), so none can backtrack beyond a line.
_TOOL = r"[`'\"]?[a-z][\w.-]{0,64}[`'\"]?"
_SENSITIVE = re.compile(
    r"\.ssh/(?!config\b|known_hosts\b)[\w./-]{0,64}|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|\.cursor/mcp\.json|\bmcp\.json\b"
    r"|claude_desktop_config\.json|/etc/(?:passwd|shadow|sudoers)|(?<![\w.-])\.env\b|\.npmrc\b|\.pypirc\b"
    r"|\.netrc\b|\.git-credentials|\.docker/config\.json|\.kube/config|\.gnupg\b|wallet\.dat|\.bash_history"
    r"|\.zsh_history|\.config/gcloud|\.azure/"
)
_READ_VERB = re.compile(
    r"(?:^|[^\w-])(?:read|cat|open|load|include|attach|upload|send|pass|copy|paste|provide|dump|extract|curl|wget|scp)\s"
    r"[^\n]{0,80}$"
)
_PASS_CONTENT = re.compile(r"\b(?:pass|send|include)\s+(?:its|the)\s+contents?\b")
_HIDDEN_BLOCK = re.compile(
    r"<\s*(important|system|secret|hidden|instructions?|critical|override|sys|admin)\s*(?:[^<>\n]{0,40})>"
)


def _words(listed: str) -> tuple[str, ...]:
    return tuple(listed.split("|"))


# Each pattern comes with words one of which it cannot match without: a quick `in` skips most texts.
_PATTERNS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    (
        "asks the model to ignore previous instructions",
        _words("ignore|disregard|forget|override|bypass|instruction|you are now|act as|from now on|guidance|rules")
        + _words("prompt|follow only"),
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+(?:of\s+)?)?(?:the\s+|your\s+|any\s+)?"
            r"(?:previous|prior|preceding|earlier|above|former|original|system|safety|security|all|other)\s+"
            r"(?:instructions?|prompts?|rules|directions|guidelines|guardrails|constraints|policies)\b"
            r"|\bforget\s+(?:everything|all)\s+(?:you|that|above)|\bnew\s+instructions?\s*:|\byou\s+are\s+now\s+"
            r"(?:a|an|the|in|dan|free|unrestricted|jailbroken)\b|\bact\s+as\s+(?:an?\s+)?(?:unrestricted|jailbroken)\b"
            r"|\bfrom\s+now\s+on,?\s+you\s+(?:are|must|will|should)\b"
            r"|\b(?:previous|prior|earlier|other|system)\s+(?:instructions?|guidance|rules|prompts?)\s+(?:no\s+longer\s+appl"
            r"|(?:are|is)\s+(?:void|obsolete|cancell?ed|revoked))|\bfollow\s+only\s+(?:this|these|the\s+following|my)\b"
        ),
    ),
    (
        "tells the model not to tell the user",
        _words("not|never|without|n't|hide|conceal|keep|implementation detail"),
        re.compile(
            r"\b(?:do\s+not|don'?t|never|must\s+not|should\s+not|shouldn'?t|without)\s+(?:ever\s+)?"
            r"(?:tell|mention|inform|reveal|notify|disclose|alert|let)(?:ing)?\b[^\n]{0,60}?\b(?:the\s+user|users?'|"
            r"the\s+human)\b|\b(?:do\s+not|don'?t|never)\s+mention\s+(?:this|that|it|these|the\s+fact)\b"
            r"|\b(?:hide|conceal|keep)\s+(?:this|it|these|them)\s+(?:(?:secret|hidden)\s+)?from\s+the\s+user\b"
            r"|\bthe\s+user\s+(?:must|should|need)\s+not\s+(?:know|see|notice|be\s+told)\b"
            r"|\b(?:a\s+)?mere\s+implementation\s+detail\b"
            r"|\b(?:keep|treat)\s+(?:this|it|these)\b[^\n]{0,30}?\b(?:confidential|secret|hidden)\b"
            r"|\bavoid\s+(?:mentioning|telling|revealing|bringing\s+(?:it|this|them)\s+up)\b[^\n]{0,40}?\bthe\s+user\b"
        ),
    ),
    (
        "asks to send data to a URL",
        _words("http|www.|@|webhook|server|url|endpoint|address|email"),
        re.compile(
            # "Send data to https://..." describes an HTTP tool; "send the conversation", "upload all
            # files" to an address is what a tool has no business asking of the model.
            r"\b(?:send|post|upload|forward|transmit|exfiltrate|submit|report|beacon|leak|mirror|relay|email)\s+"
            r"(?:(?:the|its|their|this|that|your|any)\s+)?(?:(?:full|entire|complete|whole)\s+)?(?:conversations?|chats?"
            r"|chat\s+history|credentials|secrets?|api\s+keys|keys|tokens|passwords?|cookies|system\s+prompt|everything"
            r"|environment\s+variables|(?:all|every|user'?s?|collected|full|entire|complete|whole)\s+(?:(?:the|of|its|"
            r"their|your)\s+){0,2}(?:\w+\s+)?(?:data|contents?|files?|information|info|results?|output|logs?|documents?"
            r"|messages|history|context|emails?|credentials|secrets|keys|tokens|passwords))\b[^\n]{0,80}?\b(?:to|into|at)\s+(?:https?://|www\.|[\w.+-]{1,64}@"
            r"[\w-]{1,64}\.|\S{0,64}webhook|(?:our|my|this|the\s+following|an?\s+external|a\s+remote)\s+(?:server|url"
            r"|endpoint|address|webhook|email))"
        ),
    ),
    (
        "asks to put the conversation or secrets into a parameter",
        _words("conversation|chat|message|history|prompt|key|credential|secret|password|token|environment|content"),
        re.compile(
            r"\b(?:include|pass|put|provide|add|insert|append|attach|copy|paste|embed|fill|place|dump)\b[^\n]{0,60}?"
            r"(?:\b(?:entire|full|complete|whole|previous|prior|all)\s+(?:conversation|chat|message|history|messages)"
            r"|\bconversation\s+(?:history|context|so\s+far)|\bchat\s+history|\b(?:your|the\s+current|this\s+conversation'?s?)\s+system\s+prompt|\b(?:all|any|every)\s+"
            r"(?:the\s+)?(?:api\s+keys|credentials|secrets|passwords|tokens|private\s+keys|environment\s+variables)"
            r"|\buser'?s\s+(?:credentials|secrets|passwords?|private\s+keys?|api\s+keys?|session\s+tokens?|cookies))\b"
            r"|\bpass\s+(?:its|their|the\s+file'?s?)\s+contents?\s+(?:as|in|into)\b"
        ),
    ),
    (
        "tries to change how another tool is used (shadowing)",
        _words("tool|@|http|0x"),
        re.compile(
            rf"\bwhen(?:ever)?\s+(?:the\s+|any\s+)?(?!this\b|that\b|a\b|the\b){_TOOL}\s+tool\b[^\n]{{0,40}}?\b(?:is|are|gets)"
            r"\s+(?:used|called|invoked|run|executed)\b[^\n]{0,60}?\b(?:always|must|should|make\s+sure|set|change|replace|send|add"
            rf"|include|use)\b|\bside\s+effects?\s+on\s+(?:the\s+)?(?:also\s+present\s+)?{_TOOL}\s+tool"
            rf"|\b(?!this\b|that\b|a\b|the\b|each\b|every\b|any\b){_TOOL}\s+tool\s+(?:must|shall)\s+(?:always\s+)?"
            r"(?:send|set|use|include|forward|redirect|add|bcc|cc)\b"
            r"|\b(?:always|must|set|change|replace|redirect)\s+(?:set|change|replace|redirect|send|forward|add|bcc|cc|the)\b[^\n]{0,60}?"
            r"(?:recipients?|receivers?|destination|to\s+address|bcc|account\s+number|iban|wallet|beneficiary)\b"
            r"[^\n]{0,40}?(?:\bto\b|=|:)\s?(?:\S{0,64}(?:@|https?://|0x[0-9a-f]{6})|\+?\d[\d -]{7,})"
            r"|\b(?:send|forward|redirect|bcc|cc)\s+(?:all|every|any)\s+(?:emails?|messages?|mails?|payments?|"
            r"transfers?|funds|money)\s+(?:to|through)\s+\S{0,64}(?:@|https?://|0x[0-9a-f]{6})"
        ),
    ),
    (
        "asks the model to call a tool first",
        _words("before|this tool|first tool"),
        re.compile(
            r"\bbefore\s+(?:using|calling|invoking|running|executing|answering|responding\s+to|any)\s+(?:to\s+)?"
            r"(?:any|every|all|each|other|another)\b[^\n]{0,30}?\b(?:tools?|requests?|quer(?:y|ies)|questions?|tasks?|"
            r"actions?|calls?)\b[^\n]{0,80}?\b(?:call|invoke|run|use|execute)\b"
            r"|\b(?:always|must|should)\s+(?:first\s+)?(?:call|invoke|run|use|execute)\s+this\s+tool\s+(?:first|before)"
            r"\b[^\n]{0,40}?\b(?:any|every|all|each|other)\b"
            r"|\b(?:for|on|with)\s+(?:any|every|each|all)\s+(?:user\s+)?(?:requests?|quer(?:y|ies)|questions?|tasks?|"
            r"messages?|prompts?)\b[^\n]{0,60}?\b(?:call|invoke|run|use)\s+this\s+tool\b"
            r"|\bthe\s+(?:very\s+)?first\s+tool\s+(?:you\s+)?(?:call|use|run|invoke)|\bbefore\s+(?:anything|everything)\s+else\b"
            r"|\bbefore\s+(?:using|calling)\s+this\s+tool\b[^\n]{0,60}?\b(?:call|invoke|run)\s+[`'\"]?[\w.-]{0,64}"
            r"(?:secret|credential|password|token|admin|private|env)"
        ),
    ),
    (
        "carries a chat role or system-prompt marker",
        _words("<||inst]|<<|system|assistant|human"),
        re.compile(
            r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|>|\[/?inst\]|<</?sys>>"
            r"|(?:^|\n)\s*#{1,4}\s*(?:system|assistant)\s*(?:prompt|message|instructions?)?\s*:?\s*(?:\n|$)"
            r"|\b(?:system|assistant)\s*:\s*(?:you\s+(?:are|must)|ignore|always|never|from\s+now)\b"
            r"|(?:^|\n)\s*(?:human|assistant)\s*:\s"
        ),
    ),
    (
        "asks to send data to a URL (an image link that carries it)",
        _words("!["),
        re.compile(r"!\[[^\]\n]{0,100}\]\(\s?https?://[^)\s]{0,300}?[{<$]"),
    ),
    ("hidden text in an HTML comment", ("<!--", "[//]"), re.compile(r"<!--[^\n]{0,400}?[a-z]{3}|\[//\]:\s*#")),
)


def instructions_in(tool: mcp_types.Tool) -> tuple[str, ...]:
    """Why the tool's definition looks like it gives orders to the model; empty when it does not.

    Each reason is short and names where it was found, e.g. "asks to read a file (~/.ssh/id_rsa) in
    the description". The title, description, annotations' title and every description, title,
    default, const, enum and examples text of the input and output schemas are read.
    """
    reasons: list[str] = []
    texts: list[tuple[Where, str]] = []
    budget = MAX_TEXT
    for where, text in _texts(tool):
        if where is None:
            _add(reasons, text)
            continue
        if len(text) > budget:
            _add(reasons, f"too large to examine whole (over {MAX_TEXT:,} characters of text)")
            if budget == 0:
                break
            text = text[:budget]
        budget -= len(text)
        texts.append((where, text))
    # Nearly every tool is clean: one pass over all its texts at once says so; only a tool with a
    # finding is read again text by text, to say where each one is.
    if next(_findings("\n".join(text for _, text in texts)), None) is not None:
        for where, text in texts:
            for reason in _findings(text):
                _add(reasons, f"{reason} in {_place(where)}")
            if len(reasons) >= MAX_REASONS:
                break
    return tuple(reasons[:MAX_REASONS])


def _add(reasons: list[str], reason: str) -> None:
    if reason not in reasons:
        reasons.append(reason)


def _texts(tool: mcp_types.Tool) -> Iterator[tuple[Where | None, str]]:
    """Yield `(where, text)` for every text the model may read; `(None, reason)` when a schema is too large."""
    if tool.title:
        yield ("the title", None), tool.title
    if tool.annotations is not None and tool.annotations.title:
        yield ("the annotations' title", None), tool.annotations.title
    if tool.description:
        yield ("the description", None), tool.description
    schemas: list[tuple[str, Any]] = [("the input schema", tool.input_schema)]
    if tool.output_schema is not None:
        schemas.append(("the output schema", tool.output_schema))
    for name, schema in schemas:
        yield from _schema_texts(name, schema)


Path = tuple["Path | None", str] | None
"""Where a schema part sits: its parent's path and its own key, linked rather than copied at each level."""
Where = tuple[str, Path]
"""A text's place: the part of the tool ("the description", "the input schema") and its path in it."""


def _schema_texts(name: str, schema: Any) -> Iterator[tuple[Where | None, str]]:
    """The schema's texts, walked with a stack (no recursion, however deep) over at most MAX_PARTS parts."""
    stack: list[tuple[Any, Path]] = [(schema, None)]
    parts = 0
    while stack:
        node, path = stack.pop()
        is_object = isinstance(node, dict)
        items: Iterable[tuple[object, object]] = (
            cast(dict[object, object], node).items() if is_object else enumerate(cast(list[object], node))
        )
        children: list[tuple[object, Path]] = []
        for key, value in items:
            parts += 1
            if parts > MAX_PARTS:
                yield None, f"{name} too large to examine whole (over {MAX_PARTS:,} parts)"
                return
            at: Path = (path, f"[{key}]" if isinstance(key, int) else str(key))
            if is_object and key in _TEXT_KEYS and isinstance(value, str | list):
                text = value if isinstance(value, str) else _joined(cast(list[object], value))
                if text:
                    yield (name, at), text
            elif isinstance(value, dict | list):
                children.append((cast(object, value), at))
        stack.extend(reversed(children))  # the first property's texts are read first


def _joined(values: list[object]) -> str:
    """The strings of an enum or examples list, one a line, stopping once MAX_TEXT characters are had."""
    texts: list[str] = []
    size = 0
    for value in itertools.islice(values, MAX_PARTS):
        if isinstance(value, str):
            texts.append(value)
            size += len(value) + 1
            if size > MAX_TEXT:
                break
    return "\n".join(texts)


def _place(where: Where) -> str:
    """ "the description", or "the input schema at properties.notes.description"."""
    name, path = where
    return name if path is None else f"{name} at {_rendered(path)}"


def _rendered(path: Path) -> str:
    """Name where a text sits (`properties.notes.description`), its last 60 characters when longer
    (a deep path's end says most)."""
    names: list[str] = []
    size = 0
    while path is not None and size <= 60:
        path, key = path
        names.append(key)
        size += len(key) + 1
    text = ".".join(reversed(names)).replace(".[", "[")
    return text if path is None and len(text) <= 60 else "..." + text[-57:]


def _findings(text: str) -> Iterator[str]:
    """The reasons one text gives, without where it was found."""
    yield from _hidden_characters(text)
    blob = next((b.group() for b in _BLOB.finditer(text) if not _looks_like_words(b.group())), None)
    if blob is not None:
        yield f"a long encoded blob ({len(blob)} characters, base64-like)"
    if any(_hides_what_follows(run.group(), run.end(), text) for run in _BLANK.finditer(text)):
        yield "text pushed out of view after a long run of blank space"
    plain = _normalized(text)
    block = _HIDDEN_BLOCK.search(plain)
    if block is not None:
        yield f"hidden text in an <{block.group(1).upper()}> block"
    for path in _SENSITIVE.finditer(plain):
        line_start = plain.rfind("\n", 0, path.start()) + 1
        before = plain[max(line_start, path.start() - 90) : path.start()]
        after = plain[path.end() : path.end() + 80]
        if _READ_VERB.search(before) or _PASS_CONTENT.search(after):
            home = "~/" if before.endswith("~/") else ""
            yield f"asks to read a file ({home}{path.group()[:40]})"
            break
    for reason, gate, pattern in _PATTERNS:
        if any(word in plain for word in gate) and pattern.search(plain):
            yield reason


def _hidden_characters(text: str) -> Iterator[str]:
    """Invisible, control and escape characters, each kind named once with its first code point."""
    if text.isascii():
        control = _ASCII_CONTROL.search(text)
        if control is not None:
            yield "an ANSI escape sequence" if control.group() == "\x1b" else _control(control.group())
        return
    # One zero-width space carries no message (a stray one from a copied web page is common); two
    # or more can, and one bidirectional control is enough to show text in another order.
    zero_width = list(itertools.islice(_ZERO_WIDTH.finditer(text), 2))
    found = _BIDI.search(text) or (zero_width[0] if len(zero_width) == 2 else None) or _INVISIBLE_RUN.search(text)
    if found is None:
        for joiner in _JOINERS.finditer(text):
            around = text[max(0, joiner.start() - 1) : joiner.start()] + text[joiner.end() : joiner.end() + 1]
            if any(c.isascii() and c.isalnum() for c in around):
                found = joiner
                break
    if found is not None:
        yield f"invisible Unicode (U+{ord(found.group()[0]):04X})"
    tag = _TAGS.search(_FLAG_SEQUENCE.sub("", text))
    if tag is not None:
        yield f"invisible Unicode tag characters (U+{ord(tag.group()):04X})"
    if _ANSI.search(text):
        yield "an ANSI escape sequence"
    control = _CONTROL.search(text)
    if control is not None:
        yield _control(control.group())


def _control(character: str) -> str:
    return f"a control character (U+{ord(character):04X})"


def _hides_what_follows(run: str, end: int, text: str) -> bool:
    """Whether a run of blank space is long enough to push what follows it out of a reader's view."""
    return end < len(text) and (run.count("\n") >= 20 or len(run) >= 300)


def _looks_like_words(candidate: str) -> bool:
    """Whether a long run of base64 letters is rather an identifier or path: one case only, or no digits."""
    has_upper = any(c.isupper() for c in candidate)
    has_lower = any(c.islower() for c in candidate)
    return not (has_upper and has_lower and any(c.isdigit() for c in candidate))


def _normalized(text: str) -> str:
    """Lower case, invisible characters out, compatibility forms and look-alike letters folded, spaces collapsed."""
    if text.isascii():
        folded = text.lower()
    else:
        visible = "".join(c for c in text if unicodedata.category(c) != "Cf" and not 0xFE00 <= ord(c) <= 0xFE0F)
        folded = unicodedata.normalize("NFKC", visible).lower().translate(_LOOKALIKES)
    # Runs of blank collapse to one space or one line break, so no pattern's `\s` meets a long run.
    return _LINE_BREAKS.sub("\n", _SPACES.sub(" ", folded))
