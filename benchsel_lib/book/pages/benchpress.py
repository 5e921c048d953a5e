"""Chapter 8: BenchPress (Appendix I, Figures 13-14).

The chapter runs the paper's protocol on the BenchPress matrix (83 models x
49 benchmarks, a third observed) under the EM configuration the paper's
numbers come from (``"early"``). This module turns the run's summaries into
the claims table of Appendix I, Figures 13-14 and Table 4 (:func:`claim_rows`),
the figures' captions, the per-fold table of Figure 14 (:func:`fold_table`)
and the page's passages (:func:`prose`); :func:`first_pick_passages` writes
what the first-pick study shows about greedy entropy's tied first step.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...studies.first_pick import PAPER_BENCHPRESS_ENTROPY, describe_first_pick
from ..claims import Claim, claims_table, failures, not_run, verdict
from ..prose import PageProse, and_join, count, num, paragraph, pct, range_text

__all__ = ["REFERENCE", "claim_rows", "coinciding_rules", "config_table", "fold_table", "first_pick_passages",
           "first_pick_reference", "mi_holdout", "prose", "r2_limits", "spread_table"]

#: Appendix I and Table 4: mean R^2 at k = 5, 10% holdout, of the configuration the paper's numbers come from.
REFERENCE: dict[str, dict[str, float]] = {"early": {"entropy": 0.21, "mi": -0.11, "random": 0.24}}
#: Holdout and subset size of the paper's values.
PAPER_AT = (0.1, 5)
#: Figure 13's caption: greedy entropy at k = 15 under the 10% holdout.
PAPER_K15 = 0.25
METHODS = ("entropy", "mi", "random")
METHOD_NAMES = {"entropy": "entropy", "mi": "MI", "random": "random"}
#: How far a mean R^2 may be from the paper's to count as reproduced (and as partly).
TOL, PARTLY = 0.05, 0.10
RULE_NAMES = {"auto": 'tie rule "auto"', "argmax": 'tie rule "argmax"', "index": 'tie rule "index"',
              "mi": 'tie rule "mi"', "rounded": "argmax of the rounded diagonal",
              "covariance": "largest covariance diagonal"}


def mi_holdout(holdouts: Sequence[float]) -> float:
    """The holdout of the MI runs and of the comparison table: 10% when the run has it, else its first holdout."""
    return 0.1 if any(np.isclose(holdouts, 0.1)) else float(holdouts[0])


def _at(summary: pd.DataFrame, method: str, holdout: float, k: int, column: str = "r2_mean") -> float | None:
    """One value of a ``summarize_cv`` table, or None when the run has no such row."""
    s = summary[(summary["method"] == method) & np.isclose(summary["holdout"], holdout) & (summary["k"] == k)]
    return float(s[column].iloc[0]) if len(s) else None


def config_table(summary: Mapping[str, pd.DataFrame], *, holdout: float, k: int) -> pd.DataFrame:
    """Mean R^2, its sd and standard error over folds per (configuration, method) at ``holdout`` and ``k``.

    The ``paper`` column holds the paper's value (Table 4) where the run is at the paper's holdout and
    ``k`` and the configuration is ``"early"``, else NaN.
    """
    rows = []
    comparable = np.isclose(holdout, PAPER_AT[0]) and k == PAPER_AT[1]
    for cfg, s in summary.items():
        s = s[np.isclose(s["holdout"], holdout) & (s["k"] == k)].set_index("method")
        for meth in METHODS:
            sd = float(s.loc[meth, "r2_sd"])
            rows.append({"config": cfg, "method": meth, "R2 mean": float(s.loc[meth, "r2_mean"]), "R2 sd": sd,
                         "R2 se": sd / np.sqrt(float(s.loc[meth, "n_scored"])),  # the folds the mean is over
                         "paper": REFERENCE.get(cfg, {}).get(meth, np.nan) if comparable else np.nan})
    return pd.DataFrame(rows)


def spread_table(summaries: Mapping[int, pd.DataFrame], *, holdout: float, k: int) -> pd.DataFrame:
    """Mean R^2 per method at ``holdout`` and ``k`` for each seed's run (the fold-assignment spread).

    Returns a table with a ``seed`` column and one column per method (empty when no seed ran).
    """
    rows = []
    for seed, sm in summaries.items():
        sm = sm[np.isclose(sm["holdout"], holdout) & (sm["k"] == k)].set_index("method")["r2_mean"]
        rows.append({"seed": seed, **{meth: float(sm[meth]) for meth in METHODS}})
    return pd.DataFrame(rows, columns=["seed", *METHODS])


def fold_table(cv: pd.DataFrame, *, holdout: float, k: int) -> pd.DataFrame:
    """R^2 of each fold at ``holdout`` and ``k``, one column per method (``fold`` counted from 1).

    Parameters
    ----------
    cv : DataFrame
        :func:`benchsel_lib.cross_validate` output (``method, holdout, fold, k, r2``).
    holdout : float
    k : int

    Returns
    -------
    DataFrame
        Columns ``fold`` and the methods the run has (``entropy``, ``MI``, ``random``); a fold
        in which a method scored no validation model holds NaN.
    """
    d = cv[np.isclose(cv["holdout"], holdout) & (cv["k"] == k)]
    t = d.pivot_table(index="fold", columns="method", values="r2", aggfunc="first")
    t = t[[m for m in METHODS if m in t.columns]].rename(columns=METHOD_NAMES)
    t.index = t.index + 1
    return t.rename_axis(columns=None).reset_index()


def r2_limits(summary: pd.DataFrame, *, methods: Sequence[str], holdout: float | None = None,
              pad: float = 0.15) -> tuple[float, float]:
    """Limits of an R^2 axis that show every mean curve of ``methods`` (and zero), not the whole +-1 sd bands.

    Parameters
    ----------
    summary : DataFrame
        ``summarize_cv`` output.
    methods : list of str
        The methods drawn.
    holdout : float, optional
        Only this holdout (default: all).
    pad : float
        Margin above and below, as a share of the curves' span (at least 0.2).

    Returns
    -------
    (float, float)
    """
    d = summary[summary["method"].isin(methods)]
    if holdout is not None:
        d = d[np.isclose(d["holdout"], holdout)]
    means = d["r2_mean"].to_numpy(float)
    means = means[np.isfinite(means)]
    if not means.size:
        raise ValueError(f"the summary has no R² means for {list(methods)}")
    lo, hi = min(0.0, float(means.min())), max(0.0, float(means.max()))
    span = max(hi - lo, 0.2)
    return lo - pad * span, hi + pad * span


def _papers_folds(seed: int, scheme: str, n_folds: int) -> bool:
    """Whether the run's folds are the paper's: its code's fold layout with seed 42, 10 folds."""
    return seed == 42 and scheme == "paper" and n_folds == 10


