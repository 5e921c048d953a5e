"""Chapter 3: eigenspectrum and the spectral diagnostic (Section 5.2, Figure 1; Section 4.3, Lemma 1).

The page estimates each matrix's correlation as Section 5.2 describes, counts
the principal components that reach 90% and 95% of the variance (the
paper's Figure 1 and its counts), and compares the residual variance that
greedy entropy selection (pivoted Cholesky) leaves with the eigenvalue tail
that bounds it from below (Lemma 1). The functions below turn the run's
estimates into the page's tables, its claims table (:func:`claims`) and its
prose (:func:`prose`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...method.correlation import estimate_correlation
from ...method.em import em_settings
from ..claims import Claim, claims_table, failures, not_run, verdict
from ..notebook import and_join
from ..prose import PageProse, count, label, labels, num, paragraph, pct
from .em import sci, size

__all__ = ["PAPER_K", "PAPER_MMLU_MODELS", "claims", "components_table", "em_note", "estimates_table", "greedy_k",
           "identity_gap", "lemma_table", "plain_reference", "prose"]

#: Section 5.2: components for 90% (and Merged 95%) explained variance.
PAPER_K: dict[str, dict[float, int]] = {"mmlu": {0.90: 2}, "mteb": {0.90: 6}, "merged": {0.90: 8, 0.95: 12}}
#: The paper's MMLU matrix (Section 5): models.
PAPER_MMLU_MODELS = 5452
#: Greedy entropy "falls quickly" when it leaves at most 10% of the variance within this many times the PCA count.
FAST_FACTOR = 2
#: Lemma 1(b) holds when the Schur-complement trace and the pivoted-Cholesky trace agree to this share of the trace.
IDENTITY_TOL = 1e-8


def plain_reference(matrix: Any, estimate: Any, *, config: str, max_iter: int | None) -> Any | None:
    """The plain-EM estimate beside a SQUAREM-accelerated one (None when the estimate is not accelerated).

    ``estimate_correlation`` accelerates EM with SQUAREM where it runs EM to its
    fixed point (:func:`~benchsel_lib.method.em.em_settings`, ``accelerate="auto"``);
    the plain iteration, as in Appendix G, shows how many iterations that saves.

    Parameters
    ----------
    matrix : ScoreMatrix
    estimate : CorrelationEstimate
        The page's estimate of ``matrix``.
    config : str
        The EM configuration of the estimate.
    max_iter : int or None
        The run's cap on EM iterations.

    Returns
    -------
    CorrelationEstimate or None
    """
    if estimate.em is None:
        return None
    m, n = matrix.shape
    if em_settings(m, n, matrix.observed_fraction, config=config, context="full")["accelerate"] != "squarem":
        return None
    options: dict[str, Any] = {"accelerate": None}
    if max_iter is not None:
        options["max_iter"] = int(max_iter)
    return estimate_correlation(matrix.scores, method="auto", config=config, std_floor="variance",
                                em_options=options)


def _em_text(estimate: Any, plain: Any | None) -> str:
    em = estimate.em
    if em is None:
        return f"none ({estimate.method})"
    cap = "" if em.converged else " (cap)"
    if plain is None:
        return f"plain, {em.n_iter}{cap}"
    return f"SQUAREM, {em.n_iter}{cap} (plain: {plain.em.n_iter}{'' if plain.em.converged else ' (cap)'})"


def estimates_table(matrices: Mapping[str, Any], estimates: Mapping[str, Any], spectra: Mapping[str, Any],
                    plain: Mapping[str, Any | None]) -> pd.DataFrame:
    """Per matrix: size, observed share, EM updates (and plain EM's iterations), floor, largest eigenvalue."""
    rows = []
    for n, m in matrices.items():
        em = estimates[n].em
        rows.append({"Matrix": label(n), "Size": size(*m.shape), "Observed": pct(m.observed_fraction),
                     "EM updates": _em_text(estimates[n], plain.get(n)),
                     "Floor": sci(em.eps_psd) if em is not None and em.eps_psd else "—",
                     "Largest eigenvalue": float(spectra[n].eigenvalues[0])})
    return pd.DataFrame(rows)


def components_table(spectra: Mapping[str, Any], levels: Sequence[float]) -> pd.DataFrame:
    """Components needed for each explained-variance level (with the paper's count where it gives one) and the
    share the first component explains."""
    rows = []
    for n, sp in spectra.items():
        row: dict[str, Any] = {"Matrix": label(n)}
        for lvl in levels:
            k = sp.n_components(lvl)
            paper = PAPER_K.get(n, {}).get(lvl)
            row[f"{100 * lvl:g}%"] = f"{k} (paper: {paper})" if paper is not None else str(k)
        row["First component"] = pct(sp.cumulative[0])
        rows.append(row)
    return pd.DataFrame(rows)


def lemma_table(tables: Mapping[str, pd.DataFrame], k_show: Sequence[int]) -> pd.DataFrame:
    """Greedy residual fraction against the eigenvalue tail at the subset sizes ``k_show``, one row per (matrix, k)."""
    rows = []
    for n, t in tables.items():
        t = t.set_index("k")
        for k in k_show:
            if k in t.index:
                rows.append({"Matrix": label(n), "k": int(k), "Greedy residual": t.at[k, "cholesky_residual_fraction"],
                             "Eigenvalue tail": t.at[k, "eigen_tail_fraction"], "Ratio": t.at[k, "ratio"],
                             "k-th pick": str(t.at[k, "pivot_name"])})
    return pd.DataFrame(rows, columns=["Matrix", "k", "Greedy residual", "Eigenvalue tail", "Ratio", "k-th pick"])


def identity_gap(corr: np.ndarray, table: pd.DataFrame, ks: Sequence[int]) -> float:
    """Lemma 1(b): the largest gap, as a share of the trace, between the residual variance after the first k
    picks computed directly (the Schur complement's trace) and the pivoted-Cholesky trace of ``table``.

    Parameters
    ----------
    corr : array, shape (N, N)
        The correlation matrix.
    table : DataFrame
        ``spectral_comparison`` output (columns ``k, pivot, cholesky_residual``).
    ks : list of int
        The subset sizes checked (those beyond the table are skipped).

    Returns
    -------
    float

    Notes
    -----
    O(len(ks) * N^3).
    """
    r = np.asarray(corr, dtype=float)
    order = table["pivot"].to_numpy(dtype=int)
    chol = table.set_index("k")["cholesky_residual"]
    gaps = [0.0]
    for k in ks:
        if k not in chol.index or k >= r.shape[0]:
            continue
        a, rest = order[:k], np.setdiff1d(np.arange(r.shape[0]), order[:k])
        schur = r[np.ix_(rest, rest)] - r[np.ix_(rest, a)] @ np.linalg.solve(r[np.ix_(a, a)], r[np.ix_(a, rest)])
        gaps.append(abs(float(np.trace(schur)) - float(chol[k])) / float(np.trace(r)))
    return max(gaps)


def greedy_k(table: pd.DataFrame, *, level: float = 0.90) -> int | None:
    """Smallest k whose greedy residual fraction is at most ``1 - level`` (None if no k reaches it)."""
    ok = table[table["cholesky_residual_fraction"] <= 1 - level + 1e-12]
    return int(ok["k"].min()) if len(ok) else None


def _bound_holds(t: pd.DataFrame, trace: float) -> bool:
    return bool((t["cholesky_residual"] >= t["eigen_tail"] - 1e-9 * trace).all())


def em_note(name: str, matrix: Any, estimate: Any, *, config: str) -> str:
    """A sentence on an EM estimate that stopped at its configuration's cap (empty if EM converged or was not used)."""
    em = estimate.em
    if em is None or em.converged:
        return ""
    tol = em_settings(matrix.shape[0], matrix.shape[1], matrix.observed_fraction, config=config, context="full")["tol"]
    rc = np.asarray(em.rel_change, dtype=float)
    best = int(np.argmin(rc))
    digits = 1
    while digits < 6 and sci(rc[best], digits=digits) == sci(tol, digits=digits):
        digits += 1
    return (f"{label(name)}'s EM stopped at its cap of {em.n_iter} iterations without the relative change of Σ "
            f"falling below the tolerance {sci(tol)} (smallest change {sci(rc[best], digits=digits)} at iteration "
            f"{best + 1}), so "
            f"its spectrum is that of the last iterate and its smallest eigenvalues are the least settled.")


def _component_claim(name: str, level: float, spectra: Mapping[str, Any], matrices: Mapping[str, Any],
                     estimates: Mapping[str, Any], capped: Sequence[str], max_iter: int | None,
                     config: str) -> Claim:
    paper = PAPER_K[name][level]
    what = f"{label(name)}: components for {100 * level:g}%"
    where = "Fig. 1"
    if name not in spectra:
        return not_run(what, where, str(paper), f"{label(name)} was not in this run", section="figure-1")
    k = spectra[name].n_components(level)
    v = verdict(k, paper, tol=0, partly=1)
    m = matrices[name]
    if name in capped and max_iter is not None:
        why = f"EM stopped at this run's cap of {max_iter}"
    elif name == "mmlu" and v != "reproduced":
        why = f"{m.shape[0]:,} models here, not {PAPER_MMLU_MODELS:,}"
    elif v == "reproduced" and estimates[name].em is not None:
        tol = em_settings(*m.shape, m.observed_fraction, config=config, context="full")["tol"]
        why = f"same count; EM to {sci(tol)}"
    elif v == "reproduced":
        why = "same count"
    else:
        why = f"{k - paper:+d} against the paper"
    return Claim(what, where, str(paper), str(k), v, why, section="figure-1")


def _lemma_claims(tables: Mapping[str, pd.DataFrame], estimates: Mapping[str, Any], spectra: Mapping[str, Any],
                  gaps: Mapping[str, float], k_show: Sequence[int]) -> list[Claim]:
    names = list(tables)
    where, section = "Lemma 1", "lemma-1"
    gap = max(gaps.values())
    ks = ", ".join(str(k) for k in k_show)
    identity = Claim("Greedy residual = pivoted-Cholesky trace", where, "identity", f"largest gap {sci(gap)}",
                     "reproduced" if gap <= IDENTITY_TOL else "not reproduced", f"Schur complement at k = {ks}",
                     section=section)
    holds = sum(_bound_holds(tables[n], float(np.trace(estimates[n].corr))) for n in names)
    kmax = max(k_show)
    ratios = np.concatenate([tables[n]["ratio"].to_numpy(dtype=float)[:kmax] for n in names])
    ratios = ratios[np.isfinite(ratios)]
    spread = f"ratio {num(ratios.min())} to {num(ratios.max())} for k ≤ {kmax}" if ratios.size else "no finite ratio"
    bound = Claim("Eigenvalue tail ≤ greedy residual", where, "at every k",
                  f"{holds} of {count(len(names), 'matrix', 'matrices')}",
                  "reproduced" if holds == len(names) else "not reproduced", spread, section=section)
    picks = {n: greedy_k(tables[n]) for n in names}
    fast = [n for n in names if picks[n] is not None and picks[n] <= FAST_FACTOR * spectra[n].n_components(0.90)]
    v = "reproduced" if len(fast) == len(names) else "partly" if fast else "not reproduced"
    run = ", ".join(f"{label(n)} {picks[n] if picks[n] is not None else 'none'}" for n in names)
    falls = Claim("Fast decay: greedy residual falls quickly", "Sec. 5.2", "suggested",
                  f"picks to leave 10%: {run}", v,
                  f"within {FAST_FACTOR}× the PCA count on {len(fast)} of {len(names)}", section=section)
    return [identity, bound, falls]


def claims(*, matrices: Mapping[str, Any], estimates: Mapping[str, Any], spectra: Mapping[str, Any],
           tables: Mapping[str, pd.DataFrame], gaps: Mapping[str, float], k_show: Sequence[int],
           max_iter: int | None, config: str = "released") -> list[Claim]:
    """The page's claims table: Section 5.2's component counts and Lemma 1 on the matrices run.

    Parameters
    ----------
    matrices, estimates, spectra, tables : mapping
        Per matrix of this run: the ScoreMatrix, its ``estimate_correlation``, its
        :class:`Eigenspectrum` and its ``spectral_comparison`` table.
    gaps : mapping
        :func:`identity_gap` per matrix.
    k_show : list of int
        The subset sizes of the Lemma 1 table.
    max_iter : int or None
        This run's cap on EM iterations.
    config : str
        The EM configuration of the estimates.

    Returns
    -------
    list of Claim
    """
    capped = [n for n in matrices if estimates[n].em is not None and not estimates[n].em.converged]
    rows = [_component_claim(n, lvl, spectra, matrices, estimates, capped, max_iter, config)
            for n in PAPER_K for lvl in sorted(PAPER_K[n])]
    return rows + _lemma_claims(tables, estimates, spectra, gaps, k_show)


def _claims_note(rows: Sequence[Claim], matrices: Mapping[str, Any], spectra: Mapping[str, Any],
                 estimates: Mapping[str, Any], *, max_iter: int | None, quick: bool) -> str:
    text = [failures(rows) or "Every claim this run checked is reproduced."]
    capped = [n for n in matrices if estimates[n].em is not None and not estimates[n].em.converged]
    if capped and max_iter is not None:
        text.append(f"{'Quick mode caps' if quick else 'This run caps'} EM at {count(max_iter, 'iteration')}, so "
                    f"the counts on {labels(capped)} are those of estimates that have not converged.")
    if "mmlu" in spectra and spectra["mmlu"].n_components(0.90) != PAPER_K["mmlu"][0.90]:
        m = matrices["mmlu"]
        text.append(f"This book's MMLU matrix holds {m.shape[0]:,} models, mostly well-known open models trained "
                    f"alike, against the paper's {PAPER_MMLU_MODELS:,}; one general-ability factor carries "
                    f"{pct(spectra['mmlu'].cumulative[0])} of its variance, so a single component reaches 90% "
                    f"where the paper's matrix needs {PAPER_K['mmlu'][0.90]}.")
    return paragraph(*text)


def _estimates_passage(matrices: Mapping[str, Any], estimates: Mapping[str, Any], plain: Mapping[str, Any | None],
                       *, config: str, max_iter: int | None, quick: bool) -> str:
    names = list(matrices)
    capped = [n for n in names if estimates[n].em is not None and not estimates[n].em.converged]
    parts = []
    pairwise = [n for n in names if estimates[n].em is None]
    if pairwise:
        parts.append(f"{labels(pairwise)} {'is' if len(pairwise) == 1 else 'are'} fully observed and "
                     f"{'uses' if len(pairwise) == 1 else 'use'} the pairwise estimate.")
    for n in names:
        em, ref = estimates[n].em, plain.get(n)
        if em is None or n in capped:
            continue
        if ref is not None and ref.em.converged:
            gap = float(np.abs(estimates[n].corr - ref.corr).max())
            parts.append(f"{label(n)}'s EM is accelerated with SQUAREM, the library's default where EM runs to its "
                         f"fixed point: its {em.n_iter} EM updates reach the fixed point that plain EM, as in "
                         f"Appendix G, reaches in {ref.em.n_iter} iterations (correlations within {sci(gap)}).")
        elif ref is None:
            parts.append(f"{label(n)}'s EM is plain and stops at its tolerance after {em.n_iter} iterations.")
    if capped and max_iter is not None:
        parts.append(f"{'Quick mode caps' if quick else 'This run caps'} EM at {count(max_iter, 'iteration')}, "
                     f"fewer than {labels(capped)} {'needs' if len(capped) == 1 else 'need'} to reach the tolerance, "
                     f"so {'its spectrum is that' if len(capped) == 1 else 'their spectra are those'} of the last "
                     f"iterate.")
    else:
        parts.extend(em_note(n, matrices[n], estimates[n], config=config) for n in capped)
    return paragraph(*parts)


def _figure_passages(spectra: Mapping[str, Any], tables: Mapping[str, pd.DataFrame], levels: Sequence[float],
                     k_show: Sequence[int]) -> dict[str, str]:
    names = list(spectra)
    k90 = {n: spectra[n].n_components(0.90) for n in names}
    lo, hi = min(k90, key=k90.get), max(k90, key=k90.get)
    reach = (f"Every spectrum reaches 90% within {count(k90[hi], 'component')} ({label(hi)})" if lo == hi else
             f"The residual falls below 10% after {k90[lo]} ({label(lo)}) to {count(k90[hi], 'component')} "
             f"({label(hi)})")
    fig1 = paragraph(
        "**Figure 3.1** (the paper's Figure 1). Residual variance fraction 1 − ρ(k) of each correlation matrix on "
        f"a log scale; dashed lines mark {and_join(f'{100 * lvl:g}%' for lvl in levels)} explained variance.",
        reach + ": a few directions carry most of the variance.")
    kmax = max(k_show)
    ratios = np.concatenate([tables[n]["ratio"].to_numpy(dtype=float)[:kmax] for n in names])
    ratios = ratios[np.isfinite(ratios)]
    fig2 = paragraph(
        "**Figure 3.2.** Residual variance fraction left by the first k greedy-entropy picks (solid) and the "
        "eigenvalue tail (dashed), which no k benchmarks can go below.",
        f"The greedy residual follows the tail down, within a factor of {num(ratios.min(), '.1f')} to "
        f"{num(ratios.max(), '.1f')} over the first {kmax} picks." if ratios.size else "")
    first = and_join(f"{pct(spectra[n].cumulative[0])} of {label(n)}'s" for n in names)
    return {"fig1_caption": fig1, "fig2_caption": fig2,
            "components_md": f"The first component alone explains {first} variance."}


def _lemma_passage(spectra: Mapping[str, Any], tables: Mapping[str, pd.DataFrame], gaps: Mapping[str, float],
                   k_show: Sequence[int]) -> str:
    need = []
    for n in spectra:
        g = greedy_k(tables[n])
        pca = spectra[n].n_components(0.90)
        need.append(f"{count(g, 'pick')} on {label(n)} (PCA: {pca})" if g is not None
                    else f"more than {count(len(tables[n]), 'pick')} on {label(n)}")
    ks = and_join(str(k) for k in k_show)
    return paragraph(
        f"Greedy entropy leaves at most 10% of the variance after {'; '.join(need)}.",
        f"Computed directly as the trace of the Schur complement at k = {ks}, the residual variance matches the "
        f"pivoted-Cholesky trace to {sci(max(gaps.values()))} of the total (Lemma 1(b)).")


def prose(
    *,
    matrices: Mapping[str, Any],
    estimates: Mapping[str, Any],
    spectra: Mapping[str, Any],
    tables: Mapping[str, pd.DataFrame],
    plain: Mapping[str, Any | None],
    levels: Sequence[float],
    k_show: Sequence[int],
    config: str,
    max_iter: int | None,
    quick: bool,
) -> PageProse:
    """The page's glued passages: the claims table and its note, the captions and the sections' findings.

    Parameters
    ----------
    matrices, estimates, spectra, tables : mapping
        Per matrix of this run: the ScoreMatrix, its correlation estimate
        (``estimate_correlation``), its :class:`Eigenspectrum` and its
        ``spectral_comparison`` table.
    plain : mapping
        :func:`plain_reference` per matrix.
    levels : list of float
        Explained-variance levels of the figure and the component table.
    k_show : list of int
        Subset sizes of the Lemma 1 table.
    config, max_iter, quick :
        EM configuration and iteration cap of this run, quick mode.

    Returns
    -------
    PageProse
        Passages ``claims``, ``claims_note``, ``estimates_md``, ``fig1_caption``, ``components_md``,
        ``fig2_caption``, ``lemma_md``.
    """
    gaps = {n: identity_gap(estimates[n].corr, tables[n], k_show) for n in matrices}
    rows = claims(matrices=matrices, estimates=estimates, spectra=spectra, tables=tables, gaps=gaps, k_show=k_show,
                  max_iter=max_iter, config=config)
    passages = {"claims": claims_table(rows),
                "claims_note": _claims_note(rows, matrices, spectra, estimates, max_iter=max_iter, quick=quick),
                "estimates_md": _estimates_passage(matrices, estimates, plain, config=config, max_iter=max_iter,
                                                   quick=quick),
                **_figure_passages(spectra, tables, levels, k_show),
                "lemma_md": _lemma_passage(spectra, tables, gaps, k_show)}
    return PageProse(list(matrices), passages)
