"""Model inference, built once for every experiment (``demo`` on CPU and ``paper`` on GPU share it).

- :mod:`~radaudit.models.resolver`: model specs (hub id[@revision], local path, ``pypi:`` spec,
  GGUF files) -> loadable folders; device/dtype; ``load_text_encoder``, ``load_causal_lm``.
- :mod:`~radaudit.models.decoding`: the named decoding strategies (paper 000 §3) as data.
- :mod:`~radaudit.models.generate`: batched text generation with per-sample seeds.
- :mod:`~radaudit.models.backends`: transformers (default) and vLLM (optional) backends.
- :mod:`~radaudit.models.cache`: the content-addressed generation cache (resume, reruns).
- :mod:`~radaudit.models.vlm`: vision-language inference and first-token yes/no scoring (its loading in
  :mod:`~radaudit.models.vlm_loading`, its yes/no answer reading in :mod:`~radaudit.models.vlm_answers`).
- :mod:`~radaudit.models.attention`: attention share on image vs text tokens (paper 003 §2.3).
- :mod:`~radaudit.models.llm_json`: prompt -> schema-validated JSON with repair, retries, counts.
- :mod:`~radaudit.models.json_extract`: JSON out of a reply: reasoning blocks, extraction, the named repairs.
- :mod:`~radaudit.models.encoders`: text and image encoders (MiniLM, InceptionV3-FID, any HF vision backbone).
- :mod:`~radaudit.models.train`: a small deterministic training loop with a model card.

Nothing here imports torch or transformers until a function that needs them is called.
"""