def first_pick_reference(*, k_max: int, holdout: float, seed: int, scheme: str, estimator: str,
                         n_folds: int = 10) -> dict[int, float] | None:
    """The paper's entropy values the first-pick study is compared with, or None where they do not apply.

    They apply on the paper's folds (``scheme="paper"``, seed 42, 10 folds) at 10% holdout with the EM
    estimate (``estimator="auto"``), at the subset sizes up to ``k_max``.
    """
    if not _papers_folds(seed, scheme, n_folds) or not np.isclose(holdout, PAPER_AT[0]) or estimator != "auto":
        return None
    return {kk: v for kk, v in PAPER_BENCHPRESS_ENTROPY.items() if kk <= k_max}


def coinciding_rules(study: Any) -> list[tuple[list[str], float]]:
    """Groups of first-pick rules that make the same first pick in every fold, with their curves' largest gap.

    Such rules draw the same curve up to ties broken differently later in the sequence; the figure
    gives them different line styles, and the caption names them.

    Parameters
    ----------
    study : FirstPickStudy

    Returns
    -------
    list of (list of str, float)
        Each group (two rules or more, in the study's order) and the largest absolute difference
        between their mean R² curves; largest groups first.
    """
    rules = [r for r in study.sources if r in study.picks.columns and r in study.curves.columns]
    groups: list[list[str]] = []
    for r in rules:
        for g in groups:
            if study.picks[r].equals(study.picks[g[0]]):
                g.append(r)
                break
        else:
            groups.append([r])
    out = []
    for g in sorted((g for g in groups if len(g) > 1), key=len, reverse=True):
        c = study.curves[g].to_numpy(float)
        out.append((g, float(np.nanmax(c.max(axis=1) - c.min(axis=1)))))
    return out


