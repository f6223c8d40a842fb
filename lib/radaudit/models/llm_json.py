"""LLM JSON calls: a prompt → a JSON value validated against a schema, with repair and bounded retries.

:func:`call_json` sends a prompt to any text generator (``generate_fn(prompt) -> str``: a fake in
tests, a transformers or vLLM generator in experiments), pulls a JSON object or array out of the
reply, repairs the common faults of small models, validates it, and, when that fails, asks again
with a follow-up prompt that quotes the error (at most ``max_retries`` times). Every call returns a
:class:`JsonCallResult`; nothing is raised for a bad output and nothing is dropped:
:func:`call_json_batch` returns one result per prompt plus a :class:`JsonBatchSummary` (counts of
ok / repaired / retried / failed and a tidy table of the failures).

Schemas
    A pydantic model class (preferred), or any type pydantic's ``TypeAdapter`` accepts (e.g.
    ``list[Finding]``): validated with pydantic, and ``value`` is what pydantic returns (a model
    instance). Or a JSON-schema ``dict``: validated with ``jsonschema`` (installed with nbformat,
    a core dependency); without ``jsonschema`` only pydantic schemas are accepted, and a dict schema
    raises :class:`~radaudit.errors.ParamsError` saying so. ``value`` is then the parsed JSON.
    ``strict=True`` turns off pydantic's lax coercions (``"yes"`` → ``True``, ``"3"`` → ``3``).

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

Retries
    A reply that yields no valid JSON is answered with :data:`DEFAULT_FOLLOWUP`: the original
    prompt, the previous reply (cut to 2000 characters), the error, and the JSON schema. The
    generator sees one self-contained prompt per attempt (no chat history is assumed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from radaudit.errors import ParamsError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "DEFAULT_FOLLOWUP", "REPAIR_STEPS", "JsonBatchSummary", "JsonCallResult", "JsonRepairError",
    "call_json", "call_json_batch", "close_truncated", "escape_control_chars", "extract_json_span",
    "fix_python_literals", "fix_single_quotes", "fix_smart_quotes", "iter_json_candidates",
    "parse_json_output", "quote_unquoted_keys", "remove_comments", "remove_trailing_commas",
    "repair_json_text", "results_frame", "schema_json", "strip_code_fences", "strip_thinking", "validate_json",
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


_REPAIR_NAMES = frozenset({"code_fence", "extract_span", *(name for name, _ in REPAIR_STEPS)})


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


# --- parsing and validation ------------------------------------------------------------------------

@dataclass(frozen=True)
class _Parsed:
    value: Any
    repairs: list[str]


def _parse_candidate(span: str, prefix: list[str], repair: bool) -> _Parsed:
    try:
        return _Parsed(json.loads(span), list(prefix))
    except json.JSONDecodeError as err:
        if not repair:
            raise ValueError(f"invalid JSON ({err})") from None
    fixed, applied = repair_json_text(span)  # may raise JsonRepairError
    try:
        return _Parsed(json.loads(fixed), [*prefix, *applied])
    except json.JSONDecodeError as err:
        raise ValueError(f"invalid JSON even after repairs ({err})") from None


def _candidates(text: str, repair: bool) -> Iterator[tuple[str, list[str]]]:
    """(span, repairs already implied) for each candidate, fenced contents first, de-duplicated
    (after a leading reasoning block is cut off: :func:`strip_thinking`)."""
    text = strip_thinking(text)
    seen: set[str] = set()
    stripped = text.strip()
    fenced = strip_code_fences(text) if repair else None
    sources = ([(fenced, ["code_fence"])] if fenced is not None else []) + [(stripped, [])]
    for source, prefix in sources:
        spans = iter_json_candidates(source) if repair else iter([stripped])
        for span in spans:
            if span in seen:
                continue
            seen.add(span)
            yield span, prefix + (["extract_span"] if span.strip() != source.strip() else [])


def parse_json_output(text: str, *, repair: bool = True) -> tuple[Any, list[str]]:
    """The first JSON object/array in a model's reply, repaired if needed: ``(value, repairs)``.

    Raises :class:`ValueError` (or :class:`JsonRepairError`) saying why when there is none.
    Validation is not done here; :func:`call_json` also tries later candidates when the first
    parses but does not validate.
    """
    first_error: Exception | None = None
    for span, prefix in _candidates(text, repair):
        try:
            parsed = _parse_candidate(span, prefix, repair)
        except ValueError as err:
            first_error = first_error or err
            continue
        return parsed.value, parsed.repairs
    if first_error is not None:
        raise first_error
    raise ValueError("no JSON object or array found in the output")


def _is_dict_schema(schema: Any) -> bool:
    return isinstance(schema, dict)


def _adapter(schema: Any):
    from pydantic import TypeAdapter

    try:
        return TypeAdapter(schema)
    except Exception as err:  # noqa: BLE001 - pydantic raises several kinds for a non-type
        raise ParamsError(f"schema must be a pydantic model class (or a type pydantic accepts) or a JSON-schema "
                          f"dict, got {schema!r} ({err}).") from err


def _jsonschema_validator(schema: dict):
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema comes with nbformat
        raise ParamsError("A JSON-schema dict needs the `jsonschema` package (pip install jsonschema); without it, "
                          "pass a pydantic model class as the schema.") from None
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as err:
        raise ParamsError(f"The JSON schema is not valid: {err.message}") from err
    return cls(schema)


def schema_json(schema: Any) -> str:
    """The JSON schema of ``schema`` (pydantic type or dict) as compact JSON text, for prompts."""
    js = schema if _is_dict_schema(schema) else _adapter(schema).json_schema()
    return json.dumps(js, separators=(",", ":"), ensure_ascii=False)


def _format_pydantic_error(err) -> str:
    parts = []
    for e in err.errors(include_url=False):
        loc = ".".join(str(x) for x in e.get("loc", ())) or "(root)"
        got = e.get("input")
        got_s = json.dumps(got, ensure_ascii=False, default=str) if not isinstance(got, (dict, list)) else type(got).__name__
        if len(got_s) > 80:
            got_s = got_s[:77] + "..."
        parts.append(f"{loc}: {e.get('msg')} (got {got_s})")
    return "; ".join(parts)


def validate_json(value: Any, schema: Any, *, strict: bool = False) -> Any:
    """Validate a parsed JSON value: returns pydantic's result (pydantic schema) or ``value`` (dict
    schema). Raises :class:`ValueError` with a short, quotable message listing every problem."""
    if _is_dict_schema(schema):
        validator = _jsonschema_validator(schema)
        errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
        if errors:
            msgs = ["{}: {}".format(".".join(str(p) for p in e.absolute_path) or "(root)", e.message) for e in errors]
            raise ValueError("schema validation failed: " + "; ".join(msgs))
        return value
    from pydantic import ValidationError

    try:
        return _adapter(schema).validate_python(value, strict=strict)
    except ValidationError as err:
        raise ValueError("schema validation failed: " + _format_pydantic_error(err)) from None


# --- the call ---------------------------------------------------------------------------------------

#: The follow-up prompt after a failed attempt. Fields: ``prompt`` (the original), ``output`` (the
#: previous reply, cut to 2000 characters), ``error`` (why it was rejected), ``schema`` (JSON schema).
DEFAULT_FOLLOWUP = (
    "{prompt}\n\n"
    "Your previous answer was:\n{output}\n\n"
    "It was rejected: {error}\n"
    "Answer again with only a JSON value that matches this JSON schema, and nothing else:\n{schema}"
)
_MAX_QUOTED = 2000


@dataclass
class JsonCallResult:
    """The outcome of one :func:`call_json`.

    ``value``: the validated value (pydantic's result for a pydantic schema, the parsed JSON for a
    dict schema), ``None`` when ``ok`` is false. ``raw_outputs``: every reply, in order (one per
    attempt). ``attempts``: how many times the generator was called. ``error``: why the last attempt
    failed (``None`` when ok). ``repairs``: the repairs applied to the accepted reply (or, on
    failure, to the last reply's first parseable candidate). ``prompts``: the prompt of each attempt
    (the first is the original, later ones follow-ups). ``errors``: each attempt's error (``None``
    for the accepted one).
    """

    value: Any
    raw_outputs: list[str]
    attempts: int
    ok: bool
    error: str | None
    repairs: list[str]
    prompts: list[str] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)

    @property
    def repaired(self) -> bool:
        """Accepted, but only after at least one repair of the reply."""
        return self.ok and bool(self.repairs)

    @property
    def retried(self) -> bool:
        """Accepted on a follow-up attempt."""
        return self.ok and self.attempts > 1

    @property
    def data(self) -> Any:
        """``value`` as plain JSON data (pydantic models dumped), ``None`` when not ok."""
        if not self.ok:
            return None
        try:
            from pydantic import TypeAdapter

            return TypeAdapter(type(self.value)).dump_python(self.value, mode="json")
        except Exception:  # noqa: BLE001 - a plain JSON value
            return self.value


class _Call:
    """The state of one JSON call across attempts (shared by :func:`call_json` and the batch)."""

    def __init__(self, prompt: str, schema: Any, max_retries: int, repair: bool, strict: bool, followup: str,
                 schema_text: str, reject_repairs: frozenset[str] = frozenset()) -> None:
        self.prompt, self.schema, self.max_retries = prompt, schema, max_retries
        self.repair, self.strict, self.followup, self.schema_text = repair, strict, followup, schema_text
        self.reject_repairs = reject_repairs
        self.next_prompt: str | None = prompt
        self.result = JsonCallResult(None, [], 0, False, None, [], [], [])

    def feed(self, output: Any) -> None:
        r = self.result
        assert self.next_prompt is not None
        r.prompts.append(self.next_prompt)
        r.attempts += 1
        if not isinstance(output, str):
            output_s = "" if output is None else str(output)
            error = f"the generator returned {type(output).__name__}, not str"
            r.raw_outputs.append(output_s)
            self._fail(error, [], output_s)
            return
        r.raw_outputs.append(output)
        value, repairs, error = self._accept(output)
        if error is None:
            r.value, r.ok, r.error, r.repairs = value, True, None, repairs
            r.errors.append(None)
            self.next_prompt = None
        else:
            self._fail(error, repairs, output)

    def fail_generation(self, err: BaseException) -> None:
        r = self.result
        assert self.next_prompt is not None
        r.prompts.append(self.next_prompt)
        r.attempts += 1
        r.raw_outputs.append("")
        r.error = f"the generator raised {type(err).__name__}: {err}"
        r.errors.append(r.error)
        r.repairs = []
        self.next_prompt = None  # a crashing generator is not retried

    def _fail(self, error: str, repairs: list[str], output: str) -> None:
        r = self.result
        r.error, r.repairs = error, repairs
        r.errors.append(error)
        if r.attempts <= self.max_retries:
            quoted = output if len(output) <= _MAX_QUOTED else output[:_MAX_QUOTED] + " [...]"
            self.next_prompt = self.followup.format(prompt=self.prompt, output=quoted, error=error,
                                                    schema=self.schema_text)
        else:
            self.next_prompt = None

    def _accept(self, output: str) -> tuple[Any, list[str], str | None]:
        """(validated value, repairs, None) for the first candidate that parses and validates, else
        (None, repairs of the first parsed candidate, the error to report)."""
        first: tuple[list[str], str] | None = None
        parse_error: str | None = None
        for span, prefix in _candidates(output, self.repair):
            try:
                parsed = _parse_candidate(span, prefix, self.repair)
            except ValueError as err:
                parse_error = parse_error or str(err)
                continue
            rejected = [x for x in parsed.repairs if x in self.reject_repairs]
            if rejected:
                why = ("the output was cut off (it ends inside the JSON value)" if rejected == ["close_truncated"]
                       else f"the output needed repair(s) not accepted here: {', '.join(rejected)}")
                first = first or (parsed.repairs, why)
                continue
            try:
                return validate_json(parsed.value, self.schema, strict=self.strict), parsed.repairs, None
            except ValueError as err:
                first = first or (parsed.repairs, str(err))
        if first is not None:
            return None, first[0], first[1]
        if parse_error is not None:
            return None, [], f"could not parse JSON: {parse_error}"
        return None, [], "no JSON object or array found in the output"


def _check_common(schema: Any, max_retries: int, reject_repairs: Sequence[str] = ()) -> str:
    if not isinstance(max_retries, int) or max_retries < 0:
        raise ParamsError(f"max_retries must be an integer >= 0, got {max_retries!r}.")
    unknown = [x for x in reject_repairs if x not in _REPAIR_NAMES]
    if isinstance(reject_repairs, str) or unknown:
        raise ParamsError(f"reject_repairs must be a list of repair names ({', '.join(sorted(_REPAIR_NAMES))}), "
                          f"got {reject_repairs!r}.")
    if _is_dict_schema(schema):
        _jsonschema_validator(schema)
    return schema_json(schema)


def call_json(generate_fn: Callable[[str], str], prompt: str, schema: Any, *, max_retries: int = 2,
              repair: bool = True, strict: bool = False, followup: str = DEFAULT_FOLLOWUP,
              on_generate_error: Literal["raise", "record"] = "raise",
              reject_repairs: Sequence[str] = ()) -> JsonCallResult:
    """Ask ``generate_fn`` for JSON matching ``schema``; repair, validate, retry; return the outcome.

    ``generate_fn(prompt) -> str`` is any text generator. At most ``1 + max_retries`` calls. A reply
    is accepted when one of its JSON candidates (see the module docstring) validates; otherwise the
    next prompt is ``followup`` formatted with the original prompt, the reply, the error and the
    schema. ``repair=False`` accepts only a reply that is exactly valid JSON (for measuring how
    often a model needs help). ``reject_repairs``: names of :data:`REPAIR_STEPS` whose use makes a
    candidate fail instead (e.g. ``("close_truncated",)`` where a cut-off reply would silently lose
    items). ``strict=True`` disables pydantic's lax type coercion. A generator
    that raises propagates (``on_generate_error="raise"``) or is recorded as a failed result with
    no retry (``"record"``). Output faults never raise: see ``ok``/``error`` on the result.
    """
    schema_text = _check_common(schema, max_retries, reject_repairs)
    call = _Call(prompt, schema, max_retries, repair, strict, followup, schema_text, frozenset(reject_repairs))
    while call.next_prompt is not None:
        try:
            output = generate_fn(call.next_prompt)
        except Exception as err:
            if on_generate_error == "raise":
                raise
            call.fail_generation(err)
            break
        call.feed(output)
    return call.result


@dataclass
class JsonBatchSummary:
    """Counts over a batch of JSON calls, and the failures as a tidy table.

    ``ok`` = ``clean`` (first reply valid as it was) + the rest; ``repaired``: ok after at least one
    repair (any attempt count); ``retried``: ok on a follow-up attempt; ``failed`` = ``n - ok``.
    ``failures``: one row per failed call (see :func:`results_frame`).
    """

    n: int
    ok: int
    clean: int
    repaired: int
    retried: int
    failed: int
    failures: pd.DataFrame

    def counts(self) -> dict[str, int]:
        return {"n": self.n, "ok": self.ok, "clean": self.clean, "repaired": self.repaired,
                "retried": self.retried, "failed": self.failed}


def results_frame(results: Sequence[JsonCallResult], ids: Sequence[Any] | None = None) -> pd.DataFrame:
    """One row per call: ``id, ok, attempts, repaired, retried, repairs, error, errors, prompt,
    last_output, value_json`` (``repairs``/``errors`` joined with ``" | "``; ``value_json`` the
    accepted value as JSON text, empty when not ok)."""
    import pandas as pd

    ids = list(range(len(results))) if ids is None else list(ids)
    rows = []
    for i, r in zip(ids, results, strict=True):
        rows.append({
            "id": i, "ok": r.ok, "attempts": r.attempts, "repaired": r.repaired, "retried": r.retried,
            "repairs": " | ".join(r.repairs), "error": r.error or "",
            "errors": " | ".join(e for e in r.errors if e),
            "prompt": r.prompts[0] if r.prompts else "", "last_output": r.raw_outputs[-1] if r.raw_outputs else "",
            "value_json": json.dumps(r.data, ensure_ascii=False, sort_keys=True, default=str) if r.ok else "",
        })
    cols = ["id", "ok", "attempts", "repaired", "retried", "repairs", "error", "errors", "prompt", "last_output",
            "value_json"]
    return pd.DataFrame(rows, columns=cols)


def call_json_batch(generate_fn: Callable[..., Any], prompts: Sequence[str], schema: Any, *,
                    ids: Sequence[Any] | None = None, max_retries: int = 2, batched: bool = False,
                    repair: bool = True, strict: bool = False, followup: str = DEFAULT_FOLLOWUP,
                    on_generate_error: Literal["raise", "record"] = "raise", reject_repairs: Sequence[str] = (),
                    ) -> tuple[list[JsonCallResult], JsonBatchSummary]:
    """:func:`call_json` over many prompts: ``(results, summary)``, results in input order.

    ``batched=False``: ``generate_fn(prompt) -> str``, one call per attempt. ``batched=True``:
    ``generate_fn(list_of_prompts) -> list_of_str``, called once per round with every prompt still
    pending (first attempts, then the follow-ups of those that failed), so a batched GPU generator
    is used well; the results are the same as unbatched for a deterministic generator. With
    ``on_generate_error="record"`` a raising generator fails the calls of that round (batched) or
    that prompt (unbatched); otherwise it propagates. ``ids`` label the rows of
    ``summary.failures`` (default: the position). ``reject_repairs`` as in :func:`call_json`.
    """
    prompts = list(prompts)
    if ids is not None and len(ids) != len(prompts):
        raise ParamsError(f"ids has {len(ids)} entries but there are {len(prompts)} prompts.")
    schema_text = _check_common(schema, max_retries, reject_repairs)
    if not batched:
        results = [call_json(generate_fn, p, schema, max_retries=max_retries, repair=repair, strict=strict,
                             followup=followup, on_generate_error=on_generate_error, reject_repairs=reject_repairs)
                   for p in prompts]
    else:
        calls = [_Call(p, schema, max_retries, repair, strict, followup, schema_text, frozenset(reject_repairs))
                 for p in prompts]
        while pending := [c for c in calls if c.next_prompt is not None]:
            try:
                outputs = list(generate_fn([c.next_prompt for c in pending]))
                if len(outputs) != len(pending):
                    raise ValueError(f"the batched generator returned {len(outputs)} outputs for "
                                     f"{len(pending)} prompts")
            except Exception as err:
                if on_generate_error == "raise":
                    raise
                for c in pending:
                    c.fail_generation(err)
                continue
            for c, out in zip(pending, outputs, strict=True):
                c.feed(out)
        results = [c.result for c in calls]
    return results, summarize_results(results, ids)


def summarize_results(results: Sequence[JsonCallResult], ids: Sequence[Any] | None = None) -> JsonBatchSummary:
    """Counts and the failures table for a list of :class:`JsonCallResult`."""
    frame = results_frame(results, ids)
    n = len(results)
    ok = sum(r.ok for r in results)
    failures = frame[~frame["ok"].astype(bool)].drop(columns=["ok", "repaired", "retried", "value_json"])
    return JsonBatchSummary(
        n=n, ok=ok, clean=sum(r.ok and not r.repairs and r.attempts == 1 for r in results),
        repaired=sum(r.repaired for r in results), retried=sum(r.retried for r in results), failed=n - ok,
        failures=failures.reset_index(drop=True),
    )
