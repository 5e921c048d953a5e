"""Every notebook re-run through papermill with parameters of a reader's own.

Each notebook is executed in quick mode with a non-default parameter set
(another subset of matrices, seed 1, fewer folds, another k_max), must run,
and its text may only read glue keys that this run produced (a key named
after a matrix that was not run would leave the page unrenderable). A bad
parameter must stop the run in the cell right after the parameters with a
message that names it.
"""
from __future__ import annotations

import functools
import json
import re
import tempfile
from pathlib import Path

import pytest
from _book_build import NOTEBOOKS, QUICK_BUDGET_S, build_book

# quick=True is added to each; quick mode caps these values, it does not replace them
ALTERNATIVE = {
    "01_landscape": dict(datasets=["benchpress", "mteb"], seed=1, top_models=3),
    "02_em": dict(datasets=["merged"], ablation_dataset="benchpress", ablation_models=20, seed=1),
    "03_eigenspectrum": dict(datasets=["benchpress", "mteb"], k_show=[1, 3], seed=1),
    "04_greedy_cv": dict(datasets=["benchpress"], k_max=4, n_folds=2, holdouts=[0.2, 0.5], band_holdout=0.2, seed=1),
    "05_entropy_vs_mi": dict(datasets=["mteb"], perfold_dataset="mteb", first_pick_datasets=["benchpress"],
                             k_max=4, n_folds=2, seed=1),
    "06_selection_stability": dict(datasets=["benchpress"], k_max=4, top=3, n_folds=2, seed=1),
    "07_normality": dict(datasets=["benchpress", "mmlu"], thresholds=[3, 10], seed=1),
    "08_benchpress": dict(configs=["released"], k_max=4, k_table=3, n_folds=2, holdouts=[0.2], seed=1),
    "09_tabimpute": dict(datasets=["benchpress"], methods=["entropy", "random"], k_max=4, k_max_imputers=3,
                         k_table=3, n_folds=2, seed=1),
    "10_logit": dict(datasets=["benchpress"], methods=["mi", "random"], k_max=4, n_folds=2, seed=1),
    "11_own_data": dict(calib_datasets=["benchpress"], calib_ks=[3], n_folds=2, dual_k_max=3, seed=1),
    "12_best_predictor": dict(datasets=["merged"], seeds=[1], n_folds=2, k_max=2, ks=[2],
                              strategies=["random", "lasso"], predictors=["ridge", "blend"]),
}
PARAMS = [pytest.param(nb, id=nb.stem) for nb in NOTEBOOKS]


def _params_cell_names(nb: Path) -> set[str]:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    src = next("".join(c["source"]) for c in cells if "parameters" in c["metadata"].get("tags", []))
    return set(re.findall(r"^(\w+)\s*=", src, flags=re.M))


def test_every_notebook_has_an_alternative_parameter_set_of_declared_names():
    missing = [nb.stem for nb in NOTEBOOKS if nb.stem not in ALTERNATIVE]
    assert not missing, f"no alternative parameter set for {missing}"
    for nb in NOTEBOOKS:
        unknown = set(ALTERNATIVE[nb.stem]) - _params_cell_names(nb)
        assert not unknown, f"{nb.name} does not declare {sorted(unknown)}"


@pytest.mark.parametrize("nb", PARAMS)
def test_the_cell_after_the_parameters_checks_them(nb):
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    i = next(i for i, c in enumerate(cells) if "parameters" in c["metadata"].get("tags", []))
    assert "bk.check_parameters(" in "".join(cells[i + 1]["source"]), \
        f"{nb.name}: the cell after the parameters does not call bk.check_parameters"


@functools.lru_cache(maxsize=1)
def _alternative_runs() -> dict[str, dict]:
    out = Path(tempfile.mkdtemp(prefix="benchsel-params-"))
    build_book.ensure_kernel()
    results = {}
    for nb in NOTEBOOKS:  # one call per notebook: each has its own parameters
        (r,) = build_book.execute_all([nb], out, {"quick": True, **ALTERNATIVE[nb.stem]}, jobs=1,
                                      timeout=QUICK_BUDGET_S)
        r["path"] = out / nb.name
        results[nb.name] = r
    return results


@pytest.mark.book
@pytest.mark.parametrize("nb", PARAMS)
def test_notebook_runs_with_other_parameters_and_its_text_reads_only_keys_it_glued(nb):
    r = _alternative_runs()[nb.name]
    assert r["error"] is None, f"{nb.name} failed with {ALTERNATIVE[nb.stem]}: {r['error']}"
    missing = build_book.missing_glue(r["path"])
    assert not missing, f"{nb.name} with {ALTERNATIVE[nb.stem]}: the text reads keys the run did not glue: {missing}"


@pytest.mark.book
@pytest.mark.parametrize("bad, message", [
    ({"datasets": ["mmlu", "nope"]}, "not a known matrix"),
    ({"k_max": 500}, "k_max=500 is out of range"),
    ({"n_folds": 1}, "n_folds must be an integer >= 2"),
    ({"seed": -3}, "seed must be a non-negative integer"),
])
def test_a_bad_parameter_stops_the_first_cell_with_a_named_error(tmp_path, bad, message):
    nb = next(n for n in NOTEBOOKS if n.stem.startswith("04"))
    build_book.ensure_kernel()
    (r,) = build_book.execute_all([nb], tmp_path, {"quick": True, **bad}, jobs=1, timeout=120)
    assert r["error"] is not None and "ValueError" in r["error"] and message in r["error"], r["error"]
    executed = json.loads((tmp_path / nb.name).read_text())["cells"]
    failing = ["".join(c["source"]) for c in executed
               if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    assert len(failing) == 1 and "bk.check_parameters(" in failing[0], \
        f"the error surfaced in another cell than the parameter check: {failing}"
