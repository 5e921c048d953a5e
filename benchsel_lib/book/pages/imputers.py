"""Chapter 9: nonlinear imputation, TabImpute and the library's other imputers (Appendix J, Table 4, Figure 15).

The chapter swaps the imputation step of the paper's pipeline (the Gaussian
conditional mean) for other imputers and scores each by the same R² at the
same folds. The paper's alternative, TabImpute V2, needs the optional
``tabimpute`` package (with torch) and its weights; :func:`tabimpute_status`
says whether they are installed and, if not, why the TabImpute rows of the
claims table are not run. The library's imputers that need no weights
(soft-impute, kNN, the BenchPress-style blend) always run, so the Gaussian
mean is compared with them.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..claims import Claim, claims_table, not_run, verdict
from ..notebook import and_join
from ..prose import PageProse, count, label, num, paragraph, pct, range_text

__all__ = ["IMPUTER_NAMES", "PAPER_GAUSS", "PAPER_TABIMPUTE", "TabImputeStatus", "bold_best", "claims",
           "comparable", "comparison", "cut_bands", "figure_caption", "figure_limits", "imputer_factories",
           "imputer_table", "prose", "setting_text", "spread_table", "summarize", "table4", "tabimpute_status"]

#: Table 4 of the paper (k = 5, 10-fold CV, 10% holdout), Gaussian conditional mean: (entropy, MI, random).
PAPER_GAUSS: dict[str, tuple[float, float, float]] = {
    "mmlu": (0.89, 0.91, 0.89), "mteb": (0.72, 0.76, 0.76), "merged": (0.35, 0.51, 0.53),
    "benchpress": (0.21, -0.11, 0.24)}
#: Table 4 of the paper, TabImpute V2: (entropy, MI, random).
PAPER_TABIMPUTE: dict[str, tuple[float, float, float]] = {
    "mmlu": (0.37, 0.61, 0.55), "mteb": (0.30, 0.33, 0.33), "merged": (0.03, 0.03, 0.05),
    "benchpress": (0.06, 0.04, 0.09)}
METHODS_ALL = ("entropy", "mi", "random")
METHOD_NAMES = {"entropy": "entropy", "mi": "MI", "random": "random"}
#: Display names of the imputers (the keys label the runs).
IMPUTER_NAMES = {"Gaussian": "Gaussian", "SoftImpute": "soft-impute", "KNN": "kNN",
                 "BenchPressBlend": "blend", "TabImpute": "TabImpute"}
#: Long names, for the text.
IMPUTER_LONG = {"Gaussian": "the Gaussian conditional mean", "SoftImpute": "rank-3 soft-impute",
                "KNN": "kNN", "BenchPressBlend": "the BenchPress-style blend", "TabImpute": "TabImpute V2"}
#: (holdout, k, folds) of Table 4.
PAPER_AT = (0.1, 5, 10)
#: Largest gap to the paper's R² that counts as reproduced, and as partly reproduced.
TOL, PARTLY = 0.05, 0.10
#: TabImpute's R² on Merged at or below this counts as "near zero" (the paper: 0.03 to 0.05).
NEAR_ZERO = 0.10


@dataclass(frozen=True)
class TabImputeStatus:
    """Whether TabImpute V2 can run here, and why not.

    Attributes
    ----------
    available : bool
        The ``tabimpute`` package, torch and the weights are all installed.
    reason : str
        Why it cannot run ("not installed here: torch and the weights file
        tabimputev2.ckpt"); ``""`` when it can.
    checkpoint : Path or None
        The weights file, when found.
    missing : tuple of str
        What is not installed: package names and the weights.
    short : tuple of str
        The same in a word each ("tabimpute", "torch", "weights").
    """

    available: bool
    reason: str
    checkpoint: Path | None = None
    missing: tuple[str, ...] = ()
    short: tuple[str, ...] = ()


def tabimpute_status(checkpoint: str | Path | None = None) -> TabImputeStatus:
    """Look for the ``tabimpute`` package, torch and the TabImpute V2 weights, without importing or downloading.

    Parameters
    ----------
    checkpoint : str or path, optional
        The weights file; None searches ``$BENCHSEL_TABIMPUTE_CKPT`` and the
        Hugging Face hub cache (:func:`benchsel_lib.method.tabimpute.find_tabimpute_checkpoint`).

    Returns
    -------
    TabImputeStatus
    """
    from ...method.tabimpute import MissingWeightsError, find_tabimpute_checkpoint

    missing = [name for name in ("tabimpute", "torch") if importlib.util.find_spec(name) is None]
    try:
        path: Path | None = find_tabimpute_checkpoint(checkpoint)
    except MissingWeightsError:
        path = None
    if not missing and path is not None:
        return TabImputeStatus(True, "", path)
    what = tuple(missing) + (("the weights file tabimputev2.ckpt",) if path is None else ())
    short = tuple(missing) + (("weights",) if path is None else ())
    return TabImputeStatus(False, f"not installed here: {and_join(what)}", path, what, short)


def imputer_factories(status: TabImputeStatus, *, seed: int) -> dict[str, Callable[[], Any]]:
    """Label -> a function returning a fresh predictor (None: the paper's Gaussian conditional mean).

    TabImpute is included only when ``status.available``.
    """
    from ...method.completion import BenchPressBlend, KNNImputer, SoftImpute

    out: dict[str, Callable[[], Any]] = {"Gaussian": lambda: None, "SoftImpute": SoftImpute, "KNN": KNNImputer,
                                         "BenchPressBlend": BenchPressBlend}
    if status.available:
        from ...method.tabimpute import TabImputeV2Imputer

        out["TabImpute"] = lambda: TabImputeV2Imputer(checkpoint_path=status.checkpoint, seed=seed)
    return out


def summarize(keys: Sequence[tuple[str, str]], frames: Sequence[pd.DataFrame], *,
              column: str = "imputer") -> pd.DataFrame:
    """The ``summarize_cv`` rows of each (matrix, variant) run, with ``dataset`` (display name) and ``column``.

    ``keys`` holds (matrix, variant) pairs, one for each frame of ``frames``;
    the variant (an imputer, a score space) is written into ``column``.
    Complexity O(total rows).
    """
    from ...protocol.summaries import summarize_cv

    parts = []
    for (name, variant), df in zip(keys, frames, strict=True):
        s = summarize_cv(df)
        s.insert(0, column, variant)
        s.insert(0, "dataset", label(name))
        parts.append(s)
    return pd.concat(parts, ignore_index=True)


def _at(summary: pd.DataFrame, k: int) -> pd.Series:
    at = summary[summary["k"] == k]
    return at.set_index(["dataset", "method", "imputer"])["r2_mean"]


def _value(at: pd.Series, name: str, method: str, imputer: str) -> float:
    key = (label(name), method, imputer)
    return float(at[key]) if key in at.index and np.isfinite(at[key]) else float("nan")


def comparable(*, k: int, holdout: float, n_folds: int) -> bool:
    """Whether the run's table is at Table 4's k = 5, 10% holdout and 10 folds."""
    return bool(np.isclose(holdout, PAPER_AT[0]) and k == PAPER_AT[1] and n_folds == PAPER_AT[2])


def comparison(summary: pd.DataFrame, *, datasets: Sequence[str], methods: Sequence[str],
               imputers: Sequence[str], k: int) -> pd.DataFrame:
    """Per (matrix, method): the Gaussian R², the best other imputer and the Gaussian's margin over it.

    Returns
    -------
    DataFrame
        Columns ``matrix`` (key), ``method``, ``gaussian``, ``best`` (the best
        imputer's label, the Gaussian included), ``best_other``, ``other_r2``,
        ``margin`` (Gaussian minus the best other imputer); only pairs where
        the Gaussian and at least one other imputer were scored.
    """
    at = _at(summary, k)
    rows = []
    for n in datasets:
        for m in methods:
            vals = {i: _value(at, n, m, i) for i in imputers}
            vals = {i: v for i, v in vals.items() if np.isfinite(v)}
            others = {i: v for i, v in vals.items() if i != "Gaussian"}
            if "Gaussian" not in vals or not others:
                continue
            best_other = max(others, key=others.get)
            rows.append({"matrix": n, "method": m, "gaussian": vals["Gaussian"], "best": max(vals, key=vals.get),
                         "best_other": best_other, "other_r2": others[best_other],
                         "margin": vals["Gaussian"] - others[best_other]})
    return pd.DataFrame(rows, columns=["matrix", "method", "gaussian", "best", "best_other", "other_r2", "margin"])


def table4(summary: pd.DataFrame, *, datasets: Sequence[str], methods: Sequence[str], k: int, holdout: float,
           n_folds: int, tabimpute_ran: bool) -> pd.DataFrame:
    """Table 4 as shown: per (matrix, objective) the paper's Gaussian and TabImpute R² beside this run's.

    The paper's columns are there only when the run is at Table 4's k,
    holdout and folds (:func:`comparable`); this run's TabImpute column only
    when TabImpute ran.

    Returns
    -------
    DataFrame
        ``Matrix``, ``Objective``, ``Gaussian, paper``, ``Gaussian, here``,
        ``TabImpute, paper``, ``TabImpute, here``.
    """
    at = _at(summary, k)
    paper = comparable(k=k, holdout=holdout, n_folds=n_folds)
    rows = []
    for n in datasets:
        for m in methods:
            i = METHODS_ALL.index(m)
            row: dict[str, Any] = {"Matrix": label(n), "Objective": METHOD_NAMES[m]}
            if paper:
                row["Gaussian, paper"] = PAPER_GAUSS[n][i]
            row["Gaussian, here"] = _value(at, n, m, "Gaussian")
            if paper:
                row["TabImpute, paper"] = PAPER_TABIMPUTE[n][i]
            if tabimpute_ran:
                row["TabImpute, here"] = _value(at, n, m, "TabImpute")
            rows.append(row)
    return pd.DataFrame(rows)


def imputer_table(summary: pd.DataFrame, *, datasets: Sequence[str], methods: Sequence[str],
                  imputers: Sequence[str], k: int) -> pd.DataFrame:
    """R² at ``k`` of every imputer of this run: one row per (matrix, objective), one column per imputer."""
    at = _at(summary, k)
    return pd.DataFrame([{"Matrix": label(n), "Objective": METHOD_NAMES[m],
                          **{IMPUTER_NAMES[i]: _value(at, n, m, i) for i in imputers}}
                         for n in datasets for m in methods])


def bold_best(styler: Any, table: pd.DataFrame) -> Any:
    """Bold the highest R² of each row of :func:`imputer_table` (shown with :func:`benchsel_lib.book.table`)."""
    cols = [c for c in table.columns if c not in ("Matrix", "Objective")]
    return styler.highlight_max(subset=cols, axis=1, props="font-weight: bold")


def figure_limits(summary: pd.DataFrame, *, pad: float = 0.1, reach: float = 0.5, by: str = "imputer",
                  first: str = "Gaussian") -> dict[str, tuple[float, float]]:
    """Per matrix, y limits that show every mean R² and the Gaussian ±1 sd band unless it reaches far out.

    Parameters
    ----------
    summary : DataFrame
        :func:`summarize` rows (``dataset``, ``imputer``, ``r2_mean``, ``r2_sd``).
    pad : float
        Margin around the means, as a fraction of their range (at least 0.02).
    reach : float
        How far beyond the means the band may take the axis, as a fraction
        of their range; a band reaching further is cut (:func:`cut_bands`).
    by, first : str
        The column of the series and the series drawn with a band.

    Returns
    -------
    dict
        Display name -> ``(low, high)``.
    """
    out = {}
    for name, g in summary.groupby("dataset", sort=False):
        lo, hi = float(g["r2_mean"].min()), float(g["r2_mean"].max())
        span = max(hi - lo, 0.05)
        band = g[g[by] == first]
        b_lo = float((band["r2_mean"] - band["r2_sd"]).min()) if len(band) else lo
        b_hi = float((band["r2_mean"] + band["r2_sd"]).max()) if len(band) else hi
        out[str(name)] = (max(min(b_lo, lo - pad * span), lo - reach * span),
                          min(max(b_hi, hi + pad * span), hi + reach * span))
    return out


def cut_bands(summary: pd.DataFrame, limits: Mapping[str, tuple[float, float]], *, by: str = "imputer",
              first: str = "Gaussian") -> list[str]:
    """The matrices whose ±1 sd band (of series ``first``) reaches beyond :func:`figure_limits` (display names)."""
    g = summary[summary[by] == first]
    out = []
    for name, rows in g.groupby("dataset", sort=False):
        lo, hi = limits[str(name)]
        if ((rows["r2_mean"] - rows["r2_sd"]) < lo).any() or ((rows["r2_mean"] + rows["r2_sd"]) > hi).any():
            out.append(str(name))
    return out


def setting_text(*, k: int, holdout: float, n_folds: int) -> str:
    """Why a run's numbers are not compared with the paper's: the settings that differ from its table's.

    ``"2 folds here, 10 folds in the paper"``; ``"k = 3 and 20% holdout here, k = 5 and 10% holdout in the
    paper"``.
    """
    here, there = [], []
    if k != PAPER_AT[1]:
        here.append(f"k = {k}"), there.append(f"k = {PAPER_AT[1]}")
    if not np.isclose(holdout, PAPER_AT[0]):
        here.append(f"{pct(holdout)} holdout"), there.append(f"{pct(PAPER_AT[0])} holdout")
    if n_folds != PAPER_AT[2]:
        here.append(count(n_folds, "fold")), there.append(count(PAPER_AT[2], "fold"))
    return f"{and_join(here)} here, {and_join(there)} in the paper"


def _gauss_claim(at: pd.Series, n: str, methods: Sequence[str], *, off: str | None) -> Claim:
    """Table 4's Gaussian column on matrix ``n`` against this run's (``off``: why it is not compared)."""
    idx = [METHODS_ALL.index(m) for m in methods]
    claim = f"Gaussian R², {label(n)}"
    paper = " / ".join(num(PAPER_GAUSS[n][i]) for i in idx)
    if off:
        return not_run(claim, "Table 4", paper, off, section="table-4")
    run = {m: _value(at, n, m, "Gaussian") for m in methods}
    gaps = {m: abs(run[m] - PAPER_GAUSS[n][METHODS_ALL.index(m)]) for m in methods}
    v = verdict(max(gaps.values()), 0.0, tol=TOL, partly=PARTLY)
    far = [m for m in methods if gaps[m] > TOL + 1e-12]
    if not far:
        why = f"within {num(TOL)}"
    else:
        cause = {"entropy": ": first-pick tie (ch. 5)"}
        if n == "mmlu":
            cause = {m: ": smaller MMLU (ch. 1)" for m in methods}
        why = "; ".join(f"{METHOD_NAMES[m]} off by {num(gaps[m])}" + cause.get(m, "") for m in far)
        if len(far) < len(methods):
            why += f"; {'the other' if len(methods) - len(far) == 1 else 'the others'} within {num(TOL)}"
    return Claim(claim, "Table 4", paper, " / ".join(num(run[m]) for m in methods), v, why, section="table-4")


def _winners(comp: pd.DataFrame) -> str:
    """"kNN in 5 pairs (MMLU, MTEB), blend in 6 (Merged, BenchPress)": who beats the Gaussian, where."""
    lost = comp[comp["best"] != "Gaussian"]
    parts = []
    for i, (imp, g) in enumerate(lost.groupby("best", sort=False)):
        where = ", ".join(label(n) for n in dict.fromkeys(g["matrix"]))
        parts.append(f"{IMPUTER_NAMES[imp]} in {count(len(g), 'pair') if i == 0 else len(g)} ({where})")
    return ", ".join(parts)


def _tabimpute_claims(at: pd.Series, *, datasets: Sequence[str], methods: Sequence[str],
                      status: TabImputeStatus, off: str | None) -> list[Claim]:
    """The rows on TabImpute: not run without the package or weights, else this run against the paper."""
    rows = [("TabImpute V2 R² at k = 5", "Table 4", "0.03 to 0.61"),
            ("Gaussian above TabImpute across the board", "Table 4, Fig. 15", "11 of 12 pairs"),
            ("TabImpute near zero on Merged", "Fig. 15", "0.03 to 0.05"),
            ("Under TabImpute, MI far ahead of entropy on MMLU", "App. J", "0.61 vs 0.37")]
    why = f"{and_join(status.short)} not installed" if not status.available else off
    if why:
        return [not_run(c, w, p, why, section="tabimpute") for c, w, p in rows]
    pairs = [(n, m) for n in datasets for m in methods if np.isfinite(_value(at, n, m, "TabImpute"))]
    tab = {p: _value(at, *p, "TabImpute") for p in pairs}
    paper_tab = {p: PAPER_TABIMPUTE[p[0]][METHODS_ALL.index(p[1])] for p in pairs}
    out = []
    gap = max(abs(tab[p] - paper_tab[p]) for p in pairs)
    out.append(Claim(*rows[0], range_text(min(tab.values()), max(tab.values())),
                     verdict(gap, 0.0, tol=0.1, partly=0.2), f"largest gap to the paper {num(gap)}",
                     section="table-4"))
    above = sum(_value(at, *p, "Gaussian") > tab[p] for p in pairs)
    paper_above = sum(PAPER_GAUSS[p[0]][METHODS_ALL.index(p[1])] > paper_tab[p] for p in pairs)
    out.append(Claim(rows[1][0], rows[1][1], f"{paper_above} of {len(pairs)} pairs", f"{above} of {len(pairs)} pairs",
                     verdict(above / len(pairs), paper_above / len(pairs), tol=0.1, partly=0.25,
                             direction="at least"), "pairs where the Gaussian R² is the higher", section="table-4"))
    merged = [tab[p] for p in pairs if p[0] == "merged"]
    out.append(Claim(*rows[2], range_text(min(merged), max(merged)),
                     verdict(max(merged), NEAR_ZERO, tol=0.0, partly=0.1, direction="at most"),
                     f"near zero: at most {num(NEAR_ZERO)}", section="figure-15") if merged else
               not_run(*rows[2], "Merged was not in this run", section="figure-15"))
    if ("mmlu", "mi") in tab and ("mmlu", "entropy") in tab:
        d = tab[("mmlu", "mi")] - tab[("mmlu", "entropy")]
        out.append(Claim(*rows[3][:2], rows[3][2], f"{num(tab[('mmlu', 'mi')])} vs {num(tab[('mmlu', 'entropy')])}",
                         verdict(d, 0.24, tol=0.1, direction="at least"), f"MI ahead by {num(d)}",
                         section="table-4"))
    else:
        out.append(not_run(*rows[3], "MMLU with MI and entropy was not in this run", section="table-4"))
    return out


def claims(summary: pd.DataFrame, *, datasets: Sequence[str], methods: Sequence[str], imputers: Sequence[str],
           status: TabImputeStatus, k: int, holdout: float, n_folds: int) -> list[Claim]:
    """The claims table's rows: Table 4's Gaussian column, the Gaussian against the other imputers, TabImpute.

    Parameters
    ----------
    summary : DataFrame
        :func:`summarize` of every (matrix, imputer) run.
    datasets, methods, imputers : list of str
        What was run (imputer labels as in ``summary``).
    status : TabImputeStatus
        Whether TabImpute could run.
    k, holdout, n_folds : int, float, int
        The table's subset size and the run's holdout and folds.

    Returns
    -------
    list of Claim
        A matrix not run gives a ``not run`` row; so does every row on
        TabImpute when it could not run (with the reason).
    """
    at = _at(summary, k)
    off = None if comparable(k=k, holdout=holdout, n_folds=n_folds) else setting_text(k=k, holdout=holdout,
                                                                                       n_folds=n_folds)
    rows = [_gauss_claim(at, n, methods, off=off) if n in datasets else
            not_run(f"Gaussian R², {label(n)}", "Table 4", " / ".join(num(v) for v in PAPER_GAUSS[n]),
                    f"{label(n)} was not in this run", section="table-4") for n in PAPER_GAUSS]
    comp = comparison(summary, datasets=datasets, methods=methods, imputers=imputers, k=k)
    claim, paper = "Gaussian the best imputer", "11 of 12 (vs TabImpute)"
    if comp.empty:
        rows.append(not_run(claim, "Table 4", paper, "no other imputer was scored",
                            section="gaussian-against-the-other-imputers"))
    else:
        n_best, n_pairs = int((comp["best"] == "Gaussian").sum()), len(comp)
        v = verdict(n_best / n_pairs, 11 / 12, tol=0.1, partly=0.25, direction="at least")
        why = ("best in every pair" if n_best == n_pairs else f"best: {_winners(comp)}")
        n_other = sum(i not in ("Gaussian", "TabImpute") for i in imputers)
        rows.append(Claim(claim, "Table 4", paper, f"{n_best} of {n_pairs} (vs {n_other} other imputers)", v, why,
                          section="gaussian-against-the-other-imputers"))
    return rows + _tabimpute_claims(at, datasets=datasets, methods=methods, status=status, off=off)


def _losses(comp: pd.DataFrame, datasets: Sequence[str]) -> str:
    """"0.01 on MMLU, 0.45 on BenchPress": the largest lead of another imputer over the Gaussian, per matrix."""
    parts = []
    for n in datasets:
        g = comp[comp["matrix"] == n]
        if len(g) and (g["margin"] < 0).any():
            parts.append(f"{num(-g['margin'].min())} on {label(n)}")
    return and_join(parts)


def figure_caption(comp: pd.DataFrame, *, imputers: Sequence[str], k_max: int, k_imputers: Sequence[int],
                   k: int, folds_text: str, tabimpute_ran: bool, cut: Sequence[str] = ()) -> str:
    """The caption of Figure 15's analogue: what is drawn, and what it shows at ``k``."""
    others = [IMPUTER_NAMES[i] for i in imputers if i != "Gaussian"]
    single = len(k_imputers) == 1
    others = [IMPUTER_LONG[i] for i in imputers if i != "Gaussian"]
    drawn = (f"Imputation R² of the Gaussian conditional mean (line, ±1 sd band across folds) at k = 1 to {k_max}"
             + (f", and of {and_join(others)} " + (f"at k = {k_imputers[0]} (markers set side by side around it)"
                                                     if single else f"at k = {', '.join(map(str, k_imputers))}")
                if others else "")
             + f"; {folds_text}.")
    if comp.empty:
        return paragraph(drawn)
    above = comp[comp["margin"] < 0]
    finding = (f"At k = {k} a marker stands above the Gaussian mean in {len(above)} of the {len(comp)} panels"
               + (f": {_winners(comp)}." if len(above) else "."))
    tab = ("" if tabimpute_ran else "The paper's Figure 15 draws TabImpute, which did not run here.")
    bands = (f"The band is cut at the panel's edge on {and_join(cut)}, so that the means stay readable."
             if cut else "")
    return paragraph(drawn, finding, bands, tab)


def spread_table(spread: Mapping[int, pd.DataFrame], *, datasets: Sequence[str], methods: Sequence[str],
                 imputers: Sequence[str], k: int) -> pd.DataFrame:
    """Per seed: in how many pairs the Gaussian mean is the best imputer, and its mean margin per matrix.

    Parameters
    ----------
    spread : mapping seed -> DataFrame
        :func:`summarize` of the runs at that seed (at least ``k`` scored).

    Returns
    -------
    DataFrame
        ``seed``, ``Gaussian best in``, and one column per matrix: the
        Gaussian's R² minus the best other imputer's, averaged over the
        methods (negative: another imputer is ahead).
    """
    rows = []
    for s, summary in spread.items():
        comp = comparison(summary, datasets=datasets, methods=methods, imputers=imputers, k=k)
        row: dict[str, Any] = {"seed": int(s),
                               "Gaussian best in": f"{int((comp['best'] == 'Gaussian').sum())} of {len(comp)}"}
        for n in datasets:
            g = comp[comp["matrix"] == n]
            row[label(n)] = float(g["margin"].mean()) if len(g) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows, columns=["seed", "Gaussian best in", *[label(n) for n in datasets]])


def _folds_text(*, n_folds: int, holdout: float, seed: int, scheme: str) -> str:
    folds = "the paper's folds (seed 42)" if scheme == "paper" and seed == 42 and n_folds == 10 else \
        f"seed {seed}" + (", the paper's fold streams" if scheme == "paper" else ", this book's fold streams")
    return f"{n_folds}-fold cross-validation on {folds}, {pct(holdout)} holdout"


def _tabimpute_text(status: TabImputeStatus) -> str:
    if status.available:
        return paragraph(f"TabImpute V2 ran here, with the weights found at {status.checkpoint}.",
                         "It runs in the main process, one fold after another (torch and worker processes do not mix).")
    return paragraph(
        "To run TabImpute V2, install the optional extra `benchsel[tabimpute]` (the tabimpute package and torch) "
        "and point the environment variable `BENCHSEL_TABIMPUTE_CKPT` at the file `tabimputev2.ckpt` of the "
        "Hugging Face repository `Tabimpute/TabImpute`; the library never downloads weights and never runs "
        "TabImpute without them.",
        "Table 4 then gains a column of this run's TabImpute values, and the rows on TabImpute in the claims table "
        "are graded instead of marked not run.")


def _versus_text(comp: pd.DataFrame, *, datasets: Sequence[str], k: int) -> str:
    if comp.empty:
        return "No imputer other than the Gaussian mean was scored, so there is nothing to compare."
    n_best, n = int((comp["best"] == "Gaussian").sum()), len(comp)
    wins = comp[comp["best"] == "Gaussian"]
    where = "; ".join(f"{label(r.matrix)} with {METHOD_NAMES[r.method]} selection" for r in wins.itertuples())
    out = [f"At k = {k} the Gaussian conditional mean is the best imputer in {n_best} of the {n} "
           f"(matrix, objective) pairs" + (f" ({where})." if 0 < n_best < n else ".")]
    if n_best < n:
        out.append(f"Where another imputer is ahead, its largest lead is {_losses(comp, datasets)}.")
    sparse = comp[comp["matrix"].isin(["merged", "benchpress"])]
    if len(sparse) and (sparse["best"] == "BenchPressBlend").all():
        out.append("On the sparse matrices the blend wins every pair. A likely reason: the Gaussian mean takes all "
                   "its coefficients from one covariance that EM estimates from about a third of the entries "
                   "(on BenchPress shrunk close to the identity, Appendix I), while the blend fits each target "
                   "directly on the training models that observed it and leans on a rank-2 fit, which needs far "
                   "fewer estimated quantities.")
    dense = comp[comp["matrix"].isin(["mmlu", "mteb"])]
    if len(dense) and dense["margin"].abs().max() <= 0.03:
        out.append(f"On the dense matrices the best other imputer and the Gaussian mean are never more than "
                   f"{num(dense['margin'].abs().max())} apart.")
    return paragraph(*out)


def _failures_text(rows: Sequence[Claim], summary: pd.DataFrame, *, datasets: Sequence[str],
                   methods: Sequence[str], imputers: Sequence[str], k: int, status: TabImputeStatus) -> str:
    """What did not reproduce, and why, in a few sentences (the paragraph under the claims table)."""
    at = _at(summary, k)
    order = " / ".join(METHOD_NAMES[m] for m in methods)
    head = [f"Triples read {order}."] if len(methods) > 1 else []
    for v, word in (("not reproduced", "Not reproduced"), ("partly", "Reproduced in part")):
        these = [c.claim for c in rows if c.verdict == v]
        if these:
            head.append(f"{word}: {'; '.join(these)}.")
    bad = {c.claim for c in rows if c.verdict in ("partly", "not reproduced")}
    entropy_off = [n for n in datasets if f"Gaussian R², {label(n)}" in bad and "entropy" in methods
                   and abs(_value(at, n, "entropy", "Gaussian") - PAPER_GAUSS[n][0]) > TOL]
    why = []
    if entropy_off:
        why.append(f"On {and_join(label(n) for n in entropy_off)} the Gaussian R² misses the paper's through "
                   f"entropy alone: entropy's first pick is a tie among benchmarks of equal variance, which this "
                   f"library breaks otherwise than the paper's code (chapter 5), and every later pick follows from it.")
    if any(c.section == "gaussian-against-the-other-imputers" and c.claim in bad for c in rows):
        comp = comparison(summary, datasets=datasets, methods=methods, imputers=imputers, k=k)
        lost = int((comp["best"] != "Gaussian").sum())
        why.append(f"The paper's lead for the Gaussian mean is a lead over a zero-shot model; imputers that learn "
                   f"from the same training rows beat it in {lost} of the {len(comp)} pairs here.")
    missing = [c for c in rows if c.verdict == "not run"]
    tab = [c for c in missing if c.section == "tabimpute"]
    if tab and not status.available:
        why.append(f"The {count(len(tab), 'row')} on TabImpute {'is' if len(tab) == 1 else 'are'} not run: "
                   f"{and_join(status.missing)} {'is' if len(status.missing) == 1 else 'are'} not installed in "
                   f"this environment.")
    rest = [c for c in missing if c not in tab or status.available]
    if rest:
        why.append(f"Also not run: {'; '.join(f'{c.claim} ({c.why})' for c in rest)}.")
    return paragraph(*head, *why)


def prose(*, summary: pd.DataFrame, datasets: Sequence[str], methods: Sequence[str], imputers: Sequence[str],
          status: TabImputeStatus, k_table: int, k_max: int, k_imputers: Sequence[int], n_folds: int,
          holdout: float, seed: int, scheme: str, spread: pd.DataFrame | None = None) -> PageProse:
    """The page's passages, written from the summary of every (matrix, imputer) run.

    Parameters
    ----------
    summary : DataFrame
        :func:`summarize` of every (matrix, imputer) run.
    datasets, methods, imputers : list of str
        What was run (imputer labels as in ``summary``).
    status : TabImputeStatus
        Whether TabImpute could run, and why not.
    k_table, k_max, k_imputers, n_folds, holdout, seed, scheme :
        The run's parameters (``k_imputers``: the sizes the other imputers were scored at).
    spread : DataFrame, optional
        :func:`spread_table` of other seeds (None or empty: not run).

    Returns
    -------
    PageProse
        Passages ``claims``, ``failures_md``, ``tabimpute_md``, ``table_md``,
        ``imputers_md``, ``versus_md``, ``caption_md``, ``spread_md``.
    """
    rows = claims(summary, datasets=datasets, methods=methods, imputers=imputers, status=status, k=k_table,
                  holdout=holdout, n_folds=n_folds)
    comp = comparison(summary, datasets=datasets, methods=methods, imputers=imputers, k=k_table)
    folds = _folds_text(n_folds=n_folds, holdout=holdout, seed=seed, scheme=scheme)
    failures_md = _failures_text(rows, summary, datasets=datasets, methods=methods, imputers=imputers, k=k_table,
                                 status=status)
    paper_cols = comparable(k=k_table, holdout=holdout, n_folds=n_folds)
    table_md = paragraph(
        f"R² at k = {k_table}, {folds}, one row per matrix and selection objective.",
        ("The columns marked paper are Table 4's; " if paper_cols else
         "The paper's columns are left out, as its table is at k = 5, 10% holdout and 10 folds; ")
        + ("TabImpute's column here is this run's." if status.available else
           "TabImpute did not run here (last section)."))
    imputers_md = (f"R² at k = {k_table} of every imputer of this run, on the same folds; the highest of each row "
                   f"is in bold.")
    if spread is None or spread.empty:
        spread_md = ("These numbers come from one assignment of models to folds. Other seeds were not run: each "
                     "repeats the whole comparison, as long again as the run above.")
    else:
        seeds = and_join(str(s) for s in spread["seed"])
        spread_md = paragraph(
            f"Over seeds {seeds} (each another assignment of models to folds), the Gaussian mean is the best imputer "
            f"at k = {k_table} in {', '.join(spread['Gaussian best in'])} pairs.",
            "The table gives its R² minus the best other imputer's, averaged over the objectives (negative: "
            "another imputer ahead).")
    caption = figure_caption(comp, imputers=imputers, k_max=k_max, k_imputers=k_imputers, k=k_table,
                             folds_text=folds, tabimpute_ran=status.available,
                             cut=cut_bands(summary, figure_limits(summary)))
    return PageProse(list(datasets), {"claims": claims_table(rows), "failures_md": failures_md,
                                      "tabimpute_md": _tabimpute_text(status), "table_md": table_md,
                                      "imputers_md": imputers_md,
                                      "versus_md": _versus_text(comp, datasets=datasets, k=k_table),
                                      "caption_md": caption, "spread_md": spread_md})
