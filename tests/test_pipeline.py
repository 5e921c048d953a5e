"""The Pipeline contract: fit, selected, predict in original units, scikit-learn conventions, the CV protocol."""
from __future__ import annotations

import ast
import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib import (
    Correlation,
    GaussianIntervals,
    Pipeline,
    Scaling,
    Selector,
    clone,
    cross_validate,
    estimate_correlation,
    load_matrix,
)
from benchsel_lib.cli import main as cli_main
from benchsel_lib.method.scaling import fit_standardizer

PACKAGE = Path(__file__).resolve().parents[1] / "benchsel_lib"


def _scores(seed: int = 0, m: int = 60, n: int = 8, missing: float = 0.0) -> np.ndarray:
    return 50 + 10 * low_rank_scores(seed, m, n, missing=missing)


# --------------------------------------------------------------------------- scikit-learn conventions
def test_constructor_only_stores_parameters_and_fit_validates_them():
    p = Pipeline(k=3, selector="no-such-selector")  # no error yet: the constructor only stores
    assert p.get_params(deep=False)["selector"] == "no-such-selector"
    with pytest.raises(ValueError, match="unknown selector 'no-such-selector'"):
        p.fit(as_matrix(_scores()))
    with pytest.raises(ValueError, match="unknown predictor 'oracle'"):
        Pipeline(predictor="oracle").fit(as_matrix(_scores()))
    with pytest.raises(ValueError, match="k must be"):
        Pipeline(k=0).fit(as_matrix(_scores()))


def test_fit_returns_the_pipeline_and_selects_k_named_benchmarks():
    m = as_matrix(_scores())
    p = Pipeline.paper(k=3, objective="mi")
    assert p.fit(m) is p
    assert len(p.selected) == 3 and set(p.selected) <= set(m.benchmarks)
    assert p.selected == [m.benchmarks[j] for j in p.selection_.order]


def test_get_params_set_params_and_clone_follow_scikit_learn():
    p = Pipeline.paper(k=4, objective="entropy", config="early")
    deep = p.get_params()
    assert deep["k"] == 4 and deep["selector__objective"] == "entropy" and deep["correlation__config"] == "early"
    q = clone(p).set_params(selector__tie_break="argmax", k=2)
    assert q.selector.tie_break == "argmax" and q.k == 2 and p.selector.tie_break == "auto"
    assert not hasattr(clone(p.fit(as_matrix(_scores()))), "selection_")
    with pytest.raises(ValueError, match="invalid parameter 'kk'"):
        p.set_params(kk=3)


def test_using_a_pipeline_before_fit_says_so():
    with pytest.raises(ValueError, match="not fitted"):
        Pipeline.paper(k=2).predict({"b0": 1.0})
    with pytest.raises(ValueError, match="not fitted"):
        _ = Pipeline.paper(k=2).selected


# --------------------------------------------------------------------------- predictions
def test_paper_pipeline_predicts_the_gaussian_conditional_mean_in_original_units():
    X = _scores(3)
    m = as_matrix(X)
    p = Pipeline.paper(k=2, objective="mi").fit(m)
    given = {b: float(X[0, m.benchmarks.index(b)]) for b in p.selected}
    out = p.predict(given, level=0.8)
    # independent computation: standardize, correlation, Eq. cond-mean with ridge 1e-2, back to units
    st = fit_standardizer(X)
    R = estimate_correlation(X).corr
    A = [m.benchmarks.index(b) for b in given]
    T = [j for j in range(X.shape[1]) if j not in A]
    z = (np.array(list(given.values())) - st.mean[A]) / st.std[A]
    W = np.linalg.solve(R[np.ix_(A, A)] + 1e-2 * np.eye(len(A)), R[np.ix_(A, T)])
    mean = st.mean[T] + st.std[T] * (z @ W)
    sd = st.std[T] * np.sqrt(np.diag(R[np.ix_(T, T)] - R[np.ix_(T, A)] @ W))
    np.testing.assert_allclose(out.loc[[m.benchmarks[j] for j in T], "mean"], mean, rtol=1e-10)
    np.testing.assert_allclose(out["sd"], sd, rtol=1e-10)
    np.testing.assert_allclose(out["upper"] - out["mean"], 1.2815515655446004 * sd, rtol=1e-10)
    assert list(out.index) == [m.benchmarks[j] for j in T] and out.index.name == "benchmark"


