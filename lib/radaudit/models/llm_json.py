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

Reasoning traces, extraction and repair
    Pulling the JSON out of a reply (after any ``<think>`` block, from a code fence, then each
    balanced ``{...}``/``[...]``) and the named repairs of small models' faults are pure text functions
    of :mod:`radaudit.models.json_extract`, re-exported here; its docstring lists the repairs and why
    they are hand-written.

Retries
    A reply that yields no valid JSON is answered with :data:`DEFAULT_FOLLOWUP`: the original
    prompt, the previous reply (cut to 2000 characters), the error, and the JSON schema. The
    generator sees one self-contained prompt per attempt (no chat history is assumed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from radaudit.errors import ParamsError
from radaudit.models.json_extract import (
    REPAIR_NAMES,
    REPAIR_STEPS,
    JsonRepairError,
    close_truncated,
    escape_control_chars,
    extract_json_span,
    fix_python_literals,
    fix_single_quotes,
    fix_smart_quotes,
    iter_json_candidates,
    quote_unquoted_keys,
    remove_comments,
    remove_trailing_commas,
    repair_json_text,
    strip_code_fences,
    strip_thinking,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "DEFAULT_FOLLOWUP", "REPAIR_STEPS", "JsonBatchSummary", "JsonCallResult", "JsonRepairError",
    "call_json", "call_json_batch", "close_truncated", "escape_control_chars", "extract_json_span",
    "fix_python_literals", "fix_single_quotes", "fix_smart_quotes", "iter_json_candidates",
    "parse_json_output", "quote_unquoted_keys", "remove_comments", "remove_trailing_commas",
    "repair_json_text", "results_frame", "schema_json", "strip_code_fences", "strip_thinking", "validate_json",
]


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
    unknown = [x for x in reject_repairs if x not in REPAIR_NAMES]
    if isinstance(reject_repairs, str) or unknown:
        raise ParamsError(f"reject_repairs must be a list of repair names ({', '.join(sorted(REPAIR_NAMES))}), "
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
