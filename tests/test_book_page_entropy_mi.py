"""benchsel_lib.book.pages.entropy_mi: the claims and tables of chapter 5 (Section 5.4, Figures 5-7)."""
from __future__ import annotations

import pandas as pd

from benchsel_lib.book.pages import entropy_mi as page

SETTINGS = dict(folds=10, seed=42, scheme="paper")


def _summary(r2=None, ks=range(1, 16), mi_resid=-0.01):
    """One holdout's CV summary: R² per (method, k) from ``r2`` (else 0.5 + 0.02 k), random 0.05 lower."""
    rows = []
    for meth in ("entropy", "mi", "random"):
        for k in ks:
            base = 0.5 + 0.02 * k - (0.05 if meth == "random" else 0.0)
            rows.append({"pipeline": meth, "holdout": 0.1, "k": k, "r2_mean": (r2 or {}).get((meth, k), base),
                         "r2_sd": 0.05, "residual_fraction_mean": 0.8 / k + {"mi": mi_resid, "random": 0.1}.get(meth, 0),
                         "mi_mean": k * {"entropy": 1.0, "mi": 1.2, "random": 0.8}[meth]})
    return pd.DataFrame(rows)


def _cv(summary):
    return pd.DataFrame([{"pipeline": r.pipeline, "fold": f, "k": r.k, "r2": r.r2_mean + 0.01 * (f - 1)}
                         for r in summary.itertuples() for f in range(3)])


def _trace(summary):
    t = summary[summary["pipeline"] == "entropy"].assign(pipeline="trace")
    return t.assign(residual_fraction_mean=t["residual_fraction_mean"] - 0.02)


def _claims(summary, **kw):
    gap = page.gap_table(summary, {n: _trace(s) for n, s in summary.items()}, k_max=15)
    opts = dict(k_max=15, holdout=0.1, settings=SETTINGS)
    return page.claims(summary, {n: _cv(s) for n, s in summary.items()}, gap, **{**opts, **kw})


def _row(rows, start):
    return next(r for r in rows if r.claim.startswith(start))


def test_mmlu_at_k1_is_graded_per_method_with_keys_shared_with_other_chapters():
    rows = _claims({"mmlu": _summary({("mi", 1): 0.84, ("entropy", 1): 0.75})})
    mi, ent = _row(rows, "MMLU, k = 1: MI"), _row(rows, "MMLU, k = 1: entropy")
    assert (mi.verdict, ent.verdict) == ("reproduced", "not reproduced")
    assert ent.key == "mmlu-entropy-r2[folds=10, holdout=0.1, k=1, scheme=paper, seed=42]"


def test_mteb_gap_reproduces_partly_or_not():
    for gap, expected in ((0.09, "reproduced"), (0.04, "partly"), (0.0, "not reproduced")):
        r2 = {("mi", k): 0.5 + 0.02 * k + gap for k in (1, 2, 3)}
        assert _row(_claims({"mteb": _summary(r2)}), "MTEB, k ≤ 3").verdict == expected


def test_crossover_is_the_size_from_which_entropy_stays_ahead():
    r2 = {("mi", k): 0.5 + 0.02 * k + (0.01 if k < 8 else -0.01) for k in range(1, 16)}
    assert page.crossover(_summary(r2)) == 8
    assert _row(_claims({"mmlu": _summary(r2)}), "MMLU: entropy catches up").verdict == "partly"


def test_surrogate_gap_fails_where_mi_leaves_less_residual_variance():
    assert _row(_claims({"mteb": _summary(mi_resid=-0.01)}), "Surrogate gap").verdict == "not reproduced"
    ahead = {("mi", k): 0.6 + 0.02 * k for k in range(1, 6)}
    assert _row(_claims({"mteb": _summary(ahead, mi_resid=0.01)}), "Surrogate gap").verdict == "reproduced"


def test_rows_of_matrices_or_holdouts_not_run_are_not_run_without_missing_values():
    rows = _claims({"mteb": _summary(ks=range(1, 5))}, k_max=4)
    assert _row(rows, "Merged, k = 15: MI").verdict == "not run"
    assert _row(rows, "MTEB: entropy overtakes").why == "this run stops at k = 4"
    assert all(r.verdict == "not run" for r in _claims({"mteb": _summary()}, holdout=0.2))
    assert all("nan" not in (r.run + r.why).lower() for r in rows)


def test_tables_have_the_columns_the_page_shows():
    s = {"mteb": _summary()}
    band = {"mteb": pd.DataFrame([{"variant": v, "k": k, "r2_mean": 0.5 + 0.02 * k - d}
                                  for v, d in (("auto", 0), ("argmax", 0.1)) for k in range(1, 16)])}
    assert list(page.r2_table(s, band, ks=[1, 15]).columns) == ["matrix", "k", "entropy", "tie rules", "MI", "random"]
    g = page.gain_table({"mteb": _cv(_summary())}, k_max=15)
    assert len(g) == 5 and g["folds MI ahead"].iloc[0] == "0 of 3"
    assert list(page.gap_table(s, {"mteb": _trace(s["mteb"])}, k_max=3).columns)[2:5] == [
        "resid. entropy", "resid. MI", "resid. trace"]
    assert abs(page.random_gap(s["mteb"]) - 0.05) < 1e-9
