"""config.check_unique_names: the one rule behind modality_shift's ``models`` and synthetic_cxr's ``generators``
(issue 39 item 5: the two validators shared it line for line)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from radaudit.config import check_unique_names


def test_unique_names_pass():
    check_unique_names(["a", "b", "c"], "models")  # returns None, raises nothing


@pytest.mark.parametrize("names", [[], ["a", "b", "a"]])
def test_empty_or_repeated_names_fail_with_the_key_and_the_names(names):
    with pytest.raises(ValueError) as err:
        check_unique_names(names, "generators")
    assert str(err.value) == f"generators need at least one entry and unique names; got {names}"


def test_modality_shift_models_keep_their_message():
    from radaudit.audits.modality_shift.params import ModelSpec, Params

    with pytest.raises(ValidationError, match=r"models need at least one entry and unique names; got \['m', 'm'\]"):
        Params(models=[ModelSpec(name="m", model="x"), ModelSpec(name="m", model="y")])
    with pytest.raises(ValidationError, match=r"models need at least one entry and unique names; got \[\]"):
        Params(models=[])


def test_synthetic_cxr_generators_keep_their_message():
    from radaudit.audits.synthetic_cxr.params import GeneratorEntry, Params

    twice = [GeneratorEntry(name="g", kind="memoriser"), GeneratorEntry(name="g", kind="degrader")]
    with pytest.raises(ValidationError, match=r"generators need at least one entry and unique names; got \['g', 'g'\]"):
        Params(generators=twice)
    # the kind check after it still runs: unique names, unknown kind
    with pytest.raises(ValidationError, match="unknown generator kind"):
        Params(generators=[GeneratorEntry(name="g", kind="no-such-kind")])
