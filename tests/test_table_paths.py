"""Tables carry no folder of the machine that made them (issue 42): radaudit.session's table writer replaces the data
root, the cache and the project folder by their words, so the same run in another folder writes the same tables."""

from __future__ import annotations

import pandas as pd

from radaudit.paths import machine_paths, scrub_paths
from radaudit.session import _without_machine_paths


class _P:
    def __init__(self, **kw):
        self.kw = kw

    def model_dump(self, mode="json"):
        return self.kw


def test_machine_folders_in_text_cells_become_their_words(tmp_path, monkeypatch):
    data, cache = tmp_path / "data", tmp_path / "cache"
    monkeypatch.setenv("RADAUDIT_CACHE", str(cache))
    monkeypatch.delenv("RADAUDIT_DATA", raising=False)
    df = pd.DataFrame({"image_path": [f"{data}/covid/images/a.png", f"{cache}/marked_images/b.png", None],
                       "sample_id": ["a.png", "b.png", "c.png"], "weight": [0.1, 0.2, 0.3]})
    out = _without_machine_paths(df, _P(data_root=str(data)))
    assert out["image_path"].tolist()[:2] == ["$RADAUDIT_DATA/covid/images/a.png", "$RADAUDIT_CACHE/marked_images/b.png"]
    assert out["image_path"].isna().tolist() == [False, False, True]
    assert out["sample_id"].tolist() == ["a.png", "b.png", "c.png"] and out["weight"].tolist() == [0.1, 0.2, 0.3]
    assert df["image_path"].iloc[0].startswith(str(data))  # the caller's frame is left as it was
    # the same table made from another folder reads the same
    other = tmp_path / "elsewhere"
    df2 = df.assign(image_path=[f"{other}/covid/images/a.png", f"{cache}/marked_images/b.png", None])
    out2 = _without_machine_paths(df2, _P(data_root=str(other)))
    assert out2.equals(out)


def test_the_longest_folder_wins():
    words = {"/home/u/lab": "<project>", "/home/u": "~", "/home/u/lab/.cache/radaudit": "$RADAUDIT_CACHE"}
    assert scrub_paths("/home/u/lab/.cache/radaudit/x /home/u/lab/y /home/u/z", words) == \
        "$RADAUDIT_CACHE/x <project>/y ~/z"
    assert "<project>" in machine_paths().values()