def first_pick_passages(study: Any, *, table: pd.DataFrame, k: int) -> dict[str, str]:
    """What the first-pick study shows, against the paper's values.

    Parameters
    ----------
    study : FirstPickStudy or None
        :func:`benchsel_lib.studies.first_pick.first_pick_study` of the ``early`` configuration on the
        paper's folds; None when the run has no ``early`` configuration (the passages then say so).
    table : DataFrame
        :func:`config_table` of the same run (MI's and random's distance from the paper on the same folds).
    k : int
        Subset size quoted (the paper's, 5).

    Returns
    -------
    dict
        ``first_pick_md`` (the section's text) and ``first_pick_caption`` (the figure's caption: what it
        shows and which curves coincide).
    """
    if study is None:
        none = "The early configuration was not run, so neither was the first-pick study."
        return {"first_pick_md": none, "first_pick_caption": ""}
    paper = study.paper
    early = table[table["config"] == "early"].set_index("method")
    same_folds = ""
    if paper and len(early) and early["paper"].notna().all():
        gaps = {m: float(early.loc[m, "R2 mean"] - early.loc[m, "paper"]) for m in METHODS}
        others = max(abs(gaps["mi"]), abs(gaps["random"]))
        same_folds = (f"On these folds MI and random, which have no tie to break, come within {num(others, '.3f')} of "
                      f"the paper's values, entropy within {num(abs(gaps['entropy']), '.3f')}"
                      + (": a gap on identical folds that fold noise cannot explain." if others < abs(gaps["entropy"])
                         else "."))
    n_tied = study.picks["n_top"]
    tie = (f"In every fold each diagonal entry of the correlation is 1; the paper's code takes `numpy.argmax` of the "
           f"diagonal of Σ · d dᵀ (d = 1/√diag Σ), which is 1 only up to the last bits of the covariance estimate: in "
           f"these folds {range_text(n_tied.min(), n_tied.max(), 'd')} benchmarks share its largest rounded value.")
    body = paragraph(same_folds, tie, describe_first_pick(study, k=k))
    same = [and_join(RULE_NAMES.get(r, r) for r in g) + (f" (apart by at most {num(gap, '.3f')})" if gap >= 5e-4
                                                         else " (identical)")
            for g, gap in coinciding_rules(study)]
    caption = paragraph(
        f"Left: entropy's mean R² against *k* under each way of breaking the first tie (one line style and marker "
        f"each), the rounding drawn at random (grey band, 5-95%, and its median) and the paper's values (crosses). "
        + (f"Right: the draws' mean R² at *k* = {k}, with each rule's value and the paper's (black dashed)."
           if len(study.draws) else ""),
        ("The curves of " + "; of ".join(same) + " lie on top of each other: those rules make the same first pick in "
         "every fold, so only their line styles and markers tell them apart." if same else
         "No two rules make the same first pick in every fold."))
    return {"first_pick_md": body, "first_pick_caption": caption}


def _tie_why(study: Any, k: int) -> str:
    """Why an entropy value is off: the range the first pick's rounding gives at ``k``."""
    if study is None or not len(study.draws) or k not in study.curves.index:
        return "entropy's first pick is a tie, broken otherwise than in the paper"
    q = study.curves.loc[k]
    return f"tied first pick; its rounding drawn at random gives {range_text(q['noise_q05'], q['noise_q95'])}"


def _level(claim: str, where: str, paper: float, value: float | None, why_off: str, section: str,
           missing: str) -> Claim:
    """A claim that a mean R^2 is about the paper's value."""
    if value is None:
        return not_run(claim, where, f"{paper:.2f}", missing, section=section)
    v = verdict(value, paper, tol=TOL, partly=PARTLY)
    why = f"within {TOL} of the paper" if v == "reproduced" else why_off
    return Claim(claim, where, f"{paper:.2f}", num(value), v, why, section)


def _negative_folds(cv: pd.DataFrame, *, holdout: float, k: int) -> dict[str, int]:
    d = cv[np.isclose(cv["holdout"], holdout) & (cv["k"] == k)]
    return {m: int((d.loc[d["method"] == m, "r2"] < 0).sum()) for m in METHODS}


