"""Experiment 0 — data overview: what each dataset holds before any audit uses it.

For every dataset that is asked for and present: counts (studies, patients, sections, images),
the sex and age distribution, the distribution of report length, the prevalence of the labels the
dataset ships with, and one example. Headline numbers carry a 95% bootstrap CI.

Choices
-------
- Resampling unit: the patient where every row has a ``patient_id`` (several studies of one
  patient are not independent), otherwise the study (row). The unit is reported with each table.
- Report length is counted in whitespace-separated words of findings + impression
  (:func:`radaudit.data.schema.report_text`); for pair datasets the candidate reports are counted
  too, as their own group (e.g. ``radpref · gpt``), so generated and reference lengths can be compared.
- "Sex not stated" is a category of its own, never dropped: for IU X-ray it is most reports,
  because sex is only known where the indication states it.
- Label prevalence uses the labels each dataset ships (IU X-ray Problems terms, the COVID image
  collection's finding, MIMIC-CXR/CheXpert labels) — no labeler is run here.

Where things are (one line per module)
--------------------------------------
- ``params.py``: :class:`Params`, the schema of ``params/data_overview/*.yaml``.
- ``data.py``: the datasets, loaded (:func:`load_all`); which of them hold one row per study; the bootstrap's unit.
- ``study.py``: the experiment's steps as the notebook runs them, after its inputs: words per report
  (:func:`report_lengths`), the examples shown (:func:`pick_examples`). No model, no expensive step.
- ``tables.py``: every table (counts, sex, age, lengths, labels, RadPref ratings, examples).
- ``plots.py``: the figures, one function each.
- ``findings.py``: :func:`headline_findings`, the run's ``findings.json`` (descriptive: sex, age, report length).

No ``rehearsal.py``: the registry's ``rehearsal`` is None, so ``--rehearse`` is refused (run the smoke preset).
"""

from radaudit.audits.data_overview.data import load_all, resampling_units
from radaudit.audits.data_overview.findings import headline_findings
from radaudit.audits.data_overview.params import (
    DatasetName,
    Params,
)
from radaudit.audits.data_overview.plots import (
    fig_age,
    fig_example_images,
    fig_labels,
    fig_length,
    fig_ratings,
    fig_sex,
)
from radaudit.audits.data_overview.study import pick_examples, report_lengths, word_count
from radaudit.audits.data_overview.tables import (
    MIN_N_MEAN,
    SEX_ORDER,
    age_table,
    counts_table,
    example_markdown,
    label_prevalence,
    length_table,
    rating_table,
    sex_table,
)

__all__ = [
    "age_table", "counts_table", "DatasetName", "example_markdown", "fig_age", "fig_example_images",
    "fig_labels", "fig_length", "fig_ratings", "fig_sex", "label_prevalence", "length_table", "load_all",
    "headline_findings", "MIN_N_MEAN", "Params", "pick_examples", "rating_table", "report_lengths", "resampling_units",
    "SEX_ORDER",
    "sex_table", "word_count",
]
