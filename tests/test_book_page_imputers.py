"""benchsel_lib.book.pages.imputers: chapter 9's claims, tables and text, from synthetic summaries."""
from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd

from benchsel_lib.book.pages import imputers as page
from benchsel_lib.method import tabimpute

DATASETS = ["mmlu", "mteb", "merged", "benchpress"]
METHODS = ["entropy", "mi", "random"]
LABEL = {"mmlu": "MMLU", "mteb": "MTEB", "merged": "Merged", "benchpress": "BenchPress"}


def _summary(values: dict, *, k: int = 5, ks=(5,), sd: float = 0.05) -> pd.DataFrame:
    """Rows of ``page.summarize``: ``values[(matrix, method, imputer)]`` is the R² at every k in ``ks``."""
    return pd.DataFrame([{"dataset": LABEL[n], "imputer": imp, "method": m, "holdout": 0.1, "k": kk,
                          "r2_mean": v, "r2_sd": sd} for (n, m, imp), v in values.items() for kk in ks])


def _paper_gauss(changes: dict | None = None) -> dict:
    """The paper's Gaussian column as this run's, with some (matrix, method) values changed."""
    vals = {(n, m, "Gaussian"): page.PAPER_GAUSS[n][i] for n in DATASETS for i, m in enumerate(METHODS)}
    vals.update({(n, m, "Gaussian"): v for (n, m), v in (changes or {}).items()})
    return vals


MISSING = page.TabImputeStatus(False, "not installed here: tabimpute, torch and the weights file tabimputev2.ckpt",
                               None, ("tabimpute", "torch", "the weights file tabimputev2.ckpt"),
                               ("tabimpute", "torch", "weights"))


def test_tabimpute_is_not_run_when_its_package_or_its_weights_are_missing(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "torch" else real("json"))
    monkeypatch.delenv("BENCHSEL_TABIMPUTE_CKPT", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HUGGINGFACE_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty"))
    monkeypatch.setenv("HOME", str(tmp_path))
    status = page.tabimpute_status()
    assert not status.available and status.short == ("torch", "weights")
    assert "torch" in status.reason and "tabimputev2.ckpt" in status.reason
    ckpt = tmp_path / "tabimputev2.ckpt"
    ckpt.write_bytes(b"")
    assert page.tabimpute_status(ckpt).short == ("torch",)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: real("json"))
    ready = page.tabimpute_status(ckpt)
    assert ready.available and ready.reason == "" and ready.checkpoint == ckpt
    assert tabimpute.find_tabimpute_checkpoint(ckpt) == ckpt


def test_the_gaussian_rows_are_reproduced_when_this_run_matches_the_papers_column():
    summary = _summary(_paper_gauss())
    rows = page.claims(summary, datasets=DATASETS, methods=METHODS, imputers=["Gaussian"], status=MISSING, k=5,
                       holdout=0.1, n_folds=10)
    gauss = [r for r in rows if r.claim.startswith("Gaussian R²")]
    assert [r.verdict for r in gauss] == ["reproduced"] * 4
    assert gauss[3].paper == "0.21 / -0.11 / 0.24" == gauss[3].run


def test_an_entropy_gap_is_named_with_its_cause_and_grades_the_row():
    summary = _summary(_paper_gauss({("merged", "entropy"): 0.48, ("benchpress", "entropy"): 0.13}))
    rows = {r.claim: r for r in page.claims(summary, datasets=DATASETS, methods=METHODS, imputers=["Gaussian"],
                                            status=MISSING, k=5, holdout=0.1, n_folds=10)}
    merged, bp = rows["Gaussian R², Merged"], rows["Gaussian R², BenchPress"]
    assert merged.verdict == "not reproduced" and bp.verdict == "partly"
    assert "entropy off by 0.13" in merged.why and "first-pick tie" in merged.why and "others within" in merged.why


def test_the_best_imputer_row_counts_the_pairs_the_gaussian_mean_wins():
    vals = _paper_gauss()
    vals.update({(n, m, "KNN"): page.PAPER_GAUSS[n][i] + (0.02 if n == "mmlu" else -0.02)
                 for n in DATASETS for i, m in enumerate(METHODS)})
    vals.update({(n, m, "BenchPressBlend"): page.PAPER_GAUSS[n][i] + (0.1 if n == "merged" else -0.1)
                 for n in DATASETS for i, m in enumerate(METHODS)})
    summary = _summary(vals)
    rows = page.claims(summary, datasets=DATASETS, methods=METHODS, imputers=["Gaussian", "KNN", "BenchPressBlend"],
                       status=MISSING, k=5, holdout=0.1, n_folds=10)
    best = next(r for r in rows if r.section == "gaussian-against-the-other-imputers")
    assert best.run == "6 of 12 (vs 2 other imputers)" and best.verdict == "not reproduced"
    assert best.why == "best: kNN in 3 pairs (MMLU), blend in 3 (Merged)"
    comp = page.comparison(summary, datasets=DATASETS, methods=METHODS, imputers=["Gaussian", "KNN", "BenchPressBlend"],
                           k=5)
    assert comp["margin"].round(2).tolist()[:3] == [-0.02] * 3


