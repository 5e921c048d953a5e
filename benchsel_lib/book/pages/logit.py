"""Chapter 10: logit-space score transformation (Appendix K, Figures 16-18, Table 5).

The chapter fits the paper's pipeline once to the raw scores and once to
their logits (each benchmark divided by its training maximum, clipped to
``[1e-3, 1 - 1e-3]``), on the same folds, and compares the eigenspectra
(Figure 16), the R² curves (Figures 17-18) and MI's R² at k = 5 (Table 5)
with the paper's.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..claims import Claim, claims_table, not_run, verdict
from ..notebook import and_join
from ..prose import PageProse, count, label, num, paragraph, pct, signed
from .imputers import setting_text

__all__ = ["PAPER_K90", "PAPER_TABLE5", "claims", "clipping_table", "components_table", "figure_caption",
           "negative_folds", "prose", "spectrum_caption", "spread_table", "summarize", "table5"]

#: Appendix K: components for 90% explained variance, (raw, logit).
PAPER_K90: dict[str, tuple[int, int]] = {"mmlu": (2, 2), "mteb": (6, 8), "merged": (8, 10)}
#: Table 5: MI-selected R^2 at k = 5, 10% holdout, 10 folds, (raw, logit).
PAPER_TABLE5: dict[str, tuple[float, float]] = {"mmlu": (0.91, 0.91), "mteb": (0.76, 0.72), "merged": (0.51, 0.39),
                                                "benchpress": (-0.11, -0.22)}
#: (holdout, k, folds) of Table 5.
PAPER_AT = (0.1, 5, 10)
#: Largest gap to the paper's R² that counts as reproduced.
TOL = 0.05
#: Differences of R² up to this size count as "equal" when reading the direction of the transform's effect.
EQUAL = 0.02
SPACE_NAMES = {"raw": "raw scores", "logit": "logit scores"}


def summarize(keys: Sequence[tuple[str, str]], frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The ``summarize_cv`` rows of each (matrix, space) run, with ``dataset`` (display name) and ``space``."""
    from .imputers import summarize as summarize_variants

    return summarize_variants(keys, frames, column="space")


def negative_folds(keys: Sequence[tuple[str, str]], frames: Sequence[pd.DataFrame], *, method: str,
                   k: int) -> dict[tuple[str, str], tuple[int, int]]:
    """(matrix, space) -> (folds with R² < 0, folds scored) for ``method`` at ``k``."""
    out = {}
    for key, df in zip(keys, frames, strict=True):
        sel = df[(df["method"] == method) & (df["k"] == k)]["r2"].dropna()
        out[key] = (int((sel < 0).sum()), int(len(sel)))
    return out


def clipping_table(matrices: Mapping[str, Any]) -> pd.DataFrame:
    """Per matrix: columns with negative scores, the entries the transform clips, the observed entries.

    Returns
    -------
    DataFrame
        ``Matrix``, ``columns with negative scores``, ``entries clipped to the
        floor`` (negative scores), ``entries at the maximum``, ``observed
        entries``, and ``columns with max ≤ 0`` (which the transform refuses).
    """
    rows = []
    for n, m in matrices.items():
        X = np.asarray(m.scores, dtype=float)
        smax = np.nanmax(X, axis=0)
        ok = smax > 0  # the transform refuses the other columns
        rows.append({"Matrix": label(n), "columns with negative scores": int((np.nanmin(X, axis=0) < 0).sum()),
                     "entries clipped to the floor": int(np.nansum(X[:, ok] < 0)),
                     "entries at the maximum": int(np.nansum(X[:, ok] / smax[ok] > 1 - 1e-3)),
                     "observed entries": int((~np.isnan(X)).sum()),
                     "columns with max ≤ 0": int((~ok).sum())})
    return pd.DataFrame(rows)


def negative_columns(matrices: Mapping[str, Any]) -> dict[str, list[str]]:
    """Per matrix, the benchmarks with a negative score (their negative scores all go to the logit's floor)."""
    out = {}
    for n, m in matrices.items():
        X = np.asarray(m.scores, dtype=float)
        out[n] = [m.benchmarks[j] for j in np.flatnonzero(np.nanmin(X, axis=0) < 0)]
    return out


