"""A search fixed in blocks (``blocks``): above a block size whose choice is not nested, every candidate keeps it."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib.method.pipeline import Pipeline, clone
from benchsel_lib.method.inner_search import SearchSettings, pipeline_path
from benchsel_lib.method.selectors import Selector

_data = partial(low_rank_scores, m=40, n=10, noise=0.5, missing=0.1, standardize=True)
# candidates whose selections are not nested (anchor points select per size): every choice at a block is kept
_KW = dict(seed=1, levels=(), selectors=("anchors", "imputed-lasso"), predictors=("gaussian", "ridge"))


def _same(a, b) -> bool:
    """The same choice, and the same inner R^2 up to rounding (a search that scores fewer sizes batches its
    predictions differently)."""
    return (a.k, a.selector, a.predictor, list(a.selection)) == (b.k, b.selector, b.predictor, list(b.selection)) \
        and a.inner_r2 == pytest.approx(b.inner_r2, rel=1e-12, abs=1e-12)


def test_the_sizes_up_to_the_first_block_are_those_of_the_search_without_blocks():
    X = _data(31)
    plain = pipeline_path(X, 8, settings=SearchSettings(**_KW))
    blocked = pipeline_path(X, 8, settings=SearchSettings(blocks=(4,), **_KW))
    assert [r.k for r in blocked] == list(range(1, 9))
    assert all(_same(a, b) for a, b in zip(plain[:4], blocked[:4]))


def test_every_selection_above_a_block_starts_with_the_benchmarks_chosen_at_the_block():
    X = _data(30)
    recs = {r.k: r for r in pipeline_path(X, 9, settings=SearchSettings(blocks=(3, 6), **_KW))}
    for k in range(4, 10):
        block = 3 if k <= 6 else 6
        assert list(recs[k].selection[:block]) == list(recs[block].selection)
    assert list(recs[9].selection[:3]) == list(recs[3].selection)


def test_a_block_asks_for_no_size_yet_fixes_the_larger_ones():
    X = _data(33)
    both = pipeline_path(X, 8, ks=[3, 8], settings=SearchSettings(blocks=(3,), **_KW))
    alone = pipeline_path(X, 8, ks=[8], settings=SearchSettings(blocks=(3,), **_KW))
    assert [r.k for r in alone] == [8]
    assert _same(alone[0], both[1])


def test_a_block_at_or_above_the_largest_size_changes_nothing():
    X = _data(34)
    plain = pipeline_path(X, 5, ks=[2, 5], settings=SearchSettings(**_KW))
    assert all(_same(a, b) for a, b in zip(plain, pipeline_path(X, 5, ks=[2, 5], settings=SearchSettings(blocks=(5, 7), **_KW))))


def test_without_blocks_the_larger_selection_need_not_contain_the_smaller():
    # what the blocks are for: on this matrix the search without them picks a k = 8 set that drops some of the
    # benchmarks of its k = 3 choice (checked here so that the test above is not vacuous)
    X = _data(32)
    recs = {r.k: r for r in pipeline_path(X, 7, ks=[3, 7], settings=SearchSettings(**_KW))}
    assert not set(recs[3].selection) <= set(recs[7].selection)
    blocked = {r.k: r for r in pipeline_path(X, 7, ks=[3, 7], settings=SearchSettings(blocks=(3,), **_KW))}
    assert _same(blocked[3], recs[3]) and set(blocked[3].selection) <= set(blocked[7].selection)


def test_a_candidate_that_cannot_keep_the_choice_is_left_out_above_the_block_and_named():
    X = _data(35)
    names = [f"b{j}" for j in range(X.shape[1])]
    first = pipeline_path(X, 3, ks=[3], names=names, settings=SearchSettings(selectors=("anchors",), predictors=("gaussian",), stack=False, seed=1, levels=()))[0]
    banned = names[first.selection[0]]
    selectors = ("anchors", Selector(objective="random", exclude=(banned,), name="random-x"))
    recs = {r.k: r for r in pipeline_path(X, 6, ks=[3, 6], names=names, settings=SearchSettings(selectors=selectors, predictors=("gaussian",), stack=False, blocks=(3,), choice="best", seed=1, levels=()))}
    assert recs[3].selector == "anchors" and banned in [names[j] for j in recs[3].selection]
    assert recs[3].note is None
    assert "random-x left out above k=3" in recs[6].note and banned in recs[6].note
    assert recs[6].selector == "anchors" and set(recs[3].selection) <= set(recs[6].selection)


def test_a_pipeline_with_blocks_fits_the_path_of_the_search_with_them():
    X = _data(36)
    M = as_matrix(X)
    pipe = Pipeline.auto(k=8, blocks=(4,), selectors=("anchors",), seed=2)
    assert pipe.get_params()["blocks"] == (4,) and clone(pipe).blocks == (4,)
    path = pipe.fit_path(M.scores, names=list(M.benchmarks), k_max=8, ks=[4, 8], intervals=False)
    steps = {st.k: st for st in path.steps}
    assert set(steps[4].selected) <= set(steps[8].selected)
    assert list(steps[8].selected[:4]) == list(steps[4].selected)


@pytest.mark.parametrize("bad", [(0,), (2, -1), ("5",), (True,), 2.5])
def test_bad_blocks_are_refused_by_name(bad):
    X = _data(37)
    with pytest.raises(ValueError, match="blocks"):
        pipeline_path(X, 5, settings=SearchSettings(blocks=bad, **_KW))
    with pytest.raises(ValueError, match="blocks"):
        Pipeline.auto(k=5, blocks=bad).fit(as_matrix(X))


def test_blocks_keep_the_numbers_of_a_search_determined_by_its_seed():
    X = _data(39)
    a = pipeline_path(X, 7, settings=SearchSettings(blocks=(3,), **_KW))
    b = pipeline_path(X, 7, settings=SearchSettings(blocks=(3,), **_KW))
    assert all(_same(x, y) for x, y in zip(a, b))
    assert np.isfinite([r.inner_r2 for r in a]).all()


_NESTED_ONLY = dict(_KW, selectors=("mi", "entropy-obs", "random"))
# an unnested candidate that these matrices do not choose at the block sizes 2, 4 and 6: the path is searched in
# segments (with nested candidates alone it is the one search without blocks)
_MIXED = dict(_KW, selectors=("mi", "entropy-obs", "random", "imputed-lasso"))
_ANCHORS = dict(seed=1, levels=(), selectors=("anchors",), predictors=("gaussian", "ridge"))


def test_keeping_only_unnested_choices_leaves_a_nested_choice_to_the_path_without_blocks():
    X = _data(30)
    plain = pipeline_path(X, 7, ks=[3, 7], settings=SearchSettings(**_NESTED_ONLY))
    kept = pipeline_path(X, 7, ks=[3, 7], settings=SearchSettings(blocks=(3,), **_NESTED_ONLY))
    assert all(_same(a, b) for a, b in zip(plain, kept))
    assert not set(plain[0].selection) <= set(plain[1].selection)  # so keeping the block would change k = 7


def test_with_only_nested_candidates_blocks_kept_after_unnested_choices_are_the_one_search(monkeypatch):
    from benchsel_lib.method import inner_search

    X = _data(40)
    calls = []
    inner = inner_search._search_path

    def spy(*args, **kw):
        calls.append(kw.get("first", 1))
        return inner(*args, **kw)

    plain = pipeline_path(X, 8, settings=SearchSettings(**_NESTED_ONLY))
    monkeypatch.setattr(inner_search, "_search_path", spy)
    kept = pipeline_path(X, 8, settings=SearchSettings(blocks=(2, 4, 6), **_NESTED_ONLY))
    assert calls == [1]  # one search, from size 1
    assert [(r.name, r.selection, r.inner_r2) for r in kept] == [(r.name, r.selection, r.inner_r2) for r in plain]


@pytest.mark.parametrize("choice", ["monotone", "best"])
def test_a_path_searched_in_segments_after_nested_choices_chooses_as_one_search_of_every_size(choice):
    # with every choice nested no block is kept, and the path is the one without blocks, searched block by
    # block with the choice at each block size looked back at: every size chooses as the one search does
    X = _data(43)
    plain = pipeline_path(X, 8, settings=SearchSettings(choice=choice, **_MIXED))
    assert all(plain[k - 1].selector != "imputed-lasso" for k in (2, 4, 6))  # so no block is kept
    segmented = pipeline_path(X, 8, settings=SearchSettings(choice=choice, blocks=(2, 4, 6), **_MIXED))
    assert [r.k for r in segmented] == list(range(1, 9))
    assert all(_same(a, b) for a, b in zip(plain, segmented))


def test_a_path_searched_in_segments_is_planned_as_one_search_of_every_size(monkeypatch):
    # a budget that the search of every size exceeds and that of one segment alone would not: the segments
    # still run on the subsample that the whole path's plan draws
    from benchsel_lib.method import plan

    monkeypatch.setattr(plan, "SEARCH_MIN_MODELS", 40)  # so that an 80-model search can be subsampled
    X = _data(41, m=80)
    cost = partial(plan.search_cost, 80, 10, k=8, selectors=_MIXED["selectors"],
                   predictors=_MIXED["predictors"], observed=float((~np.isnan(X)).mean()))
    budget = cost(n_ks=5)
    assert cost(n_ks=8) > budget
    plain = pipeline_path(X, 8, settings=SearchSettings(budget=budget, **_MIXED))
    assert all(plain[k - 1].selector != "imputed-lasso" for k in (2, 4, 6))  # so no block is kept
    segmented = pipeline_path(X, 8, settings=SearchSettings(budget=budget, blocks=(2, 4, 6), **_MIXED))
    assert plain[0].plan is not None and "of the 80 models" in plain[0].plan
    assert [r.plan for r in segmented] == [r.plan for r in plain]
    assert all(_same(a, b) for a, b in zip(plain, segmented))


@pytest.mark.parametrize("choice", ["monotone", "best"])
def test_after_kept_blocks_a_nested_choice_returns_to_the_path_without_blocks(choice):
    # anchor points chosen at 2 and 4 are kept, the entropy selection chosen at 6 is not: sizes 7 and 8 are
    # those of the path without blocks, whose choices look back along its own path from size 3 on
    X = _data(52)
    kw = dict(_ANCHORS, selectors=("anchors", "mi", "entropy-obs"), choice=choice)
    plain = pipeline_path(X, 8, settings=SearchSettings(**kw))
    recs = pipeline_path(X, 8, settings=SearchSettings(blocks=(2, 4, 6), **kw))
    assert [recs[k - 1].selector for k in (2, 4, 6)] == ["anchors", "anchors", "entropy-obs"]
    assert [r.selector for r in plain[2:4]] != [r.selector for r in recs[2:4]]  # the kept blocks changed these
    assert all(_same(a, b) for a, b in zip(plain[6:], recs[6:]))


def test_above_a_kept_block_the_path_without_blocks_is_not_searched(monkeypatch):
    # anchor points, the only candidate, are chosen (and kept) at 3: the search without blocks stops there,
    # and the sizes above are searched once, from the kept block
    from benchsel_lib.method import inner_search

    calls = []
    inner = inner_search._search_path

    def spy(train, k_max, settings, data, *, ks, first=1, **kw):
        calls.append((first, max(ks), any(getattr(sel, "initial", ()) for sel in settings.selectors)))
        return inner(train, k_max, settings, data, ks=ks, first=first, **kw)

    monkeypatch.setattr(inner_search, "_search_path", spy)
    pipeline_path(_data(32), 7, ks=[3, 7], settings=SearchSettings(blocks=(3,), **_ANCHORS))
    assert calls == [(1, 3, False), (3, 7, True)]


def test_keeping_only_unnested_choices_keeps_a_choice_of_anchor_points():
    X = _data(32)
    plain = {r.k: r for r in pipeline_path(X, 7, ks=[3, 7], settings=SearchSettings(**_ANCHORS))}
    assert not set(plain[3].selection) <= set(plain[7].selection)  # anchor points' sets are not nested here
    kept = pipeline_path(X, 7, ks=[3, 7], settings=SearchSettings(blocks=(3,), **_ANCHORS))
    assert _same(kept[0], plain[3]) and set(kept[0].selection) <= set(kept[1].selection)


def test_auto_keeps_a_choice_at_five_only_where_its_selector_is_not_nested():
    pipe = Pipeline.auto()
    assert pipe.blocks == (5,) and clone(pipe).get_params()["blocks"] == (5,)
    assert Pipeline.auto(blocks=()).blocks == ()