def claim_rows(summary: Mapping[str, pd.DataFrame], cv: Mapping[str, pd.DataFrame], *, holdouts: Sequence[float],
               k_max: int, n_folds: int, first_pick: Any = None) -> list[Claim]:
    """The claims of Appendix I, Figures 13-14 and Table 4 on BenchPress, checked on the ``early`` run.

    Parameters
    ----------
    summary, cv : dict
        Configuration -> ``summarize_cv`` and ``cross_validate`` output; the claims read ``"early"``.
    holdouts : list of float
        The run's holdouts.
    k_max, n_folds : int
        The run's largest subset size and folds.
    first_pick : FirstPickStudy, optional
        The first-pick study of the ``early`` run: an entropy value that is off is explained by the
        range its rounding model gives.

    Returns
    -------
    list of Claim
        Nine rows; those the run cannot check (no ``early`` run, a holdout or ``k`` it does not have)
        are ``not run`` rows saying why.

    Notes
    -----
    Complexity O(rows of the tables).
    """
    s, c = summary.get("early"), cv.get("early")
    has = {h: any(np.isclose(holdouts, h)) for h in (0.1, 0.5, 0.9)}

    def value(method: str, holdout: float, k: int) -> float | None:
        return None if s is None or not has[holdout] or k > k_max else _at(s, method, holdout, k)

    def missing(holdout: float, k: int) -> str:
        if s is None:
            return "the early configuration, the paper's, was not in this run"
        return f"this run has no {pct(holdout)} holdout" if not has[holdout] else f"this run stops at k = {k_max}"

    rows = [_level("Entropy at k = 15, 10% holdout", "Fig. 13", PAPER_K15, value("entropy", 0.1, 15),
                   _tie_why(first_pick, 15), "figure-13", missing(0.1, 15)),
            _level("Entropy at k = 5, 10% holdout", "App. I, Table 4", REFERENCE["early"]["entropy"],
                   value("entropy", 0.1, 5), _tie_why(first_pick, 5), "the-first-pick", missing(0.1, 5)),
            _level("Random at k = 5, 10% holdout", "App. I, Table 4", REFERENCE["early"]["random"],
                   value("random", 0.1, 5), "fold noise on a few validation models a fold", "figure-14",
                   missing(0.1, 5)),
            _level("MI at k = 5, 10% holdout", "Table 4", REFERENCE["early"]["mi"], value("mi", 0.1, 5),
                   "MI's folds vary widely", "figure-14", missing(0.1, 5))]
    rows.append(_mi_negative(c, value("mi", 0.1, 5), n_folds=n_folds, missing=missing(0.1, 5)))
    rows.append(_comparable(value("entropy", 0.1, 5), value("random", 0.1, 5), missing(0.1, 5)))
    rows.append(_below("50% holdout: negative R² at k = 15", "App. I", value("entropy", 0.5, 15), missing(0.5, 15)))
    rows.append(_uninformative(value("entropy", 0.9, 15), missing(0.9, 15)))
    rows.append(_random_competitive(s, holdouts=holdouts, missing=missing(0.1, 1)))
    return rows


def _mi_negative(cv: pd.DataFrame | None, mi: float | None, *, n_folds: int, missing: str) -> Claim:
    claim, where, paper = "MI unstable: negative R² on several folds at k = 5", "Fig. 14", "several folds"
    if cv is None or mi is None:
        return not_run(claim, where, paper, missing, section="figure-14")
    neg = _negative_folds(cv, holdout=0.1, k=5)
    v = verdict(neg["mi"], 3, tol=0, partly=1, direction="at least")
    run = f"{neg['mi']} of {n_folds} folds (entropy {neg['entropy']}, random {neg['random']})"
    why = "poorly estimated complement precision" if v == "reproduced" else "MI is steadier here"
    return Claim(claim, where, paper, run, v, why, "figure-14")


def _comparable(ent: float | None, rnd: float | None, missing: str) -> Claim:
    claim, where, paper = "Entropy and random comparable at k = 5", "Fig. 14", "both ≈ 0.2"
    if ent is None or rnd is None:
        return not_run(claim, where, paper, missing, section="figure-14")
    v = verdict(ent - rnd, 0.0, tol=TOL, partly=PARTLY)
    why = ("less than 0.05 apart" if v == "reproduced" else
           f"random ahead by {num(rnd - ent)}: entropy's tied first pick" if rnd > ent else
           f"entropy ahead by {num(ent - rnd)}")
    return Claim(claim, where, paper, f"{num(ent)} and {num(rnd)}", v, why, "figure-14")


def _below(claim: str, where: str, value: float | None, missing: str) -> Claim:
    if value is None:
        return not_run(claim, where, "below 0", missing, section="figure-13")
    v = verdict(value, 0.0, tol=0.0, partly=TOL, direction="at most")
    why = "too few training models for 49 benchmarks" if v != "not reproduced" else "entropy stays positive"
    return Claim(claim, where, "below 0", num(value), v, why, "figure-13")