def components_table(spec_raw: Mapping[str, Any], spec_logit: Mapping[str, Any],
                     levels: Sequence[float]) -> pd.DataFrame:
    """Components for each explained-variance level, raw against logit, beside the paper's 90% counts.

    Returns
    -------
    DataFrame
        ``Matrix``, ``raw <level>`` and ``logit <level>`` per level, and
        ``paper 90%`` (``"2 → 2"``; ``"not given"`` for BenchPress).
    """
    rows = []
    for n in spec_raw:
        row: dict[str, Any] = {"Matrix": label(n)}
        for lvl in levels:
            row[f"raw {100 * lvl:g}%"] = spec_raw[n].n_components(lvl)
            row[f"logit {100 * lvl:g}%"] = spec_logit[n].n_components(lvl)
        pr = PAPER_K90.get(n)
        row["paper 90%"] = f"{pr[0]} → {pr[1]}" if pr else "not given"
        rows.append(row)
    return pd.DataFrame(rows)


def _r2_at(s: pd.DataFrame, name: str, space: str, method: str, k: int) -> float:
    sel = s[(s["dataset"] == label(name)) & (s["space"] == space) & (s["method"] == method) & (s["k"] == k)]
    return float(sel["r2_mean"].iloc[0]) if len(sel) else float("nan")


def comparable(*, k: int, holdout: float, n_folds: int) -> bool:
    """Whether the run's Table 5 is at the paper's k = 5, 10% holdout and 10 folds."""
    return bool(np.isclose(holdout, PAPER_AT[0]) and k == PAPER_AT[1] and n_folds == PAPER_AT[2])


def table5(summary: pd.DataFrame, *, datasets: Sequence[str], k: int, holdout: float, n_folds: int) -> pd.DataFrame:
    """Table 5: MI's R² at ``k``, raw against logit, beside the paper's (only at its k, holdout and folds).

    Returns
    -------
    DataFrame
        ``Matrix``, ``raw, paper``, ``logit, paper`` (when :func:`comparable`),
        ``raw, here``, ``logit, here``, ``logit − raw``.
    """
    paper = comparable(k=k, holdout=holdout, n_folds=n_folds)
    rows = []
    for n in datasets:
        raw, lg = _r2_at(summary, n, "raw", "mi", k), _r2_at(summary, n, "logit", "mi", k)
        row: dict[str, Any] = {"Matrix": label(n)}
        if paper:
            row["raw, paper"], row["logit, paper"] = PAPER_TABLE5[n]
        row.update({"raw, here": raw, "logit, here": lg, "logit − raw": lg - raw})
        rows.append(row)
    return pd.DataFrame(rows)


def _direction(d: float) -> str:
    return "equal" if abs(d) <= EQUAL else ("lower" if d < 0 else "higher")


def _spectrum_claim(spec_raw: Mapping[str, Any], spec_logit: Mapping[str, Any], datasets: Sequence[str]) -> Claim:
    """Appendix K's component counts at 90% (raw -> logit) against this run's, on the matrices both have."""
    names = [n for n in PAPER_K90 if n in datasets]
    claim, where = "Logit space slightly less compressible (components for 90%)", "App. K, Fig. 16"
    if not names:
        return not_run(claim, where, ", ".join(f"{label(n)} {a} → {b}" for n, (a, b) in PAPER_K90.items()),
                       "none of MMLU, MTEB and Merged was in this run", section="figure-16")
    run = {n: (spec_raw[n].n_components(0.9), spec_logit[n].n_components(0.9)) for n in names}
    wrong = [n for n in names if run[n] != PAPER_K90[n]]
    fewer = [n for n in names if run[n][1] < run[n][0]]
    v = "reproduced" if not wrong else ("partly" if len(wrong) < len(names) and not fewer else "not reproduced")
    if not wrong:
        why = "every count as in the paper"
    else:
        why = "; ".join(f"{label(n)} {run[n][0]} → {run[n][1]}, not {PAPER_K90[n][0]} → {PAPER_K90[n][1]}"
                        + (" (smaller MMLU, ch. 1)" if n == "mmlu" else "") for n in wrong)
        if len(wrong) < len(names):
            why += f"; {and_join(label(n) for n in names if n not in wrong)} as in the paper"
    return Claim(claim, where, ", ".join(f"{label(n)} {PAPER_K90[n][0]} → {PAPER_K90[n][1]}" for n in names),
                 ", ".join(f"{label(n)} {run[n][0]} → {run[n][1]}" for n in names), v, why, section="figure-16")


