"""Chapter 3: eigenspectrum and the spectral diagnostic (Section 5.2, Figure 1; Section 4.3, Lemma 1)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...method.em import em_settings
from ..notebook import and_join
from ..prose import (
    PageProse,
    bullets,
    code,
    count,
    label,
    labels,
    num,
    paragraph,
    pct,
    run_line,
)

__all__ = ["PAPER_K", "components_table", "em_note", "estimates_table", "lemma_table", "prose"]

#: Section 5.2: components for 90% (and Merged 95%) explained variance.
PAPER_K: dict[str, dict[float, int]] = {"mmlu": {0.90: 2}, "mteb": {0.90: 6}, "merged": {0.90: 8, 0.95: 12}}
#: The paper's MMLU matrix (Section 5): models.
PAPER_MMLU_MODELS = 5452


def estimates_table(matrices: Mapping[str, Any], estimates: Mapping[str, Any], spectra: Mapping[str, Any]) -> pd.DataFrame:
    """Per matrix: shape, estimator, EM iterations / convergence / floor and the largest eigenvalue."""
    rows = []
    for n, m in matrices.items():
        em = estimates[n].em
        rows.append({"matrix": label(n), "M": m.shape[0], "N": m.shape[1], "observed": round(m.observed_fraction, 3),
                     "estimator": estimates[n].method, "EM iterations": em.n_iter if em is not None else None,
                     "EM converged": em.converged if em is not None else None,
                     "PSD floor": em.eps_psd if em is not None else None,
                     "largest eigenvalue": spectra[n].eigenvalues[0]})
    return pd.DataFrame(rows).set_index("matrix")


def components_table(spectra: Mapping[str, Any], levels: Sequence[float]) -> pd.DataFrame:
    """Components needed for each explained-variance level, beside the paper's counts, and rho(1)."""
    rows = []
    for n, sp in spectra.items():
        row: dict[str, Any] = {"matrix": label(n)}
        for lvl in levels:
            row[f"k for {100 * lvl:g}%"] = sp.n_components(lvl)
            row[f"paper k for {100 * lvl:g}%"] = PAPER_K.get(n, {}).get(lvl, "")
        row["explained by k=1"] = round(float(sp.cumulative[0]), 3)
        rows.append(row)
    return pd.DataFrame(rows).set_index("matrix")


def lemma_table(tables: Mapping[str, pd.DataFrame], k_show: Sequence[int]) -> pd.DataFrame:
    """Greedy residual fraction against the eigenvalue tail at the subset sizes ``k_show``."""
    rows = []
    for n, t in tables.items():
        t = t.set_index("k")
        for k in k_show:
            if k in t.index:
                rows.append({"matrix": label(n), "k": k, "greedy residual fraction": t.at[k, "cholesky_residual_fraction"],
                             "eigenvalue tail fraction": t.at[k, "eigen_tail_fraction"], "ratio": t.at[k, "ratio"],
                             "k-th pick": t.at[k, "pivot_name"]})
    return pd.DataFrame(rows).set_index(["matrix", "k"]) if rows else pd.DataFrame()


def _bound_holds(t: pd.DataFrame, trace: float) -> bool:
    return bool((t["cholesky_residual"] >= t["eigen_tail"] - 1e-9 * trace).all())


def _greedy_k(t: pd.DataFrame, level: float = 0.90) -> int | None:
    """Smallest k whose greedy residual fraction is at most 1 - level (None if no k reaches it)."""
    ok = t[t["cholesky_residual_fraction"] <= 1 - level + 1e-12]
    return int(ok["k"].min()) if len(ok) else None


def em_note(name: str, matrix: Any, estimate: Any, *, config: str) -> str:
    """A sentence on an EM estimate that stopped at its iteration cap (empty when EM converged or was not used)."""
    em = estimate.em
    if em is None or em.converged:
        return ""
    tol = em_settings(matrix.shape[0], matrix.shape[1], matrix.observed_fraction, config=config, context="full")["tol"]
    rc = np.asarray(em.rel_change, dtype=float)
    best = int(np.argmin(rc))
    return (f"EM on {label(name)} stopped at its cap of {em.n_iter} iterations without the relative change of Σ "
            f"falling below the tolerance {num(tol, '.0e')} (smallest change {num(rc[best], '.4e')} at iteration "
            f"{best + 1}, last {num(rc[-1], '.1e')}), so its spectrum is that of the last iterate and its smallest "
            f"eigenvalues are the least settled.")


