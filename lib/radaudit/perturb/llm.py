"""LLM rewriting with ReEvalMed's protocol: one targeted aspect per rewrite, significant or not.

§4.2.1: "For each evaluation aspect listed in the Criteria Table 2, we prompted DeepSeek-R1 to
rewrite the GT report by modifying only one targeted aspect. The rewrites yield paired samples that
contain either clinically significant or clinically insignificant errors." Appendix B: "we used the
DeepSeek-R1 7B model with fixed prompts and standard decoding settings", and every rewrite was
reviewed by clinicians. The paper does not print its prompt; :data:`DEFAULT_TEMPLATE` restates
its protocol with its own words: the aspect's definition (§3.1/§3.2), the error-type definitions
(§4.2.1), the significance criteria (§3.1 and §4.3) and the Table 2 example pair of that aspect and
significance as a one-shot example. The template and the per-aspect texts are parameters.

The model answers in JSON (:class:`LLMRewriteOutput`) through :func:`radaudit.models.llm_json.call_json_batch`
(repair, bounded retries). Unparseable answers are counted and returned as rejected rows with the
error, never dropped. A parsed rewrite is verified like a rule's (:mod:`radaudit.perturb.verify`):
the actual change (common prefix/suffix envelope) must lie inside the span the model says it
edited. The ``human_review`` column is left empty: the paper's clinician validation is still owed.

Paper preset (:data:`PAPER_LLM`): ``deepseek-ai/DeepSeek-R1-Distill-Qwen-7B`` ("DeepSeek-R1 7B" is
the Qwen-7B distillation). The paper says only "standard decoding settings"; we use DeepSeek's
published recommendation for the R1 distills (temperature 0.6, top-p 0.95) and leave room for the
reasoning trace, which :func:`strip_reasoning` removes before JSON parsing.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from radaudit.errors import ParamsError
from radaudit.models.backends import get_backend
from radaudit.models.generate import generate
from radaudit.models.llm_json import JsonBatchSummary, call_json_batch
from radaudit.perturb.base import ASPECT_LABELS, ERROR_TYPES, check_cell, derive_seed
from radaudit.perturb.engine import Outcome, RewriteTask, make_pair
from radaudit.perturb.verify import changed_envelope, check_outside

__all__ = [
    "PAPER_LLM", "ASPECT_DEFINITIONS", "ERROR_TYPE_DEFINITIONS", "SIGNIFICANCE_DEFINITIONS", "TABLE2_EXAMPLES",
    "DEFAULT_TEMPLATE", "LLMRewriteOutput", "LLMEngine", "build_prompt", "strip_reasoning", "generator_from_model",
]

#: The paper's rewriting model and our reading of "standard decoding settings" (module docstring).
PAPER_LLM: dict[str, Any] = {
    "model": "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
    "strategy": {"name": "r1_recommended", "do_sample": True, "temperature": 0.6, "top_p": 0.95},
    "max_new_tokens": 4096,
}

#: §3.1 / §3.2 definitions, condensed from the paper's wording.
ASPECT_DEFINITIONS: dict[str, str] = {
    "location": "the precise anatomical site of a lesion or abnormality (e.g., \"right upper lobe\").",
    "severity": "the extent or seriousness of a finding (e.g., \"mild\", \"severe\").",
    "description": "the morphological characteristics of a lesion, such as its shape and edge properties "
                   "(e.g., \"well-defined\", \"irregular\").",
    "negation": "the explicit statement that an abnormality is absent (e.g., \"no pneumothorax\").",
    "modality": "whether statements and recommendations fit the imaging modality (e.g., X-ray, CT).",
    "size_distance": "quantitative measurements of lesions (e.g., \"4.5 cm\") and positional relationships "
                     "(e.g., \"catheter tip 2 cm above the carina\").",
    "comparison": "temporal change compared to prior imaging (e.g., \"increased\", \"unchanged\").",
    "contradiction": "logical consistency within the same report (e.g., \"clear lungs\" in one sentence and "
                     "\"left lung infiltrate\" in another).",
    "uncertainty": "hedging terms that express diagnostic uncertainty (e.g., \"may\", \"possibly\", \"suspicious for\").",
    "terminology": "the accurate and clear use of medical terms.",
    "noise": "grammatical errors, typographical mistakes or non-standard phrasing.",
    "stylistic": "differences in expression, such as reordering the sentences of the findings or phrasing with "
                 "a different template.",
}
#: §4.2.1.
ERROR_TYPE_DEFINITIONS: dict[str, str] = {
    "omission": "a clinically relevant fact present in the original report is missing from the rewrite",
    "fabrication": "the rewrite introduces a clinically relevant fact that is not present in the original report",
    "inaccuracy": "the same clinical fact is described inconsistently between the original report and the rewrite",
}
#: §3.1, §4.3.
SIGNIFICANCE_DEFINITIONS: dict[str, str] = {
    "significant": "clinically significant: the change may plausibly affect downstream clinical decisions "
                   "(diagnosis, treatment or follow-up)",
    "insignificant": "clinically insignificant: the change does not alter the clinical meaning, diagnostic "
                     "interpretation or treatment decisions",
}
#: Table 2: (GT, ME) example per (aspect, significance).
TABLE2_EXAMPLES: dict[tuple[str, str], tuple[str, str]] = {
    ("location", "significant"): ("Multiple chronic appearing left-sided rib fractures",
                                  "Multiple chronic appearing right rib fractures"),
    ("location", "insignificant"): ("New left retrocardiac opacity", "New opacity behind the heart on the left side"),
    ("severity", "significant"): ("Heart is mildly enlarged.", "Severely enlarged heart"),
    ("severity", "insignificant"): ("Severe cardiomegaly", "Moderate-to-severe cardiomegaly"),
    ("description", "significant"): ("An irregular mass with spiculated margins", "A round, smooth mass"),
    ("description", "insignificant"): ("Bibasilar patchy ill-defined opacities",
                                       "Bibasilar faint and poorly marginated opacities"),
    ("negation", "significant"): ("No evidence of pneumothorax", "Pneumothorax is present"),
    ("negation", "insignificant"): ("No pleural effusion is seen", "There is no definite pleural effusion"),
    ("modality", "significant"): ("Refer to prior CT torso for full descriptive details of esophageal abnormalities.",
                                  "Refer to prior abdominal ultrasound for details of esophageal abnormalities"),
    ("modality", "insignificant"): ("Consider chest CT for further evaluation",
                                    "CT can be considered for further assessment"),
    ("size_distance", "significant"): ("Irregularly marginated 3-cm mass in the lingula",
                                       "Irregularly marginated 8-cm mass in the lingula"),
    ("size_distance", "insignificant"): ("ET tube within 1 cm of the carina", "ET tube within 0.9 cm of the carina"),
    ("comparison", "significant"): ("Pulmonary edema has improved", "Pulmonary edema has worsened"),
    ("comparison", "insignificant"): ("No interval change in pleural effusion", "Pleural effusion is essentially unchanged"),
    ("contradiction", "significant"): ("The lungs are clear.",
                                       "The lungs are clear. There is consolidation in the right base"),
    ("contradiction", "insignificant"): (
        "No current evidence of larger pleural effusions",
        "No current evidence of larger pleural effusions. Minimal pleural effusions may exist",
    ),
    ("uncertainty", "significant"): ("Whether this is pneumonia is radiographically indeterminate.", "Pneumonia exists"),
    ("uncertainty", "insignificant"): ("A possible infiltrate is suggested", "An infiltrate is likely present"),
    ("terminology", "significant"): ("A cavitary lesion, suggesting tuberculosis", "A hole, suggesting infection"),
    ("terminology", "insignificant"): ("A 3-cm mass", "A 3-cm lesion"),
    ("noise", "significant"): ("Irregularly marginated 3-cm mass in the lingula has grown",
                               "3-cm lingula margins has been growing irregularly"),
    ("noise", "insignificant"): ("subtle opacity may represent atelectasis", "subtle opaciti may represent atelectasi"),
    ("stylistic", "significant"): ("Bilateral left greater than right pleural effusion",
                                   "Fluid accumulation on both sides of the chest, more on the right"),
    ("stylistic", "insignificant"): ("lung... pulmonary edema... pleural effusions...",
                                     "pleural effusions... lung...pulmonary edema..."),
}

DEFAULT_TEMPLATE = """You are an experienced radiologist helping to build a benchmark of radiology report pairs.
Rewrite the ground-truth chest X-ray report below by modifying ONLY ONE targeted aspect, and keep every other part of \
the report word for word.