def _table5_claim(summary: pd.DataFrame, n: str, *, k: int, off: str | None) -> Claim:
    claim = f"MI R², raw → logit, {label(n)}"
    p_raw, p_lg = PAPER_TABLE5[n]
    paper = f"{num(p_raw)} → {num(p_lg)}"
    if off:
        return not_run(claim, "Table 5", paper, off, section="table-5")
    raw, lg = _r2_at(summary, n, "raw", "mi", k), _r2_at(summary, n, "logit", "mi", k)
    run = f"{num(raw)} → {num(lg)}"
    gap = max(abs(raw - p_raw), abs(lg - p_lg))
    here, there = _direction(lg - raw), _direction(p_lg - p_raw)
    if here != there:
        return Claim(claim, "Table 5", paper, run, "not reproduced",
                     f"logit {here} here ({signed(lg - raw)}), {there} in the paper", section="table-5")
    v = verdict(gap, 0.0, tol=TOL, partly=np.inf)
    why = f"both within {num(TOL)}" if v == "reproduced" else f"same direction; off by up to {num(gap)}"
    return Claim(claim, "Table 5", paper, run, v, why, section="table-5")


def claims(summary: pd.DataFrame, *, spec_raw: Mapping[str, Any], spec_logit: Mapping[str, Any],
           datasets: Sequence[str], methods: Sequence[str], k: int, holdout: float, n_folds: int) -> list[Claim]:
    """The claims table's rows: Figure 16's component counts, Table 5 per matrix, and "no improvement".

    Parameters
    ----------
    summary : DataFrame
        :func:`summarize` of the raw and logit runs.
    spec_raw, spec_logit : mapping
        Eigenspectra of the raw and logit correlation per matrix.
    datasets, methods : list of str
        What was run.
    k, holdout, n_folds : int, float, int
        Table 5's subset size and the run's holdout and folds.

    Returns
    -------
    list of Claim
        A matrix not run, or a run not at the paper's k, holdout and folds,
        gives ``not run`` rows that say so.
    """
    rows = [_spectrum_claim(spec_raw, spec_logit, datasets)]
    off = None
    if "mi" not in methods:
        off = "MI was not in this run"
    elif not comparable(k=k, holdout=holdout, n_folds=n_folds):
        off = setting_text(k=k, holdout=holdout, n_folds=n_folds)
    for n in PAPER_TABLE5:
        rows.append(_table5_claim(summary, n, k=k, off=off) if n in datasets else
                    not_run(f"MI R², raw → logit, {label(n)}", "Table 5",
                            f"{num(PAPER_TABLE5[n][0])} → {num(PAPER_TABLE5[n][1])}",
                            f"{label(n)} was not in this run", section="table-5"))
    claim, where = "Logit transform improves no matrix", "App. K, Table 5"
    if "mi" not in methods:
        rows.append(not_run(claim, where, "0 of 4", "MI was not in this run", section="table-5"))
        return rows
    diffs = {n: _r2_at(summary, n, "logit", "mi", k) - _r2_at(summary, n, "raw", "mi", k) for n in datasets}
    better = [n for n, d in diffs.items() if d > EQUAL]
    why = ("logit never higher by more than " + num(EQUAL) if not better else
           "logit higher on " + ", ".join(f"{label(n)} ({signed(diffs[n])})" for n in better))
    rows.append(Claim(claim, where, "0 of 4", f"{len(better)} of {len(diffs)}",
                      "reproduced" if not better else "not reproduced", why, section="table-5"))
    return rows