def prose(
    *,
    matrices: Mapping[str, Any],
    estimates: Mapping[str, Any],
    spectra: Mapping[str, Any],
    tables: Mapping[str, pd.DataFrame],
    levels: Sequence[float],
    config: str,
    max_iter: int | None,
    quick: bool,
) -> PageProse:
    """The page's passages, written from the estimates of this run.

    Parameters
    ----------
    matrices, estimates, spectra, tables : mapping
        Per matrix of this run: the ScoreMatrix, its correlation estimate
        (``estimate_correlation``), its :class:`Eigenspectrum` and its
        ``spectral_comparison`` table.
    levels : list of float
        Explained-variance levels of the component table.
    config, max_iter, quick :
        EM configuration and iteration cap of this run, quick mode.

    Returns
    -------
    PageProse
        Passages ``this_book``, ``differ``, ``components_md``, ``lemma_md``, ``findings``.
    """
    names = list(matrices)
    k90 = {n: spectra[n].n_components(0.90) for n in names}
    rho1 = {n: float(spectra[n].cumulative[0]) for n in names}
    holds = {n: _bound_holds(tables[n], float(np.trace(estimates[n].corr))) for n in names}
    details = [f"EM configuration {code(config)}"] + ([f"EM capped at {max_iter} iterations"] if max_iter else [])
    capped = [n for n in names if estimates[n].em is not None and not estimates[n].em.converged]
    if max_iter is not None and capped:
        notes = [f"This run caps EM at {count(max_iter, 'iteration')}, fewer than {labels(capped)} "
                 f"{'needs' if len(capped) == 1 else 'need'} to reach the tolerance, so "
                 f"{'its spectrum is' if len(capped) == 1 else 'their spectra are'} those of the last iterate."]
    else:
        notes = [em_note(n, matrices[n], estimates[n], config=config) for n in capped]

    def vs_paper(n: str, lvl: float = 0.90) -> str:
        k = spectra[n].n_components(lvl)
        paper = PAPER_K.get(n, {}).get(lvl)
        return f"{k} (paper: {paper})" if paper is not None else f"{k} (the paper gives no count)"

    comp = [f"{label(n)} {vs_paper(n)}" for n in names]
    if "merged" in names:
        comp.append(f"Merged for 95%: {vs_paper('merged', 0.95)}")
    components_md = paragraph(f"Components needed for 90% explained variance: {'; '.join(comp)}.",
                              "The first component alone explains "
                              + and_join(f"{pct(rho1[n])} of {label(n)}'s variance" for n in names) + ".")

    after, need = [], []
    for n in names:
        t = tables[n].set_index("k", drop=False)
        k5 = min(5, int(t["k"].max()))
        after.append(f"{pct(t.at[k5, 'cholesky_residual_fraction'], 1)} on {label(n)} after {k5} (eigenvalue tail "
                     f"{pct(t.at[k5, 'eigen_tail_fraction'], 1)})")
        g = _greedy_k(t)
        need.append(f"{count(g, 'benchmark')} on {label(n)} (PCA: {count(k90[n], 'component')})" if g is not None
                    else f"more than {count(int(t['k'].max()), 'benchmark')} on {label(n)}")
    n_hold = sum(holds.values())
    lemma_md = paragraph(f"The residual variance fraction after the greedy picks is {'; '.join(after)}.",
                         f"Greedy entropy needs {'; '.join(need)} to leave at most 10% of the variance.",
                         f"The bound of Lemma 1 (greedy residual ≥ eigenvalue tail at every k) holds on {n_hold} of "
                         f"the {len(names)} matrices.")

    same = [n for n in names if n in PAPER_K and k90[n] == PAPER_K[n][0.90]]
    other = [n for n in names if n in PAPER_K and k90[n] != PAPER_K[n][0.90]]
    this_book = paragraph(
        run_line(names, described=list(PAPER_K), details=details, quick=quick),
        f"Components for 90% explained variance: {'; '.join(comp)}.",
        f"The Lemma 1 bound holds on {n_hold} of the {len(names)} matrices computed.")
    differ_parts = [f"{labels(same)} {'agrees' if len(same) == 1 else 'agree'} with the paper's count." if same
                    else ""]
    if "mmlu" in other:
        m = matrices["mmlu"]
        differ_parts.append(
            f"MMLU is a {m.shape[0]}-model matrix of mostly well-known open models (the paper: "
            f"{PAPER_MMLU_MODELS:,}), where the first component alone explains {pct(rho1['mmlu'])} of the variance, "
            f"so {'fewer' if k90['mmlu'] < 2 else 'other'} components reach 90% than on the paper's matrix.")
    rest = [n for n in other if n != "mmlu"]
    if rest:
        differ_parts.append(f"{labels(rest)} {'differs' if len(rest) == 1 else 'differ'} from the paper's count in "
                            f"this run" + (" (EM capped by this run's iteration limit)." if max_iter else "."))
    differ_parts.extend(notes)
    differ = paragraph(*differ_parts)

    found = []
    for n in names:
        text = f"**{label(n)}** needs {count(k90[n], 'component')} for 90% explained variance"
        paper = PAPER_K.get(n, {}).get(0.90)
        if n == "merged":
            text += f" and {spectra[n].n_components(0.95)} for 95%, against the paper's 8 and 12."
            text += (" Merged's estimate depends on the EM settings (69% missing, PSD floor 10⁻³"
                     + (", EM stopped at the paper's tolerance 5 × 10⁻⁴" if estimates[n].em.converged else "")
                     + "; chapter 2): its small eigenvalues, and with them these counts, are the least certain, and "
                     "EM run to a tighter tolerance gives a different spectrum.")
        elif paper is not None:
            text += f"; the paper reports {paper}."
        else:
            text += " (the paper gives no count)."
        if n == "mmlu" and k90[n] != PAPER_K["mmlu"][0.90]:
            m = matrices["mmlu"]
            text += (f" This matrix is {m.shape[0]} × {m.shape[1]} instead of 5,452 × 57 and holds mostly well-known, "
                     f"similarly trained open models, so a single general-ability factor explains more of it "
                     f"({pct(rho1[n])} for k = 1).")
        found.append(paragraph(text, "" if max_iter is not None else em_note(n, matrices[n], estimates[n],
                                                                          config=config)))
    if max_iter is not None and capped:
        found.append(notes[0])
    found.append(paragraph(
        f"**Lemma 1**: the greedy residual stays at or above the eigenvalue tail at every k on {n_hold} of the "
        f"{len(names)} matrices, and the `ratio` column shows by how much.",
        "A fast-decaying spectrum goes with a fast-falling greedy residual, so the spectrum is a guide for choosing "
        "k, while the cross-validated R² of chapter 4 is the actual evidence."))
    return PageProse(names, {"this_book": this_book, "differ": differ, "components_md": components_md,
                             "lemma_md": lemma_md, "findings": bullets(found)})
