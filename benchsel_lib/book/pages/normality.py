"""Chapter 7: normality diagnostics (Appendix H, Figure 12): the paper's numbers, the chapter's tables, its claims.

The tests are :func:`benchsel_lib.studies.diagnostics.shapiro_wilk_table` and ``mardia_test``.
"""
from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ...studies.diagnostics import mardia_test, shapiro_wilk_table
from ..claims import Claim, not_run, quantity, verdict
from ..prose import label, num

__all__ = ["PAPER", "PAPER_MARDIA_MMLU", "PAPER_MMLU_MODELS", "PAPER_WORST", "claims", "mardia_table",
           "shapiro_summary", "threshold_sensitivity", "worst_table"]

#: Appendix H, Figure 12: rejected and tested benchmarks, median W (none given for Merged).
PAPER: dict[str, tuple[int, int, float | None]] = {"mmlu": (57, 57, 0.84), "mteb": (56, 56, 0.89), "merged": (60, 114, None)}
#: Appendix H: the lowest W the paper names per matrix.
PAPER_WORST: dict[str, dict[str, float]] = {
    "mmlu": {"marketing": 0.66, "world_religions": 0.70}, "mteb": {"SprintDuplicateQuestions": 0.46, "STS17": 0.50},
    "merged": {"mmlu/world_religions": 0.71, "mmlu/marketing": 0.71, "mmlu/logical_fallacies": 0.74}}
#: Appendix H: Mardia's kurtosis on MMLU and its null expectation N(N+2); models of the paper's MMLU.
PAPER_MARDIA_MMLU, PAPER_MMLU_MODELS = (6374, 3363), 5452