def _lower_first(text: str) -> str:
    """"Logit space ..." -> "logit space ..."; an acronym ("MI R²") is kept."""
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _folds_text(*, n_folds: int, holdout: float, seed: int, scheme: str) -> str:
    folds = "the paper's folds (seed 42)" if scheme == "paper" and seed == 42 and n_folds == 10 else \
        f"seed {seed}" + (", the paper's fold streams" if scheme == "paper" else ", this book's fold streams")
    return f"{n_folds}-fold cross-validation on {folds}, {pct(holdout)} holdout"


def spectrum_caption(spec_raw: Mapping[str, Any], spec_logit: Mapping[str, Any], *, datasets: Sequence[str],
                     k: int = 5) -> str:
    """Figure 16's caption: what is drawn, and on which matrices the logit curve lies above the raw one at ``k``."""
    above = [n for n in datasets if spec_logit[n].residual[k - 1] > spec_raw[n].residual[k - 1]]
    close = [n for n in datasets
             if abs(spec_logit[n].residual[k - 1] - spec_raw[n].residual[k - 1]) <= 0.1 * spec_raw[n].residual[k - 1]]
    res = "; ".join(f"{label(n)} {pct(spec_raw[n].residual[k - 1])} raw, {pct(spec_logit[n].residual[k - 1])} logit"
                    for n in datasets)
    return paragraph(
        "For the first 15 components, the residual variance fraction of the correlation matrix of the logit "
        "scores (solid) and of the raw scores (dashed), one colour per matrix, each estimated on the whole matrix "
        "(pairwise on the complete MMLU, EM otherwise).",
        f"After {k} components the logit curve lies above the raw one on {len(above)} of {len(datasets)} matrices "
        f"({res}): less of the logit scores' variance is explained by the same number of components.",
        f"On {and_join(label(n) for n in close)} the two curves are within a tenth of each other there and "
        f"nearly coincide." if close else "")


def figure_caption(summary: pd.DataFrame, *, datasets: Sequence[str], methods: Sequence[str], k: int,
                   folds_text: str, cut: Sequence[str] = ()) -> str:
    """The caption of Figures 17-18: raw against logit curves, and how many panels have logit below raw at ``k``."""
    pairs = [(n, m) for n in datasets for m in methods]
    diffs = {p: _r2_at(summary, p[0], "logit", p[1], k) - _r2_at(summary, p[0], "raw", p[1], k) for p in pairs}
    lower = [p for p, d in diffs.items() if d < -EQUAL]
    higher = [p for p, d in diffs.items() if d > EQUAL]
    return paragraph(
        f"Imputation R² against k for each selection objective, with the Gaussian pipeline fitted to the raw scores "
        f"(solid, ±1 sd band across folds) and to their logits (dashed); {folds_text}.",
        f"At k = {k} the logit curve is below the raw one by more than {num(EQUAL)} in {len(lower)} of the "
        f"{len(pairs)} panels and above it in {len(higher)}"
        + (" (" + ", ".join(f"{label(n)} {'MI' if m == 'mi' else m}" for n, m in higher) + ")." if higher else "."),
        f"The band is cut at the panel's edge on {and_join(cut)}." if cut else "")


def spread_table(spread: Mapping[int, pd.DataFrame], *, datasets: Sequence[str], k: int) -> pd.DataFrame:
    """Per seed, MI's R² at ``k`` in logit space minus raw, per matrix."""
    rows = []
    for s, summary in spread.items():
        row: dict[str, Any] = {"seed": int(s)}
        for n in datasets:
            row[label(n)] = _r2_at(summary, n, "logit", "mi", k) - _r2_at(summary, n, "raw", "mi", k)
        rows.append(row)
    return pd.DataFrame(rows, columns=["seed", *[label(n) for n in datasets]])


