"""Code from the Hub runs only when the user says so (issue 24)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from radaudit.errors import ParamsError

LIB = Path(__file__).resolve().parents[2] / "lib"


def test_no_hard_coded_trust_remote_code():
    hits = [f"{p}:{i}" for p in LIB.rglob("*.py") for i, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"trust_remote_code\s*=\s*True", line)]
    assert hits == []


def test_radedit_needs_the_flag(tmp_path):
    pytest.importorskip("diffusers")
    from radaudit.models.diffusion import load_pipeline

    with pytest.raises(ParamsError, match="trust_remote_code: true"):
        load_pipeline(tmp_path, family="radedit", device="cpu", dtype="fp32")
