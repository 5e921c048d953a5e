"""benchsel_lib.book.pages.imputers: chapter 9's claims and tables, from hand-made summaries."""
from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd

from benchsel_lib.book.pages import imputers as page
from benchsel_lib.method import tabimpute

DATASETS = ["mmlu", "mteb", "merged", "benchpress"]
METHODS = ["entropy", "mi", "random"]
RUN = dict(k=5, holdout=0.1, folds=10, seed=42, scheme="paper")
CONFIGS = {"benchpress": "early"}
MISSING = page.TabImputeStatus(False, "TabImpute not run: tabimpute, torch and its weights not available here")


def _summary(values: dict, *, ks=(5,)) -> pd.DataFrame:
    """Rows of ``page.summarize``: ``values[(matrix, method, imputer)]`` is the R² at every k in ``ks``."""
    return pd.DataFrame([{"matrix": n, "dataset": n, "imputer": imp, "pipeline": m, "holdout": 0.1, "k": kk,
                          "r2_mean": v, "r2_sd": 0.05} for (n, m, imp), v in values.items() for kk in ks])


def _paper(changes: dict | None = None, imputer: str = "Gaussian", table=page.PAPER_GAUSS) -> dict:
    vals = {(n, m, imputer): table[n][i] for n in DATASETS for i, m in enumerate(METHODS)}
    return vals | {(n, m, imputer): v for (n, m), v in (changes or {}).items()}


def _rows(summary, status=MISSING, **kw) -> dict:
    opts = dict(datasets=DATASETS, pipelines=METHODS, status=status, run=RUN, em_configs=CONFIGS) | kw
    return {r.claim: r for r in page.claims(summary, **opts)}


def test_tabimpute_is_not_run_when_its_package_or_its_weights_are_missing(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "torch" else real("json"))
    monkeypatch.delenv("BENCHSEL_TABIMPUTE_CKPT", raising=False)
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"):
        monkeypatch.setenv(var, str(tmp_path / "empty"))
    monkeypatch.setenv("HOME", str(tmp_path))
    status = page.tabimpute_status()
    assert not status.available and "torch" in status.reason and "weights" in status.reason
    ckpt = tmp_path / "tabimputev2.ckpt"
    ckpt.write_bytes(b"")
    assert "weights" not in page.tabimpute_status(ckpt).reason
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: real("json"))
    ready = page.tabimpute_status(ckpt)
    assert ready.available and ready.reason == "" and ready.checkpoint == ckpt
    assert tabimpute.find_tabimpute_checkpoint(ckpt) == ckpt


def test_gaussian_rows_reproduce_partly_or_not_by_the_one_r2_rule():
    rows = _rows(_summary(_paper({("mteb", "mi"): 0.70, ("merged", "entropy"): 0.48})))
    assert rows["Gaussian R², MMLU, entropy"].verdict == "reproduced"
    assert rows["Gaussian R², MTEB, MI"].verdict == "partly"
    merged = rows["Gaussian R², Merged, entropy"]
    assert merged.verdict == "not reproduced" and "first pick" in merged.why


def test_an_mmlu_gap_names_the_smaller_matrix():
    row = _rows(_summary(_paper({("mmlu", "entropy"): 0.94})))["Gaussian R², MMLU, entropy"]
    assert row.verdict == "partly" and "234" in row.why


def test_tabimpute_rows_are_not_run_with_the_reason_and_never_show_a_number():
    rows = [r for r in _rows(_summary(_paper())).values() if r.section == "tabimpute"]
    assert len(rows) == 4 and all(r.verdict == "not run" and r.run == "—" and "weights" in r.why for r in rows)


def test_tabimpute_rows_are_graded_when_it_ran():
    ran = page.TabImputeStatus(True, "")
    both = _summary(_paper() | _paper(imputer="TabImpute", table=page.PAPER_TABIMPUTE))
    rows = _rows(both, status=ran)
    assert rows["Gaussian above TabImpute"].verdict == "reproduced"
    assert rows["TabImpute V2 R² at k = 5"].verdict == "reproduced"
    assert rows["Under TabImpute, MI far ahead of entropy on MMLU"].run == "MI − entropy 0.24"
    weak = _summary(_paper() | _paper({("mmlu", "mi"): 0.38}, imputer="TabImpute", table=page.PAPER_TABIMPUTE))
    assert _rows(weak, status=ran)["Under TabImpute, MI far ahead of entropy on MMLU"].verdict == "not reproduced"


def test_a_matrix_or_setting_not_run_gives_not_run_rows_with_keys():
    only = _summary({k: v for k, v in _paper().items() if k[0] == "mteb"})
    rows = _rows(only, datasets=["mteb"])
    assert rows["Gaussian R², MMLU, MI"].verdict == "not run" and "MMLU" in rows["Gaussian R², MMLU, MI"].why
    assert rows["Gaussian R², MTEB, MI"].verdict == "reproduced"
    off = _rows(_summary(_paper()), run=RUN | {"folds": 3})
    assert all(r.verdict == "not run" for r in off.values())
    assert "3 folds" in off["Gaussian R², MTEB, MI"].why


def test_the_keys_follow_chapter_4_and_name_a_non_default_em_configuration():
    rows = _rows(_summary(_paper()))
    assert rows["Gaussian R², MMLU, entropy"].key == (
        "mmlu-entropy-r2[folds=10, holdout=0.1, k=5, scheme=paper, seed=42]")
    assert "config=early" in rows["Gaussian R², BenchPress, MI"].key
    other = _rows(_summary(_paper()), em_configs={"benchpress": "released"})["Gaussian R², BenchPress, MI"]
    assert other.verdict == "not run" and "config=released" in other.key


def test_the_imputer_table_shows_the_papers_columns_and_every_imputer():
    s = _summary(_paper() | {("mmlu", "mi", "KNN"): 0.95})
    t = page.imputer_table(s, datasets=["mmlu"], pipelines=["mi"], imputers=["Gaussian", "KNN"], k=5, paper=True)
    assert list(t.columns) == ["Matrix", "Objective", "Gaussian (paper)", "TabImpute (paper)", "Gaussian", "kNN"]
    assert t.iloc[0]["kNN"] == 0.95 and t.iloc[0]["TabImpute (paper)"] == 0.61
    bare = page.imputer_table(s, datasets=["mmlu"], pipelines=["entropy"], imputers=["KNN"], k=5, paper=False)
    assert list(bare.columns) == ["Matrix", "Objective", "kNN"] and np.isnan(bare.iloc[0]["kNN"])


def test_the_imputers_run_are_the_librarys_plus_tabimpute_only_when_available():
    assert list(page.imputer_factories(MISSING, seed=0)) == ["Gaussian", "SoftImpute", "KNN", "BenchPressBlend"]
    assert page.imputer_factories(MISSING, seed=0)["Gaussian"]() is None


def test_the_eigenspectrum_takes_a_style_per_line_and_can_put_its_legend_below():
    from benchsel_lib.book import plotting

    spectra = {"MTEB, logit": [0.5, 0.2, 0.1], "MTEB, raw": [0.4, 0.15, 0.05]}
    fig = plotting.plot_eigenspectrum(spectra, styles={"MTEB, logit": {"color": "C1", "linestyle": "-"},
                                                       "MTEB, raw": {"color": "C1", "linestyle": "--"}},
                                      legend="below", minor_labels=True)
    curves = fig.axes[0].get_lines()[:2]
    assert [ln.get_linestyle() for ln in curves] == ["-", "--"] and curves[0].get_color() == curves[1].get_color()
    assert fig.axes[0].get_legend() is None and len(fig.legends) == 1