def _clipping_text(clipping: pd.DataFrame, negative: Mapping[str, Sequence[str]]) -> str:
    refused = int(clipping["columns with max ≤ 0"].sum())
    neg = {n: cols for n, cols in negative.items() if cols}
    return paragraph(
        "No column of this run has a maximum at or below zero, which the transform would refuse." if not refused else
        f"{count(refused, 'column')} of this run {'has' if refused == 1 else 'have'} a maximum at or below zero; the "
        f"transform refuses them.",
        ("Columns with negative scores are kept, as in the paper's pipeline, but all their negative scores land on "
         "the same floor, logit(0.001) ≈ −6.9, which discards their order: "
         + "; ".join(f"{count(len(cols), 'column')} on {label(n)} ({', '.join(cols)})" for n, cols in neg.items())
         + ".") if neg else "No column of this run has a negative score.",
        "At the other end, each column's best score maps to the ceiling, 1 − 0.001, and the inverse map caps every "
        "prediction at the training maximum, so a validation model better than every training model is "
        "under-predicted. The table counts the entries at each end.")


def _losses_text(summary: pd.DataFrame, clipping: pd.DataFrame, *, names: Sequence[str], k: int) -> str:
    """Where the logit pipeline loses most, set against where the transform clips most (the paper's explanation)."""
    loss = {n: _r2_at(summary, n, "raw", "mi", k) - _r2_at(summary, n, "logit", "mi", k) for n in names}
    loss = {n: v for n, v in loss.items() if v > EQUAL}
    if not loss:
        return ""
    worst = max(loss, key=loss.get)
    floor = dict(zip(clipping["Matrix"], clipping["entries clipped to the floor"]))
    most = max(floor, key=floor.get)
    head = (f"The paper blames the loss on the transform's floor and ceiling and on the heterogeneous scales of "
            f"Merged. Here the largest loss, {num(loss[worst])} on {label(worst)}, ")
    if floor.get(label(worst), 0) and most == label(worst):
        return head + (f"is on the matrix with the most negative scores clipped to the floor "
                       f"({floor[label(worst)]}), which fits that explanation without proving it.")
    return head + ("is not on the matrix with the most scores clipped to the floor, so the floor alone does not "
                   "explain it.")


def _direction_text(summary: pd.DataFrame, claims_rows: Sequence[Claim], *, datasets: Sequence[str], k: int,
                    folds: Mapping[tuple[str, str], tuple[int, int]], clipping: pd.DataFrame) -> str:
    reversed_ = [n for n in datasets if any(c.claim == f"MI R², raw → logit, {label(n)}" and
                                            c.verdict == "not reproduced" for c in claims_rows)]
    out = []
    for n in reversed_:
        raw, lg = _r2_at(summary, n, "raw", "mi", k), _r2_at(summary, n, "logit", "mi", k)
        at = summary[(summary["dataset"] == label(n)) & (summary["method"] == "mi") & (summary["k"] == k)]
        sd = {sp: float(at[at["space"] == sp]["r2_sd"].iloc[0]) for sp in ("raw", "logit")}
        neg = {sp: folds.get((n, sp), (0, 0)) for sp in ("raw", "logit")}
        p_raw, p_lg = PAPER_TABLE5[n]
        out.append(paragraph(
            f"On {label(n)} the direction is reversed: the logit pipeline reaches {num(lg)} against the raw one's "
            f"{num(raw)}, where the paper has {num(p_lg)} against {num(p_raw)}.",
            (f"The raw value matches the paper's on the same folds, so the difference lies in the logit pipeline."
             if abs(raw - p_raw) <= TOL else ""),
            f"MI is unstable here in both spaces: R² at k = {k} is negative on {neg['raw'][0]} of {neg['raw'][1]} "
            f"folds "
            f"with raw scores and {neg['logit'][0]} of {neg['logit'][1]} in logit space (sd across folds "
            f"{num(sd['raw'])} and {num(sd['logit'])}).",
            "MI's gain reads the precision of the benchmarks not yet selected, which is poorly estimated when most "
            "entries are missing (Appendix I); a small difference between this "
            "library's logit-space covariance and the paper's then changes MI's picks and moves the mean by "
            "tenths. Which difference it is was not established." if n in ("benchpress", "merged") else
            "The cause was not established."))
    agree = [n for n in datasets if n not in reversed_ and n in PAPER_TABLE5]
    if agree and any(c.section == "table-5" and c.verdict != "not run" for c in claims_rows):
        out.insert(0, paragraph(f"On {and_join(label(n) for n in agree)} the logit pipeline moves R² the way the "
                                f"paper's does.", _losses_text(summary, clipping, names=agree, k=k)))
    return "\n\n".join(out)