Targeted aspect: {aspect_label} -- {aspect_definition}
Error type: {error_type} -- {error_type_definition}.
Clinical significance: {significance_definition}.

Example of a {significance} {aspect_label} change:
GT: {example_gt}
ME: {example_me}

Ground-truth report:
{report}

Answer with only a JSON object with these keys:
"rewritten_report": the full rewritten report;
"original_span": the exact text of the ground-truth report that you changed (empty if you only added text);
"rewritten_span": the exact text that replaces it in the rewritten report;
"explanation": one or two sentences on what changed and why it is clinically {significance}."""


class LLMRewriteOutput(BaseModel):
    """The JSON the model must return."""

    rewritten_report: str = Field(..., min_length=1)
    original_span: str = ""
    rewritten_span: str = ""
    explanation: str = ""


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


def strip_reasoning(text: str) -> str:
    """Remove a DeepSeek-R1 reasoning trace (``<think>...</think>``, or everything up to a lone
    ``</think>`` when the chat template opened the tag) so that its braces cannot pass for JSON."""
    if not isinstance(text, str):
        return text
    text = _THINK.sub("", text)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    return text


def build_prompt(report: str, aspect: str, significance: str, error_type: str, *, template: str = DEFAULT_TEMPLATE,
                 definitions: Mapping[str, str] | None = None,
                 examples: Mapping[tuple[str, str], tuple[str, str]] | None = None) -> str:
    """The rewrite prompt for one (report, aspect, significance, error type)."""
    check_cell(aspect, significance, error_type)
    defs = dict(ASPECT_DEFINITIONS, **(definitions or {}))
    ex = dict(TABLE2_EXAMPLES, **(examples or {}))
    gt, me = ex.get((aspect, significance), ("", ""))
    try:
        return template.format(
            aspect=aspect, aspect_label=ASPECT_LABELS[aspect], aspect_definition=defs[aspect], error_type=error_type,
            error_type_definition=ERROR_TYPE_DEFINITIONS[error_type], significance=significance,
            significance_definition=SIGNIFICANCE_DEFINITIONS[significance], example_gt=gt, example_me=me, report=report,
        )
    except KeyError as err:
        raise ParamsError(f"The rewrite prompt template uses an unknown field {err}. Allowed: aspect, aspect_label, "
                          "aspect_definition, error_type, error_type_definition, significance, "
                          "significance_definition, example_gt, example_me, report.") from None


def _declared_gt_span(gt: str, original: str, envelope: tuple[int, int]) -> tuple[int, int] | None:
    """Where the model's ``original_span`` sits in ``gt`` (the occurrence nearest the actual change)."""
    original = original.strip()
    if not original:
        return None
    hits = [m.start() for m in re.finditer(re.escape(original), gt)]
    if not hits:
        return None
    start = min(hits, key=lambda h: abs(h - envelope[0]))
    return start, start + len(original)


