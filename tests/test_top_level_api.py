"""The top level of benchsel_lib: a short list of the names most users need, each of which resolves."""
from __future__ import annotations

import importlib

import pytest

import benchsel_lib as bs

MAX_TOP_LEVEL = 30


def test_the_top_level_exports_at_most_30_names():
    names = [n for n in bs.__all__ if n != "__version__"]
    assert len(names) <= MAX_TOP_LEVEL, f"{len(names)} top-level names (at most {MAX_TOP_LEVEL}): {names}"
    assert len(set(bs.__all__)) == len(bs.__all__) and sorted(names) == sorted(bs._EXPORTS)
    assert dir(bs) == sorted(bs.__all__)


@pytest.mark.parametrize("name", sorted(bs._EXPORTS))
def test_every_exported_name_resolves_to_the_object_its_module_defines(name):
    module = importlib.import_module(f"benchsel_lib.{bs._EXPORTS[name]}")
    assert getattr(bs, name) is getattr(module, name)


def test_a_name_that_is_not_exported_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'eigenspectrum'"):
        bs.eigenspectrum  # noqa: B018 -- from benchsel_lib.studies.diagnostics now
    assert bs.__version__
