"""The experiments, one package each; a newcomer opens the package named for the paper.

====================  ==========================================================  =======================
package               paper (``../shared/papers/``)                                notebook
====================  ==========================================================  =======================
``data_overview``     (what the datasets hold)                                     ``00_data_overview``
``decoding_erasure``  Parikh et al., Measuring What VLMs Don't Say (000)           ``01_decoding_erasure``
``metric_metaeval``   Li et al., ReEvalMed (001)                                   ``02_metric_metaeval``
``atomic_facts``      Chang et al., AtomiMed (002)                                 ``03_atomic_facts``
``modality_shift``    Restrepo et al., Selective Modality Shifting (003)           ``04_modality_shift``
``synthetic_cxr``     Dutt et al., CheXGenBench (004)                              ``05_synthetic_cxr``
====================  ==========================================================  =======================

Each package's ``__init__`` exports what its notebook and the README use. Experiments never import
one another: code two experiments need lives one layer down (``radaudit.metrics``, ``radaudit.models``,
``radaudit.data``, ...); the import-linter contract in ``pyproject.toml`` checks it.

One layout in every package
---------------------------
The same six modules, named the same way and meaning the same thing in every experiment, so a reader who knows
one package finds their way in the others (``tests/test_architecture.py`` checks the names):

- ``params.py``: ``Params``, the schema of ``params/<experiment>/*.yaml``. It validates and does nothing else.
- ``data.py``: the experiment's inputs: reading, building and selecting the datasets it evaluates (from a data
  root, a path or the run's ``Params``), and how their rows are grouped for resampling.
- ``study.py``: the experiment's steps in the order the notebook runs them, after its inputs: the functions the
  notebook calls that do the work of a step (load the models, run the expensive step: generate, score, extract
  features; collect the per-item results the tables read), each delegating to the experiment's specific modules
  and to the layers below. It lays out no table, draws no figure and judges no claim.
- ``tables.py``: the tables' layouts (the paper's tables and the run's own) and the run summary in words.
- ``plots.py``: the figures, one function each.
- ``findings.py``: ``headline_findings``, the run's ``findings.json`` (each number, its control, a verdict).

Where the registry (:mod:`radaudit.experiments`) names one: ``rehearsal.py`` (``rehearse(params, workdir)``, the
``--rehearse`` dress rehearsal) and ``shards.py`` (the ``--shard i/n`` step). Everything else is what is specific
to the paper, in a module named for what it holds (``agreement.py``, ``erasure.py``, ``generators.py``, ...), never
for a library layer (``metrics.py``, ``stats.py``, ``text.py``, ...: a reader would look for it there). Known
exception: ``models.py`` (the project-trained stand-ins) in decoding_erasure, modality_shift and synthetic_cxr,
kept because its path is part of each stand-in's recipe id (``radaudit.audits.<e>.models:RECIPE_VERSION`` in the
registry's ``stand_ins``): renaming it would change the recipe ids and invalidate the verdict-stability benchmark.
"""
