"""Model layer: one way to name, resolve and load the models the experiments use.

- :mod:`radaudit.models.resolver`: a model *spec* (hub id, ``id@revision``, local folder, or
  ``pypi:<distribution>/<path inside it>``) → a :class:`~radaudit.models.resolver.ResolvedModel`,
  and the loaders built on it (``load_text_encoder``).

Nothing here imports torch or transformers at import time; the loaders import them when called.
"""
