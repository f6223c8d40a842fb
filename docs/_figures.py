"""Copy one figure per experiment from a demo run into ``docs/img/`` (a maintainer script, not part of the site).

    .venv/bin/python docs/_figures.py [OUTPUTS]   # OUTPUTS: an outputs folder with demo runs (default: outputs)

For each experiment it takes the newest ``<experiment>/*_demo`` run that has the chosen figure, scales it to at
most :data:`MAX_WIDTH` pixels wide (PIL, Lanczos) and writes ``docs/img/<experiment>.png``; ``docs/img/figures.json``
records which run and figure each came from. The figure is the one that answers the paper's question.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from PIL import Image

#: experiment -> the figure (``figures/<name>.png`` of a run) that answers its paper's question
FIGURES = {
    "data_overview": "sex",
    "decoding_erasure": "fig1_association_shift",
    "metric_metaeval": "auroc_context_ablation",
    "atomic_facts": "table2_kendall_forest",
    "modality_shift": "fig2ab_metrics",
    "synthetic_cxr": "table1_fidelity",
}
MAX_WIDTH = 900
IMG = Path(__file__).resolve().parent / "img"


def main(outputs: Path) -> None:
    record = {}
    for experiment, figure in FIGURES.items():
        runs = sorted((outputs / experiment).glob("*_demo"), reverse=True)
        runs = [r for r in runs if (r / "figures" / f"{figure}.png").is_file()]
        if not runs:
            print(f"{experiment}: no demo run with figures/{figure}.png under {outputs}; kept the old image")
            continue
        src = runs[0] / "figures" / f"{figure}.png"
        im = Image.open(src)
        if im.width > MAX_WIDTH:
            im = im.resize((MAX_WIDTH, round(im.height * MAX_WIDTH / im.width)), Image.Resampling.LANCZOS)
        im.save(IMG / f"{experiment}.png", optimize=True)
        record[experiment] = {"run": runs[0].name, "figure": f"{figure}.png", "size": list(im.size)}
        print(f"{experiment}: {runs[0].name}/figures/{figure}.png -> docs/img/{experiment}.png {im.size}")
    path = IMG / "figures.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**old, **record}, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("outputs"))