def test_tabimpute_rows_say_what_is_not_installed_and_never_show_a_number():
    rows = page.claims(_summary(_paper_gauss()), datasets=DATASETS, methods=METHODS, imputers=["Gaussian"],
                       status=MISSING, k=5, holdout=0.1, n_folds=10)
    tab = [r for r in rows if r.section in ("tabimpute",)]
    assert len(tab) == 4 and {r.verdict for r in tab} == {"not run"} and {r.run for r in tab} == {"—"}
    assert {r.why for r in tab} == {"tabimpute, torch and weights not installed"}


def test_tabimpute_rows_are_graded_when_it_ran():
    vals = _paper_gauss()
    vals.update({(n, m, "TabImpute"): page.PAPER_TABIMPUTE[n][i] for n in DATASETS for i, m in enumerate(METHODS)})
    ran = page.TabImputeStatus(True, "")
    rows = {r.claim: r for r in page.claims(_summary(vals), datasets=DATASETS, methods=METHODS,
                                            imputers=["Gaussian", "TabImpute"], status=ran, k=5, holdout=0.1,
                                            n_folds=10)}
    assert rows["TabImpute V2 R² at k = 5"].verdict == "reproduced"
    assert rows["Gaussian above TabImpute across the board"].run == "11 of 12 pairs"
    assert rows["TabImpute near zero on Merged"].verdict == "reproduced"
    assert rows["Under TabImpute, MI far ahead of entropy on MMLU"].run == "0.61 vs 0.37"
    table = page.table4(_summary(vals), datasets=DATASETS, methods=METHODS, k=5, holdout=0.1, n_folds=10,
                        tabimpute_ran=True)
    assert list(table.columns) == ["Matrix", "Objective", "Gaussian, paper", "Gaussian, here", "TabImpute, paper",
                                   "TabImpute, here"]


def test_a_run_off_the_papers_setting_or_without_a_matrix_is_not_run_and_drops_the_papers_columns():
    vals = {k: v for k, v in _paper_gauss().items() if k[0] == "mteb"}
    summary = _summary(vals, ks=(3,))
    rows = page.claims(summary, datasets=["mteb"], methods=METHODS, imputers=["Gaussian"], status=MISSING, k=3,
                       holdout=0.2, n_folds=2)
    by = {r.claim: r for r in rows}
    assert by["Gaussian R², MTEB"].verdict == "not run"
    assert by["Gaussian R², MTEB"].why == ("k = 3, 20% holdout and 2 folds here, k = 5, 10% holdout and 10 folds in "
                                          "the paper")
    assert page.setting_text(k=5, holdout=0.1, n_folds=2) == "2 folds here, 10 folds in the paper"
    assert by["Gaussian R², MMLU"].why == "MMLU was not in this run"
    table = page.table4(summary, datasets=["mteb"], methods=METHODS, k=3, holdout=0.2, n_folds=2, tabimpute_ran=False)
    assert list(table.columns) == ["Matrix", "Objective", "Gaussian, here"]


def test_the_failures_paragraph_names_what_failed_and_why_tabimpute_did_not_run():
    vals = _paper_gauss({("merged", "entropy"): 0.48})
    vals.update({(n, m, "KNN"): page.PAPER_GAUSS[n][i] + 0.05 for n in DATASETS for i, m in enumerate(METHODS)})
    text = page.prose(summary=_summary(vals), datasets=DATASETS, methods=METHODS, imputers=["Gaussian", "KNN"],
                      status=MISSING, k_table=5, k_max=5, k_imputers=[5], n_folds=10, holdout=0.1, seed=42,
                      scheme="paper")
    fail = text["failures_md"]
    assert "Not reproduced: Gaussian R², Merged; Gaussian the best imputer." in fail
    assert "On Merged the Gaussian R² misses the paper's through entropy alone" in fail
    assert "The 4 rows on TabImpute are not run: tabimpute, torch and the weights file tabimputev2.ckpt are" in fail
    assert "1 of the 12 (matrix, objective) pairs (Merged with entropy selection)" in text["versus_md"]
    assert "the paper's folds (seed 42)" in text["table_md"]
    assert "Other seeds were not run" in text["spread_md"]
    assert not any("nan" in v for v in text.passages.values())


