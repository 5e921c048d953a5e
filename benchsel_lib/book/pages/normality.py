"""Chapter 7: normality diagnostics (Appendix H, Figure 12).

The page tests every benchmark of the run's matrices with Shapiro-Wilk
(:func:`benchsel_lib.studies.diagnostics.shapiro_wilk_table`) and each matrix with Mardia's
multivariate skewness and kurtosis. This module turns the tests into what
the page shows: the tables as a reader sees them, the claims table
(:func:`claims`) and the glued passages (:func:`prose`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...studies.diagnostics import mardia_test, shapiro_wilk_table
from ..claims import Claim, claims_table, failures, not_run, verdict
from ..notebook import and_join
from ..prose import PageProse, count, label, labels, num, paragraph

__all__ = ["BANDS", "MARDIA_COLUMNS", "PAPER", "PAPER_MARDIA_MMLU", "PAPER_WORST", "band_table", "claims",
           "excluded_table", "mardia_table", "mardia_view", "prose", "shapiro_summary", "threshold_sensitivity",
           "worst_table"]

#: Appendix H and Figure 12: rejected of tested benchmarks and median W (MMLU, MTEB; Merged: 60 of 114).
PAPER: dict[str, tuple[int, int, float | None]] = {"mmlu": (57, 57, 0.84), "mteb": (56, 56, 0.89),
                                                   "merged": (60, 114, None)}
#: Appendix H: the worst benchmarks the paper names, with their W.
PAPER_WORST: dict[str, dict[str, float]] = {
    "mmlu": {"marketing": 0.66, "world_religions": 0.70},
    "mteb": {"SprintDuplicateQuestions": 0.46, "STS17": 0.50},
    "merged": {"mmlu/world_religions": 0.71, "mmlu/marketing": 0.71, "mmlu/logical_fallacies": 0.74}}
#: Appendix H: Mardia's kurtosis on MMLU and its null expectation N(N+2).
PAPER_MARDIA_MMLU = (6374, 3363)
#: The paper's MMLU matrix (models, benchmarks); numbers on another MMLU matrix reproduce only in part.
PAPER_MMLU_SHAPE = (5452, 57)
#: The paper's test settings: Benjamini-Hochberg at 5%.
PAPER_SETTINGS = ("bh", 0.05)
MARDIA_COLUMNS = ["complete rows M", "dropped rows", "N (rank)", "skewness b1", "skew p", "kurtosis b2",
                  "null E[b2] = N(N+2)", "kurtosis z", "kurt p"]
#: Bands of observed models per column for :func:`band_table` (lower bounds, labels).
BANDS = ((0, "fewer than 20"), (20, "20 to 50"), (51, "more than 50"))
_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def _corr_name(correction: str) -> str:
    return "Benjamini-Hochberg" if correction == "bh" else "Bonferroni"


def _median_w(t: pd.DataFrame) -> float:
    return float(t.loc[t["tested"], "W"].median()) if t["tested"].any() else float("nan")


def shapiro_summary(sw: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per matrix: benchmarks, tested, excluded, rejected and median W beside the paper's counts.

    Returns
    -------
    DataFrame
        Columns ``Matrix, benchmarks, tested, excluded, rejected, median W, paper rejected,
        paper median W`` (the paper's as text, ``"60 of 114"``; missing where the paper gives none).
    """
    rows = []
    for n, t in sw.items():
        a = t.attrs
        pr, pn, pw = PAPER.get(n, (None, None, None))
        rows.append({"Matrix": label(n), "benchmarks": len(t), "tested": a["n_tested"], "excluded": a["n_excluded"],
                     "rejected": a["n_rejected"], "median W": _median_w(t),
                     "paper rejected": f"{pr} of {pn}" if pr is not None else None,
                     "paper median W": pw})
    return pd.DataFrame(rows)