def test_auto_pipeline_predicts_every_other_benchmark_with_ordered_intervals():
    X = _scores(4, m=50, n=7, missing=0.2)
    m = as_matrix(X)
    p = Pipeline.auto(k=3, seed=1).fit(m)
    assert len(p.selected) == 3 and p.choice_ is not None
    i = int(np.flatnonzero(~np.isnan(X[:, [m.benchmarks.index(b) for b in p.selected]]).all(axis=1))[0])
    out = p.predict({b: float(X[i, m.benchmarks.index(b)]) for b in p.selected})
    assert set(out.index) == set(m.benchmarks) - set(p.selected)
    assert (out["lower"] <= out["mean"]).all() and (out["mean"] <= out["upper"]).all()
    assert out.attrs["choice"] == p.choice_.name and out.attrs["pipeline"] == "auto"


def test_given_benchmarks_other_than_the_selected_ones_are_conditioned_on():
    X = _scores(5)
    m = as_matrix(X)
    p = Pipeline.paper(k=2, objective="entropy").fit(m)
    other = [b for b in m.benchmarks if b not in p.selected][:3]
    out = p.predict({b: float(X[1, m.benchmarks.index(b)]) for b in other})
    assert set(out.index) == set(m.benchmarks) - set(other)
    direct = Pipeline.paper(k=3, objective="entropy").fit(m, revealed=other)
    pd.testing.assert_frame_equal(out, direct.predict({b: float(X[1, m.benchmarks.index(b)]) for b in other}))


def test_unknown_and_out_of_range_scores_are_refused_with_the_reason():
    m = as_matrix(_scores())
    p = Pipeline.paper(k=2).fit(m)
    with pytest.raises(ValueError, match="unknown benchmark 'b99'"):
        p.predict({"b99": 50.0})
    with pytest.raises(ValueError, match="out of range"):
        p.predict({"b0": 1e6})
    with pytest.raises(ValueError, match="level"):
        p.predict({"b0": 50.0}, level=1.5)


def test_several_models_are_predicted_from_their_own_given_scores():
    X = _scores(6)
    m = as_matrix(X)
    p = Pipeline.paper(k=2).fit(m)
    frame = pd.DataFrame(X[:2, :3], index=["new1", "new2"], columns=m.benchmarks[:3])
    frame.iloc[1, 2] = np.nan
    out = p.predict(frame)
    assert list(out.index.names) == ["model", "benchmark"]
    one = p.predict(dict(zip(m.benchmarks[:2], X[1, :2])))
    pd.testing.assert_frame_equal(out.loc["new2"], one, check_names=False, check_like=False, check_exact=False)


def test_paper_pipeline_gives_the_same_predictions_as_the_command(shared_data_dir):
    m = load_matrix("mteb", data_dir=shared_data_dir)
    given = {"ArguAna": 0.552, "SciFact": 0.701}
    out = Pipeline.paper(k=2, objective="mi").fit(m, revealed=list(given)).predict(given, level=0.9)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli_main(["predict", "--data", "mteb", "--data-dir", str(shared_data_dir), "--pipeline", "paper",
                       "--scores", "ArguAna=0.552,SciFact=0.701", "--format", "json"])
    assert rc == 0
    rows = pd.DataFrame(json.loads(buf.getvalue())["predictions"]).set_index("benchmark")
    np.testing.assert_allclose(rows.loc[out.index, "predicted"], out["mean"], rtol=1e-12)
    np.testing.assert_allclose(rows.loc[out.index, "lower"], out["lower"], rtol=1e-12)
    np.testing.assert_allclose(rows.loc[out.index, "upper"], out["upper"], rtol=1e-12)


# --------------------------------------------------------------------------- the CV protocol takes pipelines
def test_cross_validate_of_the_paper_pipeline_reproduces_mteb_mi_on_the_papers_folds(shared_data_dir):
    m = load_matrix("mteb", data_dir=shared_data_dir)
    df = cross_validate(m, [Pipeline.paper(k=5, objective="mi")], k_max=5, seed=42, scheme="paper", progress=False)
    assert round(float(df[df.k == 5].r2.mean()), 4) == 0.7620