def verify_llm_rewrite(gt: str, out: LLMRewriteOutput) -> tuple[bool, str, tuple[tuple[int, int], tuple[int, int]] | None]:
    """``(ok, note, spans)``: the change envelope must lie inside the declared span; a pure insertion
    (empty ``original_span``) must not remove GT text."""
    me = out.rewritten_report
    env = changed_envelope(gt, me)
    if env is None:
        return False, "the rewrite is identical to the GT", None
    (ga, gb), (ma, mb) = env
    declared = _declared_gt_span(gt, out.original_span, (ga, gb))
    if declared is None:
        if out.original_span.strip():
            return False, f"the declared original span {out.original_span[:60]!r} is not in the GT", env
        if gt[ga:gb].strip() and not me[ma:mb].count(gt[ga:gb].strip()):
            return False, "declared as a pure insertion but GT text was changed: " + gt[ga:gb][:60], env
        return True, "pure insertion; text outside it unchanged", env
    da, db = declared
    if da <= ga and gb <= db:
        shift = len(me) - len(gt)
        spans = ((da, db), (da, db + shift))
        problems = check_outside(gt, me, [spans])
        if not problems:
            return True, "all changes inside the declared span", spans
    return False, (f"the rewrite changed text outside the declared span {gt[da:db][:60]!r}: "
                   f"{gt[ga:gb][:60]!r} -> {me[ma:mb][:60]!r}"), env