def worst_table(sw: Mapping[str, pd.DataFrame], n_worst: int) -> pd.DataFrame:
    """Per matrix, the ``n_worst`` tested benchmarks with the smallest W and those the paper names.

    Returns
    -------
    DataFrame
        Columns ``Matrix, Benchmark, models, W, rank, paper W, rejects``; ``rank`` is the
        benchmark's place from the smallest W, ``paper W`` missing where the paper names none.
    """
    rows = []
    for n, t in sw.items():
        tested = t[t["tested"]].sort_values("W")
        rank = {b: i + 1 for i, b in enumerate(tested.index)}
        named = PAPER_WORST.get(n, {})
        keep = list(dict.fromkeys([*tested.index[:n_worst], *[b for b in named if b in rank]]))
        for b in sorted(keep, key=rank.get):
            rows.append({"Matrix": label(n), "Benchmark": str(b), "models": int(t.at[b, "n"]), "W": float(t.at[b, "W"]),
                         "rank": rank[b], "paper W": named.get(b), "rejects": bool(t.at[b, "reject"])})
    return pd.DataFrame(rows, columns=["Matrix", "Benchmark", "models", "W", "rank", "paper W", "rejects"])


def excluded_table(sw: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The columns left out of the test for too few observations: ``Matrix, Benchmark, observed models``."""
    rows = [{"Matrix": label(n), "Benchmark": str(b), "observed models": int(t.at[b, "n"])}
            for n, t in sw.items() for b in t.index[~t["tested"].to_numpy(dtype=bool)]]
    return pd.DataFrame(rows, columns=["Matrix", "Benchmark", "observed models"])


def threshold_sensitivity(matrix: Any, thresholds: Sequence[int], *, correction: str, alpha: float) -> pd.DataFrame:
    """Tested, excluded and rejected columns of ``matrix`` for each threshold of observed models.

    Returns
    -------
    DataFrame
        Columns ``fewest observed models, tested, excluded, rejected, not rejected``, one row per
        threshold (the test needs at least 3 values, so smaller thresholds count as 3).
    """
    rows = []
    for thr in thresholds:
        a = shapiro_wilk_table(matrix, correction=correction, alpha=alpha, min_observed=thr).attrs
        rows.append({"fewest observed models": a["min_observed"], "tested": a["n_tested"],
                     "excluded": a["n_excluded"], "rejected": a["n_rejected"],
                     "not rejected": a["n_tested"] - a["n_rejected"]})
    return pd.DataFrame(rows, columns=["fewest observed models", "tested", "excluded", "rejected", "not rejected"])


def band_table(table: pd.DataFrame) -> pd.DataFrame:
    """Tested and rejected columns of one ``shapiro_wilk_table`` by observed models (:data:`BANDS`).

    Returns
    -------
    DataFrame
        Columns ``observed models, columns, tested, rejected``, one row per band with columns.
    """
    n = table["n"].to_numpy()
    bounds = [b for b, _ in BANDS[1:]] + [np.inf]
    rows = []
    for (lo, name), hi in zip(BANDS, bounds):
        inside = (n >= lo) & (n < hi)
        if inside.any():
            sub = table[inside]
            rows.append({"observed models": name, "columns": int(inside.sum()), "tested": int(sub["tested"].sum()),
                         "rejected": int(sub["reject"].fillna(False).astype(bool).sum())})
    return pd.DataFrame(rows, columns=["observed models", "columns", "tested", "rejected"])


def mardia_table(matrices: Mapping[str, Any], *, alpha: float) -> tuple[pd.DataFrame, dict[str, str]]:
    """Mardia's skewness and kurtosis per matrix; matrices where the test is not defined go to the notes.

    Returns the table (index ``matrix``, columns :data:`MARDIA_COLUMNS`, empty when no matrix can be
    tested) and ``{matrix: reason}`` for those left out.
    """
    rows, notes = [], {}
    for n, m in matrices.items():
        try:
            r = mardia_test(m, alpha=alpha)
        except ValueError as err:
            notes[n] = str(err)
            continue
        rows.append({"matrix": label(n), "complete rows M": r.n_rows, "dropped rows": r.n_dropped, "N (rank)": r.rank,
                     "skewness b1": r.b1, "skew p": r.skew_p, "kurtosis b2": r.b2,
                     "null E[b2] = N(N+2)": r.kurt_expected, "kurtosis z": r.kurt_statistic, "kurt p": r.kurt_p})
    table = pd.DataFrame(rows, columns=["matrix", *MARDIA_COLUMNS]).set_index("matrix")
    return table, notes


def _p_text(p: float) -> str:
    return "<\u00a00.001" if p < 0.001 else num(p, ".3f")


def mardia_view(mardia: pd.DataFrame) -> pd.DataFrame:
    """:func:`mardia_table` as shown: matrix, complete rows, N, β₁ and β₂ with their p-values, z."""
    m = mardia
    rows_of = (m["complete rows M"] + m["dropped rows"]).astype(int)
    return pd.DataFrame({
        "Matrix": m.index.astype(str), "complete rows": [f"{a} of {b}" for a, b in zip(m["complete rows M"], rows_of)],
        "N": m["N (rank)"].astype(int).to_numpy(), "skewness β₁": m["skewness b1"].to_numpy(),
        "p (β₁)": [_p_text(p) for p in m["skew p"]], "kurtosis β₂": m["kurtosis b2"].to_numpy(),
        "null N(N+2)": m["null E[b2] = N(N+2)"].round().astype(int).to_numpy(), "z (β₂)": m["kurtosis z"].to_numpy(),
        "p (β₂)": [_p_text(p) for p in m["kurt p"]]})


def _on_mmlu(v: str, name: str, mmlu_shape: tuple[int, int] | None) -> str:
    """A verdict on MMLU is at best ``"partly"`` when this run's MMLU matrix is not the paper's."""
    other = name == "mmlu" and mmlu_shape is not None and tuple(mmlu_shape) != PAPER_MMLU_SHAPE
    return "partly" if other and v == "reproduced" else v


def _sample_note(name: str, mmlu_shape: tuple[int, int] | None) -> str:
    if name == "mmlu" and mmlu_shape is not None and tuple(mmlu_shape) != PAPER_MMLU_SHAPE:
        return f"{mmlu_shape[0]:,} of the paper's {PAPER_MMLU_SHAPE[0]:,} models"
    return ""


def _all_columns(name: str, sw: Mapping[str, pd.DataFrame], sensitivity: pd.DataFrame | None) -> tuple[int, int, bool]:
    """Rejected and tested columns when every column is tested (from ``sensitivity`` if it has such a row)."""
    if name == "merged" and sensitivity is not None and len(sensitivity):
        full = sensitivity[sensitivity["excluded"] == 0]
        if len(full):
            return int(full.iloc[0]["rejected"]), int(full.iloc[0]["tested"]), True
    a = sw[name].attrs
    return int(a["n_rejected"]), int(a["n_tested"]), a["n_excluded"] == 0


def _count_verdict(rej: int, tested: int, p_rej: int, p_tested: int) -> str:
    if tested == p_tested:
        return verdict(rej, p_rej, tol=0, partly=max(2, p_tested // 20))
    return "partly" if abs(rej - p_rej) <= max(2, p_tested // 20) else "not reproduced"


def _matrix_claims(name: str, sw: Mapping[str, pd.DataFrame], sensitivity: pd.DataFrame | None,
                   mmlu_shape: tuple[int, int] | None, setting: str) -> list[Claim]:
    t, rows = sw[name], []
    note = _sample_note(name, mmlu_shape)
    pr, pn, pw = PAPER[name]
    rej, tested, every = _all_columns(name, sw, sensitivity)
    why = "every column tested" if every else f"{t.attrs['n_excluded']} thin columns not tested"
    if name == "merged" and every and t.attrs["n_excluded"]:
        why = f"{t.attrs['n_rejected']} of {t.attrs['n_tested']} without {t.attrs['n_excluded']} thin columns"
    rows.append(Claim(f"{label(name)}: rejections", "App. H, Fig. 12", f"{pr} of {pn}",
                      f"{rej} of {tested}", _on_mmlu(_count_verdict(rej, tested, pr, pn), name, mmlu_shape),
                      "; ".join(x for x in (note or why, setting) if x),
                      "thin-columns" if name == "merged" else "figure-12"))
    if pw is not None and t["tested"].any():
        med = _median_w(t)
        rows.append(Claim(f"{label(name)}: median W", "App. H", num(pw), num(med),
                          _on_mmlu(verdict(med, pw, tol=0.02, partly=0.05), name, mmlu_shape),
                          note or "same matrix", "figure-12"))
    named = {b: w for b, w in PAPER_WORST[name].items() if b in t.index and bool(t.at[b, "tested"])}
    if named:
        tested_w = t.loc[t["tested"], "W"].sort_values()
        rank = {b: i + 1 for i, b in enumerate(tested_w.index)}
        gap = max(abs(float(t.at[b, "W"]) - w) for b, w in named.items())
        ranks = and_join(str(rank[b]) for b in named)
        rows.append(Claim(f"{label(name)}: lowest W", "App. H",
                          ", ".join(num(w) for w in named.values()),
                          ", ".join(num(t.at[b, "W"]) for b in named),
                          _on_mmlu(verdict(gap, 0.0, tol=0.02, partly=0.05), name, mmlu_shape),
                          f"the paper's {_WORDS.get(len(named), str(len(named)))} rank {ranks} here"
                          + (f"; {note}" if note else ""), "the-worst-benchmarks"))
    return rows


def _mardia_claims(mardia: pd.DataFrame, datasets: Sequence[str], mmlu_shape: tuple[int, int] | None,
                   alpha: float) -> list[Claim]:
    tested = [n for n in ("mmlu", "mteb", "merged") if n in datasets and label(n) in mardia.index]
    if not tested:
        return [not_run("Mardia's tests reject", "App. H", "reject",
                        "no matrix of the paper in this run has complete rows", section="multivariate-normality")]
    rejects = [bool(mardia.at[label(n), "kurt p"] < alpha or mardia.at[label(n), "skew p"] < alpha) for n in tested]
    v = "reproduced" if all(rejects) else "partly" if any(rejects) else "not reproduced"
    if tested == ["mmlu"]:
        v = _on_mmlu(v, "mmlu", mmlu_shape)
    name = "MMLU: Mardia's tests reject" if tested == ["mmlu"] else "Mardia's tests reject"
    rows = [Claim(name, "App. H", "reject",
                  "z = " + ", ".join(num(mardia.at[label(n), "kurtosis z"], ".1f") for n in tested),
                  v, f"kurtosis z of {labels(tested)}", "multivariate-normality")]
    if "mmlu" in tested:
        b2, null = float(mardia.at["MMLU", "kurtosis b2"]), float(mardia.at["MMLU", "null E[b2] = N(N+2)"])
        p_b2, p_null = PAPER_MARDIA_MMLU
        rows.append(Claim("MMLU: Mardia's β₂", "App. H", f"{p_b2:,} (null {p_null:,})",
                          f"{num(b2, ',.0f')} (null {num(null, ',.0f')})",
                          _on_mmlu(verdict(b2, p_b2, tol=0.05 * p_b2, partly=0.2 * p_b2), "mmlu", mmlu_shape),
                          f"{int(mardia.at['MMLU', 'complete rows M']):,} of the paper's "
                          f"{PAPER_MMLU_SHAPE[0]:,} models", "multivariate-normality"))
    return rows


def claims(*, sw: Mapping[str, pd.DataFrame], mardia: pd.DataFrame, sensitivity: pd.DataFrame | None,
           mmlu_shape: tuple[int, int] | None, datasets: Sequence[str], correction: str,
           alpha: float) -> list[Claim]:
    """The claims table's rows: Shapiro-Wilk counts, median and worst W per matrix, Mardia's tests.

    Parameters
    ----------
    sw : mapping
        Per matrix of the run, its ``shapiro_wilk_table``.
    mardia : DataFrame
        :func:`mardia_table`.
    sensitivity : DataFrame or None
        :func:`threshold_sensitivity` of Merged (None when Merged was not run).
    mmlu_shape : tuple or None
        This run's MMLU matrix shape; a claim on another MMLU matrix than the paper's is at best
        ``"partly"`` reproduced.
    datasets : list of str
        The run's matrices; the paper's matrices not among them give ``not run`` rows.
    correction, alpha : str, float
        The run's multiple-testing correction and level (the paper: ``"bh"``, 0.05).

    Returns
    -------
    list of Claim
    """
    setting = ("" if (correction, float(alpha)) == PAPER_SETTINGS else
               f"{_corr_name(correction)} at α = {num(alpha, 'g')}")
    rows: list[Claim] = []
    for name in ("mmlu", "mteb", "merged"):
        if name not in datasets:
            pr, pn, _ = PAPER[name]
            rows.append(not_run(f"{label(name)}: rejections", "App. H, Fig. 12", f"{pr} of {pn}",
                                f"{label(name)} was not among this run's matrices", section="figure-12"))
            continue
        rows += _matrix_claims(name, sw, sensitivity, mmlu_shape, setting)
    return rows + _mardia_claims(mardia, datasets, mmlu_shape, alpha)


def _explain_failures(rows: Sequence[Claim], mmlu_shape: tuple[int, int] | None, setting: str) -> str:
    bad = [c for c in rows if c.verdict in ("partly", "not reproduced")]
    if not bad:
        return "Every claim this page checks is reproduced."
    if not (all(c.claim.startswith("MMLU") for c in bad) and mmlu_shape is not None):
        return paragraph(failures(rows), f"This run tests with {setting}, not the paper's Benjamini-Hochberg "
                         "correction at 5%, which changes the counts of rejections." if setting else
                         "The sections linked in the table show the differences.")
    agree = [c.claim.removeprefix("MMLU: ") for c in bad if c.verdict == "partly"]
    differ = [c.claim.removeprefix("MMLU: ") for c in bad if c.verdict == "not reproduced"]
    return paragraph(
        failures(rows),
        f"Every gap is on MMLU and has one cause: the paper's MMLU matrix of {PAPER_MMLU_SHAPE[0]:,} models is not "
        f"public, and this book's has {mmlu_shape[0]:,} (chapter 1).",
        f"Where the numbers are close ({and_join(agree)}) they come from another sample, hence partly;" if agree else "",
        f"where they differ ({and_join(differ)}) the sample is the reason, since W and Mardia's β₂ describe the "
        "models tested." if differ else "",
        "The conclusions hold on this sample: no MMLU subject is Gaussian."
        if any(c.claim == "MMLU: rejections" and c.run == c.paper for c in rows) else "")


def _caption(sw: Mapping[str, pd.DataFrame], datasets: Sequence[str], correction: str, alpha: float) -> str:
    parts = []
    for n in datasets:
        a = sw[n].attrs
        if a["n_tested"] == 0:
            parts.append(f"no {label(n)} column has enough observed models to be tested")
        elif a["n_rejected"] == a["n_tested"]:
            parts.append(f"all {a['n_tested']} tested {label(n)} benchmarks reject")
        else:
            parts.append(f"{a['n_rejected']} of {a['n_tested']} tested {label(n)} columns reject")
    has_paper = any(PAPER.get(n, (None, None, None))[2] is not None for n in datasets)
    return paragraph(
        f"**Figure 12.** Shapiro-Wilk W of each tested benchmark ({_corr_name(correction)} correction at α = "
        f"{num(alpha, 'g')}); red bars reject normality, blue bars do not. The solid line marks this run's median W"
        + (", the dashed line the paper's." if has_paper else "."),
        f"Normality is rejected {_how_widely(sw, datasets)}: " + "; ".join(parts) + ".")


def _how_widely(sw: Mapping[str, pd.DataFrame], datasets: Sequence[str]) -> str:
    rej = sum(sw[n].attrs["n_rejected"] for n in datasets)
    tested = sum(sw[n].attrs["n_tested"] for n in datasets)
    return "everywhere" if rej == tested else "for most benchmarks" if 2 * rej > tested else "for some benchmarks"


def _skew_link(matrix: Any, table: pd.DataFrame) -> dict[str, float]:
    """What goes with a low W on a matrix: distinct values of the worst column and the median column, and the
    rank correlation of W with the columns' skewness (observed values only; O(models x benchmarks))."""
    from scipy.stats import skew, spearmanr

    scores, obs = np.asarray(matrix.scores, dtype=float), np.asarray(matrix.observed, dtype=bool)
    names = [str(b) for b in matrix.benchmarks]
    cols = {b: scores[obs[:, j], j] for j, b in enumerate(names)}
    tested = table[table["tested"]]
    distinct = pd.Series({b: len(np.unique(np.round(cols[b], 6))) for b in tested.index})
    sk = pd.Series({b: float(skew(cols[b])) for b in tested.index})
    worst = tested["W"].idxmin()
    return {"worst": worst, "distinct_worst": float(distinct[worst]), "distinct_median": float(distinct.median()),
            "skew_worst": float(sk[worst]),
            "rho": float(spearmanr(tested["W"], sk[tested.index]).statistic)}


def _worst_md(sw: Mapping[str, pd.DataFrame], matrices: Mapping[str, Any], datasets: Sequence[str]) -> str:
    out = []
    for n in datasets:
        t = sw[n]
        named = {b: w for b, w in PAPER_WORST.get(n, {}).items() if b in t.index and bool(t.at[b, "tested"])}
        if not named:
            continue
        tested = t.loc[t["tested"], "W"].sort_values()
        rank = {b: i + 1 for i, b in enumerate(tested.index)}
        gap = max(abs(float(t.at[b, "W"]) - w) for b, w in named.items())
        where = ("are the lowest here too" if sorted(rank[b] for b in named) == list(range(1, len(named) + 1)) else
                 f"rank {and_join(str(rank[b]) for b in named)} here")
        out.append(f"on {label(n)} the benchmarks the paper names {where}, "
                   + ("with the same W to two decimals" if gap < 0.005 else f"with W up to {num(gap)} apart"))
    text = [(out[0][:1].upper() + "; ".join(out)[1:] + ".") if out else ""]
    if "mmlu" in datasets and sw["mmlu"]["tested"].sum() > 2:
        k = _skew_link(matrices["mmlu"], sw["mmlu"])
        text.append(
            "The paper puts MMLU's worst down to scores that cluster at a few levels. On this sample the lowest W "
            f"does not come with fewer distinct scores ({k['worst']} takes {num(k['distinct_worst'], '.0f')} "
            f"distinct values, the median subject {num(k['distinct_median'], '.0f')}); it comes with skewness: the "
            f"rank correlation of W with a subject's skewness is {num(k['rho'])}, so the subjects on which most "
            "models score high and a tail of weak models trails below are the least Gaussian."
            if k["distinct_worst"] >= k["distinct_median"] and k["rho"] > 0.5 and k["skew_worst"] < 0 else
            f"On this sample the rank correlation of W with a subject's skewness is {num(k['rho'])}, and "
            f"{k['worst']} takes {num(k['distinct_worst'], '.0f')} distinct values (the median subject "
            f"{num(k['distinct_median'], '.0f')}).")
    return paragraph(*text)


def _threshold_md(sw: Mapping[str, pd.DataFrame], sensitivity: pd.DataFrame | None, bands: pd.DataFrame | None,
                  min_observed: int) -> str:
    if sensitivity is None or "merged" not in sw:
        return ("Merged, where thin columns matter, was not among this run's matrices, so the threshold's effect is "
                "not computed.")
    a = sw["merged"].attrs
    first = sensitivity.iloc[0]
    rej, tested = int(first["rejected"]), int(first["tested"])
    text = [f"Testing every Merged column with at least {int(first['fewest observed models'])} values gives {rej} "
            f"rejections among {tested} columns" + (", the paper's count." if (rej, tested) == PAPER["merged"][:2]
                                                      else f" (the paper: {PAPER['merged'][0]} of 114).")]
    if (rej, tested) == PAPER["merged"][:2] and a["n_excluded"]:
        text.append(f"The paper evidently tested every column, so its {114 - rej} passing benchmarks include the "
                    f"{a['n_excluded']} observed for fewer than {min_observed} models, where a test of so few values "
                    f"cannot reject.")
    tested_bands = [r for r in bands.to_dict("records") if r["tested"]] if bands is not None else []
    if len(tested_bands) > 1:
        rates = [r["rejected"] / r["tested"] for r in tested_bands]
        rising = all(a < b for a, b in zip(rates, rates[1:]))
        text.append(("The paper explains the passes by small samples, and the share of rejections does rise with the "
                     "number of models: " if rising else
                     "The paper explains the passes by small samples; sample size is only part of it: ")
                    + and_join(f"{r['rejected']} of the {r['tested']} tested columns with {r['observed models']} "
                               f"models" for r in tested_bands) + " reject.")
    return paragraph(*text)


def _mardia_md(mardia: pd.DataFrame, notes: Mapping[str, str], matrices: Mapping[str, Any],
               datasets: Sequence[str]) -> str:
    parts = []
    for n in datasets:
        if label(n) in mardia.index:
            r = mardia.loc[label(n)]
            rows = int(r["complete rows M"]) + int(r["dropped rows"])
            used = (f"all {rows:,} rows" if not r["dropped rows"] else
                    f"the {int(r['complete rows M']):,} of {rows:,} rows with every benchmark observed")
            parts.append(f"on {label(n)} ({used}) β₂ = {num(r['kurtosis b2'], ',.0f')} against N(N+2) = "
                         f"{num(r['null E[b2] = N(N+2)'], ',.0f')}, z = {num(r['kurtosis z'], '.1f')}")
    untested = [n for n in datasets if n in notes]
    return paragraph(
        (parts[0][:1].upper() + "; ".join(parts)[1:] + ".") if parts else "",
        " ".join(f"{label(n)} cannot be tested: {count(_complete_rows(matrices[n]), 'model')} of "
                 f"{matrices[n].shape[0]:,} observe all {matrices[n].shape[1]} benchmarks, and the test needs more "
                 f"complete rows than benchmarks." for n in untested))


def _complete_rows(m: Any) -> int:
    return int(np.asarray(m.observed, dtype=bool).all(axis=1).sum())


def prose(*, sw: Mapping[str, pd.DataFrame], mardia: pd.DataFrame, mardia_notes: Mapping[str, str],
          matrices: Mapping[str, Any], sensitivity: pd.DataFrame | None, bands: pd.DataFrame | None,
          datasets: Sequence[str], alpha: float, correction: str, min_observed: int) -> PageProse:
    """The page's passages and its claims table, written from the tests of this run.

    Parameters
    ----------
    sw : mapping
        Per matrix the ``shapiro_wilk_table``.
    mardia, mardia_notes :
        :func:`mardia_table`.
    matrices : mapping
        The run's matrices, by name.
    sensitivity : DataFrame or None
        :func:`threshold_sensitivity` of Merged (None when Merged was not run).
    bands : DataFrame or None
        :func:`band_table` of Merged's test (None when Merged was not run).
    datasets, alpha, correction, min_observed :
        The run's parameters.

    Returns
    -------
    PageProse
        Passages ``claims``, ``failures_md``, ``fig12_caption``, ``worst_md``, ``threshold_md``, ``mardia_md``.
    """
    mmlu_shape = tuple(matrices["mmlu"].shape) if "mmlu" in matrices else None
    setting = ("" if (correction, float(alpha)) == PAPER_SETTINGS else
               f"{_corr_name(correction)} at α = {num(alpha, 'g')}")
    rows = claims(sw=sw, mardia=mardia, sensitivity=sensitivity, mmlu_shape=mmlu_shape, datasets=datasets,
                  correction=correction, alpha=alpha)
    return PageProse(list(datasets), {
        "claims": claims_table(rows), "failures_md": _explain_failures(rows, mmlu_shape, setting),
        "fig12_caption": _caption(sw, datasets, correction, alpha),
        "worst_md": _worst_md(sw, matrices, datasets),
        "threshold_md": _threshold_md(sw, sensitivity, bands, min_observed),
        "mardia_md": _mardia_md(mardia, mardia_notes, matrices, datasets)
        or "No matrix of this run has enough complete rows for Mardia's test."})
