"""Chapter 3: eigenspectrum and the spectral diagnostic (Section 5.2, Figure 1; Section 4.3, Lemma 1).

The paper's component counts, the page's tables and its claims table: the counts, Lemma 1, and the fast fall of
the greedy residual that Section 5.2 expects from a fast-decaying spectrum.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..claims import Claim, not_run, quantity, verdict
from ..prose import count, label, pct

__all__ = ["FAST_FACTOR", "PAPER_K", "PAPER_MMLU_MODELS", "claims", "components_table", "em_text", "greedy_k",
           "identity_gap", "lemma_table", "ratio_range"]

#: Section 5.2: components for 90% (and, for Merged, 95%) explained variance.
PAPER_K: dict[str, dict[float, int]] = {"mmlu": {0.90: 2}, "mteb": {0.90: 6}, "merged": {0.90: 8, 0.95: 12}}
#: The paper's MMLU matrix (Section 5): models.
PAPER_MMLU_MODELS = 5452
#: "Falls quickly": greedy leaves at most 10% of the variance within this many times the PCA count.
FAST_FACTOR = 2


def em_text(estimate: Any, config: str) -> str:
    """How a correlation was estimated: ``"pairwise (complete)"``, ``"EM (released), 67 iterations"``, ..."""
    em = estimate.em
    return "pairwise (complete)" if em is None else (f"EM ({config}), {em.n_iter} iterations"
                                                     + ("" if em.converged else ", stopped at cap"))


def components_table(spectra: Mapping[str, Any], levels: Sequence[float],
                     estimated: Mapping[str, str]) -> pd.DataFrame:
    """Per matrix (``spectra``: name -> Eigenspectrum): components for each level (with the paper's count), the
    first component's share, and how the correlation was estimated (``estimated``: name -> :func:`em_text`)."""
    rows = []
    for n, sp in spectra.items():
        row: dict[str, Any] = {"Matrix": label(n)}
        for lvl in levels:
            paper = PAPER_K.get(n, {}).get(lvl)
            row[f"{100 * lvl:g}%"] = f"{sp.n_components(lvl)}" + (f" (paper: {paper})" if paper is not None else "")
        rows.append({**row, "First component": pct(sp.cumulative[0]), "Estimate": estimated[n]})
    return pd.DataFrame(rows)


def lemma_table(tables: Mapping[str, pd.DataFrame], k_show: Sequence[int]) -> pd.DataFrame:
    """Greedy residual fraction, eigenvalue tail, their ratio and the k-th pick, one row per (matrix, k)."""
    rows = []
    for n, t in tables.items():
        t = t.set_index("k")
        rows += [{"Matrix": label(n), "k": int(k), "Greedy residual": t.at[k, "cholesky_residual_fraction"],
                  "Eigenvalue tail": t.at[k, "eigen_tail_fraction"], "Ratio": t.at[k, "ratio"],
                  "k-th pick": str(t.at[k, "pivot_name"])} for k in k_show if k in t.index]
    return pd.DataFrame(rows, columns=["Matrix", "k", "Greedy residual", "Eigenvalue tail", "Ratio", "k-th pick"])


def identity_gap(corr: np.ndarray, table: pd.DataFrame, ks: Sequence[int]) -> float:
    """Lemma 1(b): largest gap, as a share of the trace, between tr of the Schur complement after the first k
    picks and the pivoted-Cholesky trace of ``table`` (``spectral_comparison``). O(len(ks) N^3)."""
    r = np.asarray(corr, dtype=float)
    order, chol = table["pivot"].to_numpy(dtype=int), table.set_index("k")["cholesky_residual"]
    gaps = [0.0]
    for k in (k for k in ks if k in chol.index and k < r.shape[0]):
        a, rest = order[:k], np.setdiff1d(np.arange(r.shape[0]), order[:k])
        schur = r[np.ix_(rest, rest)] - r[np.ix_(rest, a)] @ np.linalg.solve(r[np.ix_(a, a)], r[np.ix_(a, rest)])
        gaps.append(abs(float(np.trace(schur)) - float(chol[k])) / float(np.trace(r)))
    return max(gaps)


def greedy_k(table: pd.DataFrame, *, level: float = 0.90) -> int | None:
    """Smallest k whose greedy residual fraction is at most ``1 - level`` (None if no k reaches it)."""
    ok = table[table["cholesky_residual_fraction"] <= 1 - level + 1e-12]
    return int(ok["k"].min()) if len(ok) else None


def claims(*, spectra: Mapping[str, Any], tables: Mapping[str, pd.DataFrame], gaps: Mapping[str, float],
           models: Mapping[str, int], config: str, max_iter: int | None) -> list[Claim]:
    """The claims table: Section 5.2's component counts, Lemma 1 and the fast fall of the greedy residual.

    Parameters
    ----------
    spectra, tables, gaps, models : mapping
        Per matrix run: its Eigenspectrum, ``spectral_comparison`` table, :func:`identity_gap`, number of models.
    config, max_iter : str, int or None
        EM configuration and iteration cap of the estimates (in the counts' keys).

    Returns
    -------
    list of Claim
    """
    rows, em = [], {"config": config, **({"max_iter": max_iter} if max_iter is not None else {})}
    for n, levels in PAPER_K.items():
        for lvl, paper in sorted(levels.items()):
            what = f"{label(n)}: components for {100 * lvl:g}%"
            key = quantity(f"{n}-components", level=lvl, **(em if n != "mmlu" else {}))
            if n not in spectra:
                rows.append(not_run(what, "Sec. 5.2, Fig. 1", str(paper), f"{label(n)} was not in this run",
                                    section="figure-1", key=key))
            else:
                k = spectra[n].n_components(lvl)
                why = (f"{models[n]:,} of the paper's {PAPER_MMLU_MODELS:,} models" if n == "mmlu" else
                       "same count" if k == paper else f"{k - paper:+d} against the paper")
                rows.append(Claim(what, "Sec. 5.2, Fig. 1", str(paper), str(k), verdict(k, paper, kind="count"),
                                  why, section="figure-1", key=key))
    names, gap = list(tables), max(gaps.values())
    rows.append(Claim("Greedy residual = pivoted-Cholesky trace", "Lemma 1(b)", "identity",
                      f"largest gap {gap:.1e} of the trace", verdict(gap, 0.0, kind="r2"),
                      "Schur complement computed directly", section="lemma-1"))
    holds = [bool((t["cholesky_residual"] >= t["eigen_tail"] - 1e-9).all()) for t in tables.values()]
    rows.append(Claim("Eigenvalue tail ≤ greedy residual at every k", "Lemma 1, Sec. 4.3", "all matrices",
                      f"{sum(holds)} of {count(len(names), 'matrix', 'matrices')}",
                      verdict(sum(holds) / len(names), 1.0, kind="share", direction="at least"),
                      "every k up to N", section="lemma-1"))
    picks = {n: greedy_k(tables[n]) for n in names}
    fast = [n for n in names if picks[n] is not None and picks[n] <= FAST_FACTOR * spectra[n].n_components(0.9)]
    rows.append(Claim("Greedy residual falls quickly (10% left)", "Sec. 5.2", "suggested, all matrices",
                      ", ".join(f"{label(n)} {picks[n] if picks[n] else 'none'}" for n in names) + " picks",
                      verdict(len(fast) / len(names), 1.0, kind="share", direction="at least"),
                      f"within {FAST_FACTOR}× the PCA count on {len(fast)} of {len(names)}", section="lemma-1"))
    return rows


def ratio_range(tables: Mapping[str, pd.DataFrame], k_max: int) -> tuple[float, float]:
    """Smallest and largest finite greedy/tail ratio over the first ``k_max`` picks of every matrix."""
    r = np.concatenate([t["ratio"].to_numpy(dtype=float)[:k_max] for t in tables.values()])
    r = r[np.isfinite(r)] if np.isfinite(r).any() else np.array([np.nan])
    return float(r.min()), float(r.max())
