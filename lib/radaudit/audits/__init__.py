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
"""