def test_names_are_shorthands_for_the_same_pipelines():
    m = as_matrix(_scores(7, missing=0.2))
    kw = dict(k_max=3, n_folds=3, seed=2, progress=False, levels=(0.9,))
    by_name = cross_validate(m, ["entropy", "random", "lasso+ridge"], **kw)
    by_object = cross_validate(m, [Pipeline.paper(objective="entropy"), Pipeline.paper(objective="random"),
                                   Pipeline.from_name("lasso+ridge")], **kw)
    pd.testing.assert_frame_equal(by_name, by_object)
    assert set(by_name["pipeline"]) == {"entropy", "random", "lasso+ridge"}


def test_two_pipelines_with_one_label_are_refused():
    m = as_matrix(_scores())
    with pytest.raises(ValueError, match="two pipelines are labelled 'mi'"):
        cross_validate(m, [Pipeline.paper(objective="mi"), Pipeline.paper(objective="mi", config="early")],
                       k_max=2, n_folds=3)
    df = cross_validate(m, [Pipeline.paper(objective="mi"), Pipeline.paper(objective="mi", config="early",
                                                                           name="mi-early")],
                        k_max=2, n_folds=3, progress=False)
    assert set(df["pipeline"]) == {"mi", "mi-early"}


def test_components_are_small_validated_objects():
    assert Pipeline(scaling="logit").component("scaling") == Scaling(logit=True)
    assert Pipeline(correlation="em").component("correlation") == Correlation("em")
    assert Pipeline(selector="entropy-obs").component("selector") == [Selector("entropy", min_observed=0.3)]
    with pytest.raises(ValueError, match="min_observed"):
        Selector("mi", min_observed=1.5)
    with pytest.raises(ValueError, match="inflation"):
        GaussianIntervals(inflation=0.0)
    with pytest.raises(ValueError, match="unknown correlation estimator"):
        Correlation("exact")



def test_a_shared_min_observed_leaves_the_filter_a_preset_is_named_for():
    auto = Pipeline.auto(min_observed=5, initial=["b0"]).component("selector")
    assert {s.label: s.min_observed for s in auto} == {"mi": 5, "entropy-obs": 0.3, "lasso": 5, "random": 5}
    assert all(s.initial == ("b0",) for s in auto)
    own = Selector("mi", min_observed=12, name="mi-12")
    assert Pipeline.auto(selectors=[own, "random"], min_observed=5).component("selector") == [
        own, Selector("random", min_observed=5, name="random")]
    assert Pipeline.from_name("entropy-obs+ridge", min_observed=10).component("selector") == [
        Selector("entropy", min_observed=0.3, name="entropy-obs")]
    assert Pipeline.from_name("mi+ridge", min_observed=10).component("selector") == [
        Selector("mi", min_observed=10, name="mi")]


def test_auto_by_default_reveals_no_benchmark_that_fewer_than_five_training_models_observe():
    floors = {s.label: s.min_observed for s in Pipeline.auto().component("selector")}
    assert floors == {"mi": 5, "entropy-obs": 0.3, "lasso": 5, "random": 5}
    assert Pipeline.from_name("auto").get_params() == Pipeline.auto().get_params()
    for off in (0, None):  # every benchmark a candidate, as in the paper
        assert {s.label: s.min_observed for s in Pipeline.auto(min_observed=off).component("selector")} == {
            "mi": None, "entropy-obs": 0.3, "lasso": None, "random": None}
    assert Pipeline.from_name("auto", min_observed=0).get_params() == Pipeline.auto(min_observed=0).get_params()
    # the paper's pipelines and the named pairs keep every benchmark unless told otherwise
    assert Pipeline.from_name("mi").component("selector")[0].min_observed is None
    assert Pipeline.from_name("mi", min_observed=0).component("selector")[0].min_observed is None
    assert Pipeline.from_name("lasso+ridge").component("selector")[0].min_observed is None
    # a benchmark that three of forty models observe: greedy MI would run it first
    M = as_matrix(low_rank_scores(3, 40, 8))
    X = M.scores.copy()
    X[3:, 0] = np.nan
    thin = type(M)(X, M.models, M.benchmarks)
    one = dict(selectors=["mi"], stack=False, predictors=["gaussian"])
    assert Pipeline.auto(k=3, min_observed=0, **one).fit(thin).selected[0] == "b0"
    for selector in ("mi", "lasso", "random"):
        assert "b0" not in Pipeline.auto(k=7, **{**one, "selectors": [selector]}).fit(thin).selected
    with pytest.raises(ValueError, match=r"k=8 leaves nothing to predict: the matrix has 8 benchmarks"):
        Pipeline.auto(k=8, **one).fit(thin)  # refused before the search: a search scores what is left to predict
    X[3:, 1] = np.nan
    thinner = type(M)(X, M.models, M.benchmarks)
    with pytest.raises(ValueError, match=r"min_observed filters leave too few benchmarks: mi: 6; lower k, or pass "
                                         r"min_observed=0"):
        Pipeline.auto(k=7, **one).fit(thinner)