@dataclass
class LLMEngine:
    """LLM rewriting behind the engine interface (:meth:`rewrite`).

    ``generate_fn``: ``prompt -> text`` (or ``list[prompt] -> list[text]`` with ``batched=True``): a
    fake in tests, :func:`generator_from_model` for a real model. ``template``/``definitions``/
    ``examples``: the prompt parameters. ``model``: recorded in provenance. For the aspects whose
    error type the paper samples (``task.error_type is None``), the error type is drawn per task
    from the seed.
    """

    generate_fn: Callable[..., Any]
    template: str = DEFAULT_TEMPLATE
    definitions: Mapping[str, str] | None = None
    examples: Mapping[tuple[str, str], tuple[str, str]] | None = None
    batched: bool = False
    max_retries: int = 2
    model: str = "unknown"
    name: str = "llm"
    batch_hint: int = 0
    summaries: list[JsonBatchSummary] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        import hashlib

        return {"engine": self.name, "model": self.model, "max_retries": self.max_retries,
                "template_sha256": hashlib.sha256(self.template.encode()).hexdigest()[:16]}

    def _error_type(self, task: RewriteTask) -> str:
        if task.error_type is not None:
            return task.error_type
        rng = random.Random(derive_seed(task.seed, "llm-error-type", task.study_id, task.aspect, task.significance))
        return ERROR_TYPES[rng.randrange(len(ERROR_TYPES))]

    def _wrapped(self) -> Callable[..., Any]:
        fn = self.generate_fn
        if self.batched:
            return lambda prompts: [strip_reasoning(o) for o in fn(prompts)]
        return lambda prompt: strip_reasoning(fn(prompt))

    def rewrite(self, tasks: Sequence[RewriteTask], labeler: Any = None) -> list[Outcome]:
        """One outcome per task: a verified pair, or a rejected row saying why (unparseable or unverified)."""
        if not tasks:
            return []
        etypes = [self._error_type(t) for t in tasks]
        prompts = [build_prompt(t.gt, t.aspect, t.significance, e, template=self.template,
                                definitions=self.definitions, examples=self.examples) for t, e in zip(tasks, etypes)]
        results, summary = call_json_batch(self._wrapped(), prompts, LLMRewriteOutput, max_retries=self.max_retries,
                                           batched=self.batched, on_generate_error="record",
                                           ids=[f"{t.study_id}/{t.aspect}/{t.significance}" for t in tasks])
        self.summaries.append(summary)
        out: list[Outcome] = []
        for t, e, res in zip(tasks, etypes, results):
            if not res.ok:
                pair = make_pair(t, t.gt, "", [((0, 0), (0, 0))], "", engine=self.name, rule=self.model,
                                 error_type=e, verified=False,
                                 note=f"unparseable after {res.attempts} attempt(s): {res.error}")
                out.append(Outcome("unparseable", None, [pair]))
                continue
            o: LLMRewriteOutput = res.value
            ok, note, spans = verify_llm_rewrite(t.gt, o)
            if res.repairs:
                note += f" (JSON repaired: {', '.join(res.repairs)})"
            spans_list = [spans] if spans is not None else [((0, 0), (0, 0))]
            pair = make_pair(t, t.gt, o.rewritten_report, spans_list, o.explanation, engine=self.name, rule=self.model,
                             error_type=e, verified=ok, note=note)
            out.append(Outcome("ok", pair, []) if ok else Outcome("unverified", None, [pair]))
        return out

    def counts(self) -> dict[str, int]:
        """JSON-call counts over every :meth:`rewrite` so far (ok / repaired / retried / failed)."""
        total = {"n": 0, "ok": 0, "clean": 0, "repaired": 0, "retried": 0, "failed": 0}
        for s in self.summaries:
            for k, v in s.counts().items():
                total[k] += v
        return total


def generator_from_model(model: Any, *, strategy: Mapping[str, Any] | None = None, max_new_tokens: int | None = None,
                         seed: int = 0, batch_size: int = 4, cache: Any = None, backend: str = "transformers",
                         chat_template: bool = True, **kwargs: Any) -> Callable[[list[str]], list[str]]:
    """A batched ``list[prompt] -> list[text]`` over :func:`radaudit.models.generate.generate`
    (chat template applied); defaults from :data:`PAPER_LLM`. Use with ``LLMEngine(..., batched=True)``.

    ``backend``: ``"transformers"`` (alias ``"hf"``) or ``"vllm"``; the engine is built once, at the
    first call, and kept for every later batch (a vLLM engine takes minutes to start). ``kwargs`` go
    to :func:`radaudit.models.backends.get_backend` (``device``, ``dtype``, ``trust_remote_code``,
    ``vllm.LLM`` options). Both engines get the same prompts and share cache entries.
    """
    strat = dict(strategy or PAPER_LLM["strategy"])
    mnt = int(max_new_tokens or PAPER_LLM["max_new_tokens"])

    @functools.lru_cache(maxsize=1)
    def _backend() -> Any:
        return get_backend(model, backend, **kwargs)

    def fn(prompts: list[str]) -> list[str]:
        gens = generate(_backend(), list(prompts), strat, seeds=seed, max_new_tokens=mnt, batch_size=batch_size,
                        cache=cache, chat_template=chat_template)
        return [g.text for g in gens]

    return fn