def test_the_figure_keeps_the_means_in_view_and_says_which_bands_it_cuts():
    vals = {("benchpress", "mi", "Gaussian"): 0.1, ("benchpress", "mi", "KNN"): 0.3}
    summary = pd.concat([_summary({k: v}, ks=(1, 2, 3, 4, 5), sd=2.0 if k[2] == "Gaussian" else np.nan)
                         for k, v in vals.items()])
    limits = page.figure_limits(summary)
    lo, hi = limits["BenchPress"]
    assert lo < 0.1 and hi > 0.3 and hi - lo < 1.0
    assert page.cut_bands(summary, limits) == ["BenchPress"]
    quiet = _summary({("benchpress", "mi", "Gaussian"): 0.1}, ks=(1, 2), sd=0.001)
    assert page.cut_bands(quiet, page.figure_limits(quiet)) == []


def test_the_spread_table_counts_the_gaussian_wins_per_seed():
    base = _paper_gauss()
    knn = {(n, m, "KNN"): v - 0.01 for (n, m, _), v in base.items()}
    worse = {(n, m, "KNN"): v + 0.01 for (n, m, _), v in base.items()}
    spread = page.spread_table({42: _summary({**base, **knn}), 0: _summary({**base, **worse})}, datasets=DATASETS,
                               methods=METHODS, imputers=["Gaussian", "KNN"], k=5)
    assert spread["Gaussian best in"].tolist() == ["12 of 12", "0 of 12"]
    assert spread["MMLU"].round(2).tolist() == [0.01, -0.01]
    text = page.prose(summary=_summary({**base, **knn}), datasets=DATASETS, methods=METHODS,
                      imputers=["Gaussian", "KNN"], status=MISSING, k_table=5, k_max=5, k_imputers=[5], n_folds=10,
                      holdout=0.1, seed=42, scheme="paper", spread=spread)
    assert "seeds 42 and 0" in text["spread_md"] and "12 of 12, 0 of 12 pairs" in text["spread_md"]


def test_the_imputer_table_shows_every_imputer_and_bolds_the_best():
    vals = _paper_gauss()
    vals.update({(n, m, "KNN"): v + 0.01 for (n, m, _), v in _paper_gauss().items()})
    table = page.imputer_table(_summary(vals), datasets=DATASETS, methods=METHODS, imputers=["Gaussian", "KNN"], k=5)
    assert list(table.columns) == ["Matrix", "Objective", "Gaussian", "kNN"] and len(table) == 12
    from benchsel_lib.book import table as show

    html = page.bold_best(show(table, digits=2), table).to_html()
    assert html.count("font-weight: bold") >= 1


def test_the_figure_sets_single_k_markers_side_by_side_and_takes_the_pages_limits_and_names():
    from benchsel_lib.book import plotting

    curve = _summary({("mmlu", "mi", "Gaussian"): 0.9}, ks=(1, 2, 3, 4, 5))
    points = _summary({("mmlu", "mi", imp): 0.8 for imp in ("SoftImpute", "KNN", "BenchPressBlend")})
    fig = plotting.plot_imputer_comparison(pd.concat([curve, points]), methods=["mi"], names=page.IMPUTER_NAMES,
                                           offset=0.5, ylims={"MMLU": (0.5, 1.0)})
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert [ln.get_xdata().tolist() for ln in lines[1:]] == [[4.5], [5.0], [5.5]]
    assert {ln.get_linestyle() for ln in lines[1:]} == {"None"} and len({ln.get_marker() for ln in lines}) == 4
    assert ax.get_ylim() == (0.5, 1.0)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["Gaussian", "soft-impute", "kNN", "blend"]
    spaces = curve.rename(columns={"imputer": "space"}).assign(space="raw")
    both = pd.concat([spaces, spaces.assign(space="logit", r2_mean=0.8)])
    fig = plotting.plot_imputer_comparison(both, methods=["mi"], by="space", names={"raw": "raw scores"})
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["raw scores", "logit"]


def test_the_eigenspectrum_takes_a_style_per_line_and_can_put_its_legend_below():
    from benchsel_lib.book import plotting

    spectra = {"MTEB, logit": [0.5, 0.2, 0.1], "MTEB, raw": [0.4, 0.15, 0.05]}
    fig = plotting.plot_eigenspectrum(spectra, styles={"MTEB, logit": {"color": "C1", "linestyle": "-"},
                                                       "MTEB, raw": {"color": "C1", "linestyle": "--"}},
                                      legend="below", minor_labels=True)
    curves = fig.axes[0].get_lines()[:2]
    assert [ln.get_linestyle() for ln in curves] == ["-", "--"] and curves[0].get_color() == curves[1].get_color()
    assert fig.axes[0].get_legend() is None and len(fig.legends) == 1