def test_a_count_floor_above_the_number_of_models_keeps_the_benchmarks_every_model_observes():
    M = as_matrix(low_rank_scores(1, 4, 6))
    assert Selector("mi", min_observed=5).threshold(4) == 4
    with pytest.warns(UserWarning, match="only 4 training models: too few"):
        assert len(Pipeline.auto(k=3).fit(M).selected) == 3

# --------------------------------------------------------------------------- the package's layout
_LAYERS = {"data": 0, "method": 1, "protocol": 2, "studies": 3, "book": 4, "cli": 5}


def _internal_imports() -> dict[str, set[str]]:
    """module -> package modules it imports (relative imports resolved), from the source."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        pkg = parts if path.name == "__init__.py" else parts[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = pkg[: len(pkg) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                deps.add(target)
                for alias in node.names:
                    deps.add(f"{target}.{alias.name}")
        graph[name] = {d for d in deps if d in {".".join(
            list(p.relative_to(PACKAGE.parent).with_suffix("").parts[:-1] if p.name == "__init__.py"
                 else p.relative_to(PACKAGE.parent).with_suffix("").parts)) for p in PACKAGE.rglob("*.py")}}
    return graph


def test_the_package_has_no_import_cycle():
    graph = _internal_imports()
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in graph.get(node, ()):
            if dep == node or dep == node.rsplit(".", 1)[0]:
                continue  # a module's own package __init__
            if state.get(dep) == 1:
                raise AssertionError(f"import cycle: {' -> '.join(stack + [node, dep])}")
            if state.get(dep) is None:
                visit(dep, stack + [node])
        state[node] = 2

    for module in graph:
        if module not in state:
            visit(module, [])


def test_layers_import_only_downwards_and_no_private_name_crosses_a_module():
    graph = _internal_imports()
    for module, deps in graph.items():
        parts = module.split(".")
        if len(parts) < 2 or parts[1] not in _LAYERS:
            continue
        for dep in deps:
            dparts = dep.split(".")
            if len(dparts) >= 2 and dparts[1] in _LAYERS:
                assert _LAYERS[dparts[1]] <= _LAYERS[parts[1]], f"{module} imports {dep} from a layer above"
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                private = [a.name for a in node.names if a.name.startswith("_") and a.name != "__version__"]
                assert not private, f"{path.name} imports private names {private} from {node.module}"


def test_a_fitted_pipeline_survives_pickling_with_the_same_predictions():
    import pickle

    X = _scores(8, missing=0.1)
    m = as_matrix(X)
    given = None
    for p in (Pipeline.paper(k=2, objective="mi", inflation="inner"), Pipeline.from_name("mi+ridge", k=2)):
        p.fit(m)
        given = given or {b: float(np.nanmean(X[:, m.benchmarks.index(b)])) for b in p.selected}
        q = pickle.loads(pickle.dumps(p))
        pd.testing.assert_frame_equal(q.predict({b: given.get(b, 50.0) for b in p.selected}),
                                      p.predict({b: given.get(b, 50.0) for b in p.selected}))