def _uninformative(value: float | None, missing: str) -> Claim:
    claim, where, paper = "90% holdout: essentially uninformative at k = 15", "App. I", "R² ≈ 0"
    if value is None:
        return not_run(claim, where, paper, missing, section="figure-13")
    v = verdict(value, 0.0, tol=0.1, partly=0.2)
    why = "about 8 training models for 49 benchmarks" if v == "reproduced" else "more signal than the paper saw"
    return Claim(claim, where, paper, num(value), v, why, "figure-13")


def _random_competitive(s: pd.DataFrame | None, *, holdouts: Sequence[float], missing: str) -> Claim:
    claim, where, paper = "Random competitive with entropy at every holdout", "Fig. 13", "at every holdout"
    if s is None:
        return not_run(claim, where, paper, missing, section="figure-13")
    piv = s[s["method"].isin(["entropy", "random"])].pivot_table(index=["holdout", "k"], columns="method",
                                                                   values="r2_mean")
    lead = (piv["entropy"] - piv["random"]).groupby(level="holdout").mean()
    worst = float(lead.max())
    v = verdict(worst, 0.0, tol=TOL, partly=PARTLY, direction="at most")
    run = f"entropy at most {num(max(worst, 0.0))} ahead (mean over k)"
    why = "any subset does about as well" if v == "reproduced" else (
        f"entropy ahead at {pct(float(lead.idxmax()))} holdout")
    return Claim(claim, where, paper, run, v, why, "figure-13")


def figure_captions(*, summary: pd.DataFrame | None, cv: pd.DataFrame | None, config: str, holdouts: Sequence[float],
                    holdout: float, k_max: int, n_folds: int) -> dict[str, str]:
    """Captions of Figures 13 and 14: what is drawn and what it shows, for the configuration plotted.

    Parameters
    ----------
    summary, cv : DataFrame or None
        ``summarize_cv`` and ``cross_validate`` output of that configuration.
    config : str
        The configuration plotted.
    holdouts : list of float
    holdout : float
        The holdout of Figure 14 (:func:`mi_holdout`).
    k_max, n_folds : int

    Returns
    -------
    dict
        ``figure13_md`` and ``figure14_md``.
    """
    if summary is None:
        return {"figure13_md": "", "figure14_md": ""}
    per = []
    for h in sorted(holdouts):
        e, r = _at(summary, "entropy", h, k_max), _at(summary, "random", h, k_max)
        per.append(f"{pct(h)}: {num(e)} against {num(r)}")
    fig13 = paragraph(
        f"Greedy entropy (solid, markers) against random (dashed) in the {config} configuration, one row per holdout; "
        f"shaded ±1 sd across the {count(n_folds, 'fold')}, clipped at the R² axis, which is set to show the mean "
        f"curves.", f"At k = {k_max} entropy's mean R² against random's is, by holdout, " + "; ".join(per) + ".")
    k5 = min(PAPER_AT[1], k_max)
    vals = {m: _at(summary, m, holdout, k5) for m in METHODS}
    neg = _negative_folds(cv, holdout=holdout, k=k5) if cv is not None else {}
    d = cv[np.isclose(cv["holdout"], holdout) & (cv["k"] == k5) & (cv["method"] == "mi")] if cv is not None else None
    worst = (f" MI's worst fold scores {num(d['r2'].min())}." if d is not None and len(d) else "")
    fig14 = paragraph(
        f"Entropy (blue), MI (red) and random (grey dashed) at {pct(holdout)} holdout, shaded ±1 sd across folds "
        f"(clipped). At k = {k5}: " + ", ".join(f"{METHOD_NAMES[m]} {num(v)}" for m, v in vals.items() if v is not None)
        + (f"; MI is negative in {neg['mi']} of {n_folds} folds, entropy in {neg['entropy']}, random in "
           f"{neg['random']}." if neg else ".") + worst)
    return {"figure13_md": fig13, "figure14_md": fig14}


def _scope(*, configs: Sequence[str], holdouts: Sequence[float], k_max: int, n_folds: int, seed: int, scheme: str,
           estimator: str, n_draws: int) -> str:
    """What this run computed, in one sentence."""
    folds = (f"the paper's own {count(n_folds, 'fold')} (seed 42)" if _papers_folds(seed, scheme, n_folds) else
             f"{count(n_folds, 'fold')} drawn with seed {seed}"
             + ("" if scheme == "paper" else " by this book's nested scheme"))
    est = "by EM" if estimator in ("auto", "em") else "pairwise (not by the paper's EM)"
    return (f"This run: the {and_join(configs)} configuration{'s' if len(configs) > 1 else ''}, "
            f"{folds}, holdouts {and_join(pct(h) for h in sorted(holdouts))}, k = 1 to "
            f"{k_max}, correlations estimated {est}, and {count(n_draws, 'draw')} of the rounding in the first-pick study.")


