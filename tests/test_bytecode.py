"""The install-time byte-compilation step (radaudit._bytecode, run by `make install`)."""

from __future__ import annotations

from radaudit._bytecode import LAZY_IMPORTS, _import, radaudit_modules


def test_it_lists_every_package_module_but_the_cli_entry():
    names = radaudit_modules()
    assert "radaudit.stats" in names and "radaudit.audits.synthetic_cxr.findings" in names
    assert "radaudit.__main__" not in names  # importing it would run the CLI (and exit)
    assert "radaudit._bytecode" not in names
    assert len(names) == len(set(names)) > 100


def test_a_missing_optional_library_is_skipped_not_fatal():
    assert _import("radaudit.stats") is True
    assert _import("a_module_that_is_not_installed_anywhere") is False
    assert "torch" in LAZY_IMPORTS and "matplotlib.pyplot" in LAZY_IMPORTS