def prose(*, summary: pd.DataFrame, spec_raw: Mapping[str, Any], spec_logit: Mapping[str, Any],
          clipping: pd.DataFrame, negative: Mapping[str, Sequence[str]],
          folds: Mapping[tuple[str, str], tuple[int, int]], datasets: Sequence[str], methods: Sequence[str],
          k_table: int, n_folds: int, holdout: float, seed: int, scheme: str, cut: Sequence[str] = (),
          spread: pd.DataFrame | None = None) -> PageProse:
    """The page's passages, written from the run's spectra and cross-validation summaries.

    Parameters
    ----------
    summary : DataFrame
        :func:`summarize` of the raw and logit runs.
    spec_raw, spec_logit : mapping
        Eigenspectra of the raw and logit correlation per matrix.
    clipping, negative : DataFrame, mapping
        :func:`clipping_table` and :func:`negative_columns`.
    folds : mapping
        :func:`negative_folds` of MI at ``k_table``.
    datasets, methods, k_table, n_folds, holdout, seed, scheme :
        The run's parameters.
    cut : list of str
        Matrices whose band the figure cuts.
    spread : DataFrame, optional
        :func:`spread_table` of other seeds (None or empty: not run).

    Returns
    -------
    PageProse
        Passages ``claims``, ``failures_md``, ``clipping_md``, ``spectrum_md``,
        ``curves_md``, ``table_md``, ``direction_md``, ``spread_md``.
    """
    rows = claims(summary, spec_raw=spec_raw, spec_logit=spec_logit, datasets=datasets, methods=methods,
                  k=k_table, holdout=holdout, n_folds=n_folds)
    folds_text = _folds_text(n_folds=n_folds, holdout=holdout, seed=seed, scheme=scheme)
    head = []
    for v, word in (("not reproduced", "Not reproduced"), ("partly", "Reproduced in part")):
        these = [c.claim for c in rows if c.verdict == v]
        if these:
            head.append(f"{word}: {'; '.join(_lower_first(c) for c in these)}.")
    missing = [c for c in rows if c.verdict == "not run"]
    if missing:
        head.append("Not run: " + "; ".join(f"{c.claim} ({c.why})" for c in missing) + ".")
    bp = [c for c in rows if c.claim == "MI R², raw → logit, BenchPress" and c.verdict == "not reproduced"]
    if bp:
        head.append("The reversal is BenchPress's, where MI is unstable from fold to fold (see [Table 5](#table-5)); "
                    "on the other matrices the transform costs R² or leaves it unchanged, as in the paper.")
    has_mi = "mi" in methods
    table_md = paragraph(
        f"MI's R² at k = {k_table}, {folds_text}.",
        "The columns marked paper are Table 5's." if comparable(k=k_table, holdout=holdout, n_folds=n_folds) else
        "The paper's columns are left out, as its table is at k = 5, 10% holdout and 10 folds.") if has_mi else \
        "MI was not in this run, so Table 5 is not computed."
    if spread is None or spread.empty:
        spread_md = ("These differences come from one assignment of models to folds. Other seeds were not run: each "
                     "repeats both pipelines on every matrix, as long again as the run above.")
    else:
        spread_md = (f"Over seeds {and_join(str(s) for s in spread['seed'])} (each another assignment of models to "
                     f"folds), the table below gives MI's R² at k = {k_table} in logit space minus raw, per matrix.")
    return PageProse(list(datasets), {
        "claims": claims_table(rows), "failures_md": paragraph(*head),
        "clipping_md": _clipping_text(clipping, negative),
        "spectrum_md": spectrum_caption(spec_raw, spec_logit, datasets=datasets),
        "curves_md": figure_caption(summary, datasets=datasets, methods=methods, k=k_table, folds_text=folds_text,
                                    cut=cut),
        "table_md": table_md,
        "direction_md": _direction_text(summary, rows, datasets=datasets, k=k_table, folds=folds,
                                        clipping=clipping) if has_mi else "",
        "spread_md": spread_md})
