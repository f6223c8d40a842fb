"""JSON out of a model's reply: reasoning blocks, extraction and the named repairs (pure ``str`` functions).

The text side of :mod:`radaudit.models.llm_json` (which validates the result against a schema and retries):
every function here works on text alone (an unsafe truncation raises :class:`JsonRepairError`) and
imports nothing heavy.

Reasoning traces
    A reply that opens with a reasoning block (Qwen3's or DeepSeek-R1's ``<think>...</think>``,
    or text up to a lone ``</think>`` when the chat template opened the tag) is read from after the
    block (:func:`strip_thinking`), so braces in the reasoning never pass for the answer; a reply
    cut off inside the block has no answer. This is not a repair (the answer itself was not
    changed) and is done with ``repair=False`` too. The model layer also renders Qwen3-style chat
    templates with ``enable_thinking=False`` (:meth:`radaudit.models.backends.Backend.render`).

Extraction and repair
    The reply is searched for JSON candidates: the contents of a Markdown code fence first, then
    each balanced ``{...}``/``[...]`` in order of position (top-level scalars are never taken).
    A candidate that :func:`json.loads` accepts as it is is used as it is. Otherwise these small
    pure functions are applied in order, each a no-op on text without its fault; the name of each
    one that changed the text goes to ``JsonCallResult.repairs``:

    ======================  ======================================================================
    ``code_fence``          the JSON was inside a ```` ```json ```` fence (:func:`strip_code_fences`)
    ``extract_span``        prose around the JSON was cut off (:func:`extract_json_span`)
    ``smart_quotes``        “ ” ‘ ’ used as delimiters → straight quotes (:func:`fix_smart_quotes`)
    ``single_quotes``       'single-quoted' strings → "double-quoted" (:func:`fix_single_quotes`)
    ``comments``            ``//`` and ``/* */`` comments removed (:func:`remove_comments`)
    ``control_chars``       raw newlines/tabs inside strings escaped (:func:`escape_control_chars`)
    ``python_literals``     ``True``/``False``/``None`` → ``true``/``false``/``null``
                            (:func:`fix_python_literals`)
    ``unquoted_keys``       ``{finding: ...}`` → ``{"finding": ...}`` (:func:`quote_unquoted_keys`)
    ``trailing_commas``     ``[1, 2,]`` → ``[1, 2]`` (:func:`remove_trailing_commas`)
    ``close_truncated``     output cut off (max tokens): open strings and brackets closed, when
                            safe (:func:`close_truncated`; it raises :class:`JsonRepairError`
                            when the cut is inside a key, after a ``:``, or inside a literal)
    ======================  ======================================================================

    A truncated string value is closed with the text seen so far (a prefix of what the model
    meant); ``close_truncated`` in ``repairs`` flags it. Repairs never invent a key or a value.
    A caller for which a partial reply is wrong (a cut-off list silently loses its last items)
    passes ``reject_repairs=("close_truncated",)``: such a candidate then fails like invalid JSON.

Why hand-written, not ``json_repair``
    ``json-repair`` (MIT, pure Python, no dependencies; 0.64.5 installs cleanly here) was checked.
    It is not used because (1) it does not say reliably which faults it fixed (its log is free
    text and silent for quotes and trailing commas), while this audit lab counts repaired outputs
    by kind; (2) it invents values where a failure is the honest outcome: a reply cut off at
    ``"present": tr`` becomes ``{"present": "tr"}``, and any prose becomes ``""``; (3) its
    behaviour changes between its frequent releases, which would change cached results. The
    repairs here are a few dozen lines each, deterministic, and tested one by one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

__all__ = [
    "REPAIR_NAMES", "REPAIR_STEPS", "JsonRepairError", "close_truncated", "escape_control_chars", "extract_json_span",
    "fix_python_literals", "fix_single_quotes", "fix_smart_quotes", "iter_json_candidates", "quote_unquoted_keys",
    "remove_comments", "remove_trailing_commas", "repair_json_text", "strip_code_fences", "strip_thinking",
]


class JsonRepairError(ValueError):
    """A fault that cannot be repaired safely (e.g. output cut off inside a key)."""


# --- a tiny lexer: split text into code / string / comment segments ---------------------------------

def _segments(text: str, *, comments: bool = True) -> list[tuple[str, str]]:
    """Split ``text`` into ``("code"|"string"|"comment", piece)`` segments; strings are double-quoted.

    An unterminated string or block comment runs to the end of the text.
    """
    out: list[tuple[str, str]] = []
    i, n, start = 0, len(text), 0
    while i < n:
        c = text[i]
        if c == '"':
            if start < i:
                out.append(("code", text[start:i]))
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(("string", text[i:j]))
            i = start = j
        elif comments and c == "/" and i + 1 < n and text[i + 1] in "/*":
            if start < i:
                out.append(("code", text[start:i]))
            if text[i + 1] == "/":
                j = text.find("\n", i)
                j = n if j < 0 else j  # the newline stays in the code
            else:
                j = text.find("*/", i + 2)
                j = n if j < 0 else j + 2
            out.append(("comment", text[i:j]))
            i = start = j
        else:
            i += 1
    if start < n:
        out.append(("code", text[start:]))
    return out


def _map_code(text: str, fn: Callable[[str], str]) -> str:
    return "".join(fn(piece) if kind == "code" else piece for kind, piece in _segments(text))


# --- extraction ------------------------------------------------------------------------------------

_THINK_OPEN = re.compile(r"\A\s*<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def strip_thinking(text: str) -> str:
    """``text`` without a leading reasoning block; unchanged when it has none.

    ``"<think>maybe {x}</think>{\"a\": 1}"`` → ``'{"a": 1}'``. A reply that starts inside the block
    (the chat template wrote ``<think>``) is cut after the first ``</think>`` when it has no
    ``<think>`` of its own and does not start with JSON (``{"note": "</think>"}`` is kept); a
    reply whose ``<think>`` is never closed (cut off while reasoning) becomes ``""``.
    """
    m = _THINK_OPEN.match(text)
    if m:
        end = _THINK_CLOSE.search(text, m.end())
        return "" if end is None else text[end.end():]
    if "<think>" not in text.lower():
        end = _THINK_CLOSE.search(text)
        if end is not None and not text[:end.start()].lstrip().startswith(("{", "[", "`")):
            return text[end.end():]
    return text


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n`]*\n?(.*?)(?:```|\Z)", re.S)


def strip_code_fences(text: str) -> str | None:
    """The contents of the first Markdown code fence that holds a ``{`` or ``[``, else ``None``.

    ```` ```json\\n{"a": 1}\\n``` ```` → ``'{"a": 1}'``. An unclosed fence (a truncated reply) runs
    to the end of the text.
    """
    for m in _FENCE.finditer(text):
        body = m.group(2).strip()
        if "{" in body or "[" in body:
            return body
    return None


def _balanced_end(text: str, start: int) -> int | None:
    """Index after the bracket that closes ``text[start]``, skipping strings and comments; ``None``
    when the text ends first (a truncated value)."""
    stack: list[str] = []
    pairs = {"{": "}", "[": "]"}
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "/" and i + 1 < n and text[i + 1] in "/*":
            j = text.find("\n" if text[i + 1] == "/" else "*/", i + 2)
            if j < 0:
                return None
            i = j
        elif c in pairs:
            stack.append(pairs[c])
        elif c in "}]":
            if not stack or stack[-1] != c:
                return i + 1 if not stack else None  # a stray closer: stop here
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return None


def iter_json_candidates(text: str, limit: int = 20) -> Iterator[str]:
    """Each balanced ``{...}``/``[...]`` span in ``text``, by start position (at most ``limit``).

    Spans never nest in the output: after a balanced span the search goes on after its end. A span
    that is still open when the text ends (a truncated reply) runs to the end of the text.
    """
    i, found = 0, 0
    while found < limit:
        starts = [p for p in (text.find("{", i), text.find("[", i)) if p >= 0]
        if not starts:
            return
        s = min(starts)
        end = _balanced_end(text, s)
        yield text[s:] if end is None else text[s:end]
        found += 1
        if end is None:
            # a truncated span: later starts are inside it, but try them too (the open bracket may
            # have been prose, "[see below]" ... ), stepping one character on
            i = s + 1
        else:
            i = end


def extract_json_span(text: str) -> str | None:
    """The first balanced ``{...}`` or ``[...]`` in ``text`` (prose before and after cut off), or ``None``.

    ``'Sure! {"a": [1, 2]} Hope this helps.'`` → ``'{"a": [1, 2]}'``. Brackets inside strings and
    comments do not count. A span still open at the end of the text runs to the end.
    """
    return next(iter_json_candidates(text, limit=1), None)


# --- repairs: each a pure str -> str function, a no-op on text without its fault -------------------

_SMART_DOUBLE = "\u201c\u201d\u201e\u201f\u2033"
_SMART_SINGLE = "\u2018\u2019\u201a\u201b\u2032"


def fix_smart_quotes(text: str) -> str:
    """Typographic quotes used as JSON delimiters → straight quotes; inside strings they are kept.

    ``{“finding”: “effusion”}`` → ``{"finding": "effusion"}``; ``{"note": "the “small” one"}`` is
    unchanged. A straight ``"`` inside a smart-quoted string is escaped. ‘ ’ outside strings become
    ``'`` (then :func:`fix_single_quotes` converts them).
    """
    if not any(ch in text for ch in _SMART_DOUBLE + _SMART_SINGLE):
        return text
    out: list[str] = []
    state = "out"  # "out" | "straight" | "smart"
    i = 0
    while i < len(text):
        c = text[i]
        if state == "out":
            if c == '"':
                state = "straight"
                out.append(c)
            elif c in _SMART_DOUBLE:
                state = "smart"
                out.append('"')
            elif c in _SMART_SINGLE:
                out.append("'")
            else:
                out.append(c)
        elif state == "straight":
            out.append(c)
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                state = "out"
        else:  # in a string opened by a smart quote
            if c in "\u201d\u201c\u201f\u2033":
                out.append('"')
                state = "out"
            elif c == '"':
                out.append('\\"')
            elif c == "\\" and i + 1 < len(text):
                out.append(text[i:i + 2])
                i += 1
            else:
                out.append(c)
        i += 1
    return "".join(out)


def fix_single_quotes(text: str) -> str:
    """``'single-quoted'`` strings → ``"double-quoted"`` ones.

    ``{'finding': 'effusion'}`` → ``{"finding": "effusion"}``. A ``'`` opens a string only where a
    value or key can start (after ``{ [ , :`` or at the start), so apostrophes in words are left
    alone; inside a single-quoted string a ``'`` closes it only when followed by ``, : } ]`` or the
    end, so ``'the patient's lung'`` survives. Inner ``"`` are escaped, ``\\'`` unescaped. Double-
    quoted strings and comments are copied unchanged. An unterminated string is left open (see
    :func:`close_truncated`).
    """
    if "'" not in text:
        return text
    out: list[str] = []
    prev = ""  # last non-space character outside strings
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            prev, i = '"', j + 1
        elif c == "/" and i + 1 < n and text[i + 1] in "/*":
            j = text.find("\n" if text[i + 1] == "/" else "*/", i + 2)
            j = n if j < 0 else (j if text[i + 1] == "/" else j + 2)
            out.append(text[i:j])
            i = j
        elif c == "'" and prev in ("", "{", "[", ",", ":"):
            buf: list[str] = ['"']
            j = i + 1
            closed = False
            while j < n:
                ch = text[j]
                if ch == "\\" and j + 1 < n:
                    buf.append("'" if text[j + 1] == "'" else text[j:j + 2])
                    j += 2
                    continue
                if ch == "'":
                    k = j + 1
                    while k < n and text[k] in " \t\r\n":
                        k += 1
                    if k >= n or text[k] in ",:}]":
                        closed = True
                        break
                buf.append('\\"' if ch == '"' else ch)
                j += 1
            if closed:
                buf.append('"')
            out.append("".join(buf))
            prev, i = '"', j + 1
        else:
            out.append(c)
            if not c.isspace():
                prev = c
            i += 1
    return "".join(out)


def remove_comments(text: str) -> str:
    """``// line`` and ``/* block */`` comments outside strings removed.

    ``{"a": 1, // first\\n "b": 2 /* second */}`` → ``{"a": 1, \\n "b": 2 }``; ``"http://x"`` is
    a string and stays.
    """
    if "/" not in text:
        return text
    return "".join(piece for kind, piece in _segments(text) if kind != "comment")


def escape_control_chars(text: str) -> str:
    """Raw newlines, carriage returns and tabs inside strings → ``\\n``, ``\\r``, ``\\t``.

    ``{"a": "line one<newline>line two"}`` → ``{"a": "line one\\nline two"}`` (JSON forbids raw control
    characters in strings; models often write them).
    """
    table = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})
    return "".join(piece.translate(table) if kind == "string" else piece for kind, piece in _segments(text))


_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_PY_LITERAL_RE = re.compile(r"\b(True|False|None)\b")


def fix_python_literals(text: str) -> str:
    """Python's ``True``/``False``/``None`` outside strings → ``true``/``false``/``null``.

    ``{"present": True, "size": None}`` → ``{"present": true, "size": null}``.
    """
    return _map_code(text, lambda s: _PY_LITERAL_RE.sub(lambda m: _PY_LITERALS[m.group(1)], s))


_UNQUOTED_KEY_RE = re.compile(r"([{,]\s*)([A-Za-z_$][\w$\-]*)(\s*:)")


def quote_unquoted_keys(text: str) -> str:
    """Bare identifiers used as object keys → quoted keys.

    ``{finding: "effusion", present: true}`` → ``{"finding": "effusion", "present": true}``.
    Only a name right after ``{`` or ``,`` and before ``:`` counts.
    """
    return _map_code(text, lambda s: _UNQUOTED_KEY_RE.sub(r'\1"\2"\3', s))


_TRAILING_COMMA_RE = re.compile(r",(\s*)(?=[}\]])")


def remove_trailing_commas(text: str) -> str:
    """A comma right before ``}`` or ``]`` removed: ``{"a": [1, 2,],}`` → ``{"a": [1, 2]}``."""
    return _map_code(text, lambda s: _TRAILING_COMMA_RE.sub(r"\1", s))


_NUMBER_RE = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")
_COMPLETE_WORDS = {"true", "false", "null"}
_WORD_RE = re.compile(r"[^\s,:{}\[\]\"]+")


def close_truncated(text: str) -> str:
    """Close what a cut-off reply left open, when that is safe; a no-op on balanced text.

    Safe: the text ends after a complete value (an open string value is closed with what was
    written; a dangling ``,`` is dropped), and only closing quotes and brackets are appended:
    ``{"finding": "effusion", "present": true`` → ``{"finding": "effusion", "present": true}``;
    ``{"findings": ["small eff`` → ``{"findings": ["small eff"]}``.
    Unsafe (raises :class:`JsonRepairError`): the cut is inside a key, between a key and its value,
    right after the opening quote of a string value (closing it would make ``""``), or inside a
    literal or number (``tru``, ``1.``), since closing it would invent content.
    """
    stack: list[str] = []  # "{" or "["
    expect: list[str] = []  # per container: "key" | "colon" | "value" | "comma"
    i, n = 0, len(text)
    last_word = ""
    open_string = False
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        last_word = ""
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                open_string = True
                if stack and expect[-1] in ("key", "colon"):
                    raise JsonRepairError("the output was cut off inside an object key")
                if not text[i + 1:].strip():
                    raise JsonRepairError("the output was cut off at the start of a string value")
                break
            if stack:
                expect[-1] = "colon" if expect[-1] == "key" else "comma"
            i = j + 1
        elif c in "{[":
            if stack:
                expect[-1] = "comma"
            stack.append(c)
            expect.append("key" if c == "{" else "value")
            i += 1
        elif c in "}]":
            if not stack:
                return text  # stray closer: not a truncation; leave it to the parser
            stack.pop()
            expect.pop()
            i += 1
        elif c == ",":
            if stack:
                expect[-1] = "key" if stack[-1] == "{" else "value"
            i += 1
        elif c == ":":
            if stack:
                expect[-1] = "value"
            i += 1
        else:
            m = _WORD_RE.match(text, i)
            last_word = m.group(0)
            if stack:
                expect[-1] = "colon" if expect[-1] == "key" else "comma"
            i = m.end()
    if not stack:
        return text
    out = text
    if open_string:
        if out.endswith("\\") and (len(out) - len(out.rstrip("\\"))) % 2 == 1:
            out = out[:-1]  # a dangling escape
        out += '"'
    elif last_word:
        if last_word not in _COMPLETE_WORDS and not _NUMBER_RE.fullmatch(last_word):
            raise JsonRepairError(f"the output was cut off inside the value {last_word!r}")
    elif expect[-1] in ("colon", "value") and stack[-1] == "{":
        raise JsonRepairError("the output was cut off between an object key and its value")
    elif expect[-1] in ("key", "value"):
        stripped = out.rstrip()
        if stripped.endswith(","):
            out = stripped[:-1]  # a dangling comma before the cut
    closers = "".join("}" if b == "{" else "]" for b in reversed(stack))
    return out + closers


#: The repair steps, in the order they are applied: (name in ``repairs``, function).
REPAIR_STEPS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("smart_quotes", fix_smart_quotes),
    ("single_quotes", fix_single_quotes),
    ("comments", remove_comments),
    ("control_chars", escape_control_chars),
    ("python_literals", fix_python_literals),
    ("unquoted_keys", quote_unquoted_keys),
    ("trailing_commas", remove_trailing_commas),
    ("close_truncated", close_truncated),
)


#: Every repair name that can appear in ``JsonCallResult.repairs``: the two extraction steps and
#: :data:`REPAIR_STEPS` (what ``reject_repairs`` may name).
REPAIR_NAMES = frozenset({"code_fence", "extract_span", *(name for name, _ in REPAIR_STEPS)})


def repair_json_text(text: str) -> tuple[str, list[str]]:
    """Apply :data:`REPAIR_STEPS` in order; return the repaired text and the names of the steps that
    changed it. Raises :class:`JsonRepairError` for an unsafe truncation."""
    applied: list[str] = []
    for name, fn in REPAIR_STEPS:
        new = fn(text)
        if new != text:
            applied.append(name)
            text = new
    return text, applied
