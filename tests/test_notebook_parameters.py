"""Every notebook re-run through papermill with parameters of a reader's own, and its page checked.

Each notebook is executed in quick mode with two parameter sets other than
its defaults (single matrices, other seeds, fewer folds, other holdouts, a
smaller ``k_max``), two runs at a time. Each run must finish, and its page
must pass :func:`benchsel_lib.book.checks.check_notebook`: no error or
warning output, no Markdown that JupyterLab shows raw, a claims table
before the first figure of a chapter reproducing the paper, and no
``nan``/``None`` in computed text or in a claims row. A bad parameter must
stop the run in the cell right after the parameters with a message that
names it.
"""
from __future__ import annotations

import functools
import json
import re
import tempfile
import time
from pathlib import Path

import pytest
from _book_build import NOTEBOOKS, build_book, execute_variants

from benchsel_lib.book import checks

# quick=True is added to each; quick mode caps these values, it does not replace them
ALTERNATIVES: dict[str, list[dict]] = {
    "01_landscape": [dict(datasets=["benchpress", "mteb"], seed=1, top_models=3),
                     dict(datasets=["merged"], min_label=30)],
    "02_em": [dict(datasets=["merged"], ablation_dataset="benchpress", ablation_models=20, seed=1),
              dict(datasets=["mteb"], config="early", tol=1e-4, config_datasets=["benchpress"], ablation_models=25,
                   seed=2)],
    "03_eigenspectrum": [dict(datasets=["benchpress", "mteb"], k_show=[1, 3], seed=1),
                         dict(datasets=["merged"], levels=[0.8, 0.9], config="early")],
    "04_greedy_cv": [dict(datasets=["benchpress"], k_max=4, n_folds=2, holdouts=[0.2, 0.5], band_holdout=0.2, seed=1,
                          scheme="nested"),
                     dict(datasets=["merged", "mteb"], holdouts=[0.2], band_holdout=0.1, k_max=3, n_folds=2, seed=7,
                          tie_breaks=["auto", "index"])],
    "05_entropy_vs_mi": [dict(datasets=["mteb"], first_pick_datasets=["benchpress"], first_pick_ks=[2], k_max=4,
                              n_folds=2, seed=1),
                         dict(datasets=["benchpress"], first_pick_datasets=[], holdout=0.2, k_max=3, seed=3,
                              scheme="nested", first_pick_ks=[1, 3])],
    "06_selection_stability": [dict(datasets=["benchpress"], k_max=4, top=3, n_folds=2, seed=1, scheme="nested"),
                               dict(datasets=["mteb"], holdout=0.2, k_max=3, top=2, n_folds=2, tie_break="argmax")],
    "07_normality": [dict(datasets=["benchpress", "mmlu"], thresholds=[3, 10], seed=1),
                     dict(datasets=["merged"], correction="bonferroni", alpha=0.01, min_observed=10)],
    "08_benchpress": [dict(configs=["released"], k_max=4, k_table=3, n_folds=2, holdouts=[0.2], seed=1),
                      dict(configs=["early", "released"], seed=1, scheme="nested")],
    "09_tabimpute": [dict(datasets=["benchpress"], methods=["entropy", "random"], k_max=4, k_imputers=[1, 3],
                          k_table=3, n_folds=2, seed=1),
                     dict(datasets=["mteb"], methods=["mi"], seed=2, scheme="nested")],
    "10_logit": [dict(datasets=["benchpress"], methods=["mi", "random"], k_max=4, k_table=3, n_folds=2, seed=7),
                 dict(datasets=["mteb"], methods=["entropy", "mi"], holdout=0.2, n_folds=3, seed=1, scheme="nested")],
    "11_own_data": [dict(calib_datasets=["benchpress"], calib_ks=[3], n_folds=2, dual_k_max=3, seed=1),
                    dict(calib_datasets=["merged"], calib_ks=[4, 6], levels=[0.8, 0.9], extrapolation_quantile=0.7,
                         seed=2)],
    "12_best_predictor": [dict(datasets=["merged"], seeds=[1], n_folds=2, k_max=2, ks=[2],
                               selectors=["random", "lasso"], predictors=["ridge", "blend"], aside=[]),
                          dict(datasets=["benchpress"], seeds=[3], n_folds=3, k_max=3, ks=[1, 3],
                               selectors=["mi", "entropy"], predictors=["gaussian", "knn"], aside=["wildbench"])],
}
#: Wall-clock budget of all alternative runs together (two at a time, CI on 2 cores).
ALTERNATIVES_BUDGET_S = 600
VARIANTS = [(nb, i) for nb in NOTEBOOKS for i in range(len(ALTERNATIVES.get(nb.stem, [])))]
PARAMS = [pytest.param(nb, id=nb.stem) for nb in NOTEBOOKS]


def _params_cell_names(nb: Path) -> set[str]:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    src = next("".join(c["source"]) for c in cells if "parameters" in c["metadata"].get("tags", []))
    return set(re.findall(r"^(\w+)\s*=", src, flags=re.M))


def test_every_notebook_has_two_alternative_parameter_sets_of_declared_names():
    for nb in NOTEBOOKS:
        sets = ALTERNATIVES.get(nb.stem, [])
        assert len(sets) >= 2, f"{nb.name}: {len(sets)} alternative parameter sets (need at least two)"
        for params in sets:
            unknown = set(params) - _params_cell_names(nb)
            assert not unknown, f"{nb.name} does not declare {sorted(unknown)}"
        assert len({json.dumps(p, sort_keys=True) for p in sets}) == len(sets), f"{nb.name}: duplicate sets"


@pytest.mark.parametrize("nb", PARAMS)
def test_the_cell_after_the_parameters_checks_them(nb):
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    i = next(i for i, c in enumerate(cells) if "parameters" in c["metadata"].get("tags", []))
    assert "bk.check_parameters(" in "".join(cells[i + 1]["source"]), \
        f"{nb.name}: the cell after the parameters does not call bk.check_parameters"


@functools.lru_cache(maxsize=1)
def _alternative_runs() -> tuple[dict[tuple[str, int], dict], float]:
    out = Path(tempfile.mkdtemp(prefix="benchsel-params-"))
    t0 = time.perf_counter()
    runs = execute_variants([(nb, {"quick": True, **ALTERNATIVES[nb.stem][i]}) for nb, i in VARIANTS], out, jobs=2)
    return {key: r for key, r in zip(VARIANTS, runs)}, time.perf_counter() - t0


@pytest.mark.book
@pytest.mark.parametrize("nb, i", [pytest.param(nb, i, id=f"{nb.stem}-{i}") for nb, i in VARIANTS])
def test_notebook_runs_with_other_parameters_and_its_page_passes_the_checks(nb, i):
    runs, _ = _alternative_runs()
    r = runs[nb, i]
    params = ALTERNATIVES[nb.stem][i]
    assert r["error"] is None, f"{nb.name} failed with {params}: {r['error']}"
    problems = checks.check_notebook(r["path"])
    assert not problems, f"{nb.name} with {params}:\n" + checks.format_problems(problems)


@pytest.mark.book
def test_the_alternative_runs_fit_their_ci_budget():
    runs, seconds = _alternative_runs()
    per = {f"{nb.stem}-{i}": round(r["seconds"], 1) for (nb, i), r in runs.items()}
    assert seconds <= ALTERNATIVES_BUDGET_S, f"alternative runs took {seconds:.0f} s > {ALTERNATIVES_BUDGET_S} s: {per}"


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
