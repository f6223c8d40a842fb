"""Shared fixtures.

``shared_data`` is the lab's real public data (``../shared/data`` or ``$RADAUDIT_DATA``). Tests that
need it are skipped when it is absent, unless ``RADAUDIT_REQUIRE_DATA=1`` (set by ``.ci/run``), in
which case its absence is an error: CI must never pass by skipping the real-data tests.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from radaudit.data.root import ENV_VAR, default_candidates

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _find_shared() -> Path | None:
    if os.environ.get(ENV_VAR):
        p = Path(os.environ[ENV_VAR])
        return p if p.is_dir() else None
    for c in default_candidates():
        if c.is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    root = _find_shared()
    if root is None:
        if os.environ.get("RADAUDIT_REQUIRE_DATA") == "1":
            pytest.fail(f"RADAUDIT_REQUIRE_DATA=1 but no data root was found (set {ENV_VAR})")
        pytest.skip(f"no real data root found (set {ENV_VAR} to ../shared/data)")
    return root


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