def shapiro_summary(sw: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per matrix (name -> ``shapiro_wilk_table``): benchmarks, tested, rejected, median W, the paper's (Fig. 12)."""
    rows = [{"Matrix": label(n), "benchmarks": len(t), "tested": t.attrs["n_tested"],
             "rejected": t.attrs["n_rejected"], "median W": t.loc[t["tested"], "W"].median(),
             "paper rejected": "{} of {}".format(*PAPER[n][:2]) if n in PAPER else None,
             "paper median W": PAPER.get(n, (0, 0, None))[2]} for n, t in sw.items()]
    return pd.DataFrame(rows)


def worst_table(sw: pd.DataFrame, name: str, n_worst: int) -> pd.DataFrame:
    """One matrix's ``n_worst`` lowest-W benchmarks and those the paper names: ``Benchmark, models, W, rank, paper W``."""
    tested = sw[sw["tested"]].sort_values("W")
    rank = {b: i + 1 for i, b in enumerate(tested.index)}
    named = PAPER_WORST.get(name, {})
    keep = sorted(dict.fromkeys([*tested.index[:n_worst], *(b for b in named if b in rank)]), key=rank.get)
    return pd.DataFrame([{"Benchmark": b, "models": int(sw.at[b, "n"]), "W": float(sw.at[b, "W"]), "rank": rank[b],
                          "paper W": named.get(b)} for b in keep], columns=["Benchmark", "models", "W", "rank", "paper W"])


def threshold_sensitivity(matrix: Any, thresholds: Sequence[int], *, correction: str, alpha: float) -> pd.DataFrame:
    """Tested, untested and rejected columns for each threshold of observed models (fewer than 3 count as 3)."""
    attrs = [shapiro_wilk_table(matrix, correction=correction, alpha=alpha, min_observed=t).attrs for t in thresholds]
    return pd.DataFrame([{"fewest observed models": a["min_observed"], "tested": a["n_tested"],
                          "not tested": a["n_excluded"], "rejected": a["n_rejected"]} for a in attrs])


def mardia_table(matrices: Mapping[str, Any], *, alpha: float) -> pd.DataFrame:
    """Mardia's tests (App. H) on each matrix's complete rows, indexed by name; a matrix with fewer complete rows
    than benchmarks, which the test cannot take, is left out."""
    rows = {}
    for n, m in matrices.items():
        with contextlib.suppress(ValueError):
            r = mardia_test(m, alpha=alpha)
            rows[n] = {"complete rows": f"{r.n_rows} of {r.n_rows + r.n_dropped}", "N": r.rank, "skewness β₁": r.b1,
                       "kurtosis β₂": r.b2, "null N(N+2)": r.kurt_expected, "z (β₂)": r.kurt_statistic,
                       "rejects": bool(r.skew_p < alpha or r.kurt_p < alpha)}
    return pd.DataFrame.from_dict(rows, orient="index")


def _matrix_claims(n: str, sw: Mapping[str, pd.DataFrame], every_column: pd.DataFrame | None, n_models: Mapping[str, int],
                   min_observed: int, ks: dict[str, Any]) -> list[Claim]:
    """Appendix H's claims on matrix ``n``: its rejections, median W and lowest W; ``not run`` when it was not run."""
    (p_rej, p_tested, p_med), m, where, sec = PAPER[n], label(n), "App. H, Fig. 12", "figure-12"
    size = f"{n_models.get(n, 0):,} of the paper's {PAPER_MMLU_MODELS:,} models" if n == "mmlu" else f"{n_models.get(n, 0):,} models"
    if n not in sw:
        return [not_run(f"{m}: benchmarks that reject", where, f"{p_rej} of {p_tested}", f"{m} was not in this run")]
    t, a = sw[n], sw[n].attrs
    rej, tested, thr = a["n_rejected"], a["n_tested"], a["min_observed"]
    if n == "merged" and every_column is not None and (every_column["fewest observed models"] <= 3).any():
        e = every_column[every_column["fewest observed models"] <= 3].iloc[0]
        rej, tested, thr, sec = int(e["rejected"]), int(e["tested"]), 3, "thin-columns"
    why = size if tested == p_tested else f"{p_tested - tested} columns under {thr} models not tested"
    rows = [Claim(f"{m}: benchmarks that reject", where, f"{p_rej} of {p_tested}", f"{rej} of {tested}",
                  verdict(rej, p_rej, kind="count"), why, sec, quantity(f"{n}-shapiro-rejections", min_observed=thr, **ks))]
    if p_med is not None:
        med = float(t.loc[t["tested"], "W"].median())
        rows.append(Claim(f"{m}: median W", "App. H", num(p_med), num(med), verdict(med, p_med, kind="statistic"),
                          size, "figure-12", quantity(f"{n}-shapiro-median-w", min_observed=min_observed)))
    named = {b: w for b, w in PAPER_WORST[n].items() if b in t.index and bool(t.at[b, "tested"])}
    if named:
        gap = max(abs(float(t.at[b, "W"]) - w) for b, w in named.items())
        rank = t.loc[t["tested"], "W"].rank(method="first").astype(int)
        rows.append(Claim(f"{m}: lowest W ({', '.join(named)})", "App. H", ", ".join(num(w) for w in named.values()),
                          ", ".join(num(t.at[b, "W"]) for b in named), verdict(gap, 0.0, kind="statistic"),
                          f"ranks {', '.join(str(rank[b]) for b in named)} here; {size}", "the-worst-benchmarks"))
    return rows


def claims(*, sw: Mapping[str, pd.DataFrame], mardia: pd.DataFrame, every_column: pd.DataFrame | None,
           n_models: Mapping[str, int], correction: str, alpha: float, min_observed: int) -> list[Claim]:
    """The claims of Appendix H checked on this run's tests, under the book's one rule (:func:`verdict`).

    Parameters
    ----------
    sw : mapping
        Matrix name -> ``shapiro_wilk_table``; a paper matrix missing here gives a ``not run`` row.
    mardia : DataFrame
        :func:`mardia_table`.
    every_column : DataFrame or None
        :func:`threshold_sensitivity` of Merged: its row at 3 models (every column tested, as in the paper) gives Merged's count.
    n_models, correction, alpha, min_observed :
        Models per matrix (named in the *why* column) and the test settings (in the quantity keys).

    Returns
    -------
    list of Claim
    """
    ks = dict(correction=correction, alpha=alpha)
    rows = [c for n in PAPER for c in _matrix_claims(n, sw, every_column, n_models, min_observed, ks)]
    tested, untested = [n for n in sw if n in mardia.index], [label(n) for n in sw if n not in mardia.index]
    why = f"{', '.join(untested)}: fewer complete rows than benchmarks" if untested else "every matrix run tested"
    share = sum(bool(mardia.at[n, "rejects"]) for n in tested) / max(len(tested), 1)
    rows.append(Claim("Mardia's tests reject", "App. H", "reject", f"{share * len(tested):.0f} of {len(tested)} "
                      f"({', '.join(map(label, tested))})", verdict(share, 1.0, kind="share"), why, "multivariate-normality")
                if tested else not_run("Mardia's tests reject", "App. H", "reject", why, section="multivariate-normality"))
    if "mmlu" in mardia.index:
        b2, null = float(mardia.at["mmlu", "kurtosis β₂"]), float(mardia.at["mmlu", "null N(N+2)"])
        rows.append(Claim("MMLU: Mardia's kurtosis β₂", "App. H", f"{PAPER_MARDIA_MMLU[0]:,} (null {PAPER_MARDIA_MMLU[1]:,})",
                          f"{num(b2, ',.0f')} (null {num(null, ',.0f')})", verdict(b2, PAPER_MARDIA_MMLU[0], kind="relative"),
                          f"{n_models['mmlu']:,} of the paper's {PAPER_MMLU_MODELS:,} models", "multivariate-normality"))
    return rows