def _others(table: pd.DataFrame, spread: pd.DataFrame, *, configs: Sequence[str], k: int, holdout: float) -> str:
    """The configurations compared and the fold-seed spread, or what of them was not run and why."""
    parts, left = [], []
    if len(configs) > 1:
        by = table.pivot(index="method", columns="config", values="R2 mean")
        diff = float((by.max(axis=1) - by.min(axis=1)).max())
        parts.append(f"At {pct(holdout)} holdout and k = {k} the configurations differ by up to {num(diff)} in mean "
                     f"R² across the three methods (first table below).")
    else:
        left.append("the public code's configuration" if "released" not in configs else "the early configuration")
    if len(spread):
        rng = "; ".join(f"{METHOD_NAMES[m]} {range_text(spread[m].min(), spread[m].max())}" for m in METHODS)
        parts.append(f"Over the seeds {and_join(spread['seed'])} the early run's mean R² at k = {k} spans: {rng}. "
                     f"A fold holds only 8 or 9 validation models, so which models land in which fold moves the "
                     f"means as much as the choice of method.")
    else:
        left.append("repeats of the early run on folds drawn with other seeds")
    if len(left) == 1:
        parts.append(f"This run leaves out {left[0]}: it adds tens of seconds to a page meant to run in a few, and is "
                     f"an option of the notebook's parameters.")
    elif left:
        parts.append(f"This run leaves out {and_join(left)}: each adds tens of seconds to a page meant to run in "
                     f"a few, and both are options of the notebook's parameters.")
    return paragraph(*parts)


def _failures_passage(rows: Sequence[Claim], *, seed: int, scheme: str, n_folds: int, estimator: str) -> str:
    said = failures(rows)
    if not said:
        ran = [r for r in rows if r.verdict != "not run"]
        said = "Every claim checked here is reproduced." if ran else "No claim of Appendix I was checked in this run."
    why = []
    entropy_off = [r for r in rows if r.claim.startswith("Entropy at") and r.verdict in ("partly", "not reproduced")]
    if entropy_off:
        why.append("The entropy rows differ because greedy entropy's first step is a tie on a correlation matrix: "
                   "the paper's code breaks it by floating-point rounding, this library by a fixed rule, and on "
                   "BenchPress the first pick moves the whole curve (see the first-pick section).")
    if not _papers_folds(seed, scheme, n_folds):
        why.append("This run's folds are not the paper's, so fold noise alone moves every number.")
    if estimator not in ("auto", "em"):
        why.append("This run estimates the correlations pairwise, not by the paper's EM.")
    return paragraph(said, *why)


def prose(
    *,
    rows: Sequence[Claim],
    table: pd.DataFrame,
    spread: pd.DataFrame,
    configs: Sequence[str],
    holdout: float,
    holdouts: Sequence[float],
    k_table: int,
    k_max: int,
    n_folds: int,
    seed: int,
    scheme: str,
    estimator: str,
    n_draws: int,
) -> PageProse:
    """The page's passages, written from this run's results.

    Parameters
    ----------
    rows : list of Claim
        :func:`claim_rows`.
    table : DataFrame
        :func:`config_table` at ``holdout`` and ``k_table``.
    spread : DataFrame
        :func:`spread_table` of the ``early`` runs (empty when no other seed ran).
    configs : list of str
        Configurations run.
    holdout, holdouts, k_table, k_max, n_folds, seed, scheme, estimator, n_draws :
        The run's parameters (``holdout`` is :func:`mi_holdout`).

    Returns
    -------
    PageProse
        Passages ``claims``, ``failures_md``, ``scope_md`` and ``others_md``.
    """
    return PageProse(["benchpress"], {
        "claims": claims_table(rows),
        "failures_md": _failures_passage(rows, seed=seed, scheme=scheme, n_folds=n_folds, estimator=estimator),
        "scope_md": _scope(configs=configs, holdouts=holdouts, k_max=k_max, n_folds=n_folds, seed=seed, scheme=scheme,
                           estimator=estimator, n_draws=n_draws),
        "others_md": _others(table, spread, configs=configs, k=k_table, holdout=holdout)})

