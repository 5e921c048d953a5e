"""Chapter 8: BenchPress (Appendix I, Figures 13-14)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...studies.first_pick import PAPER_BENCHPRESS_ENTROPY, describe_first_pick
from ..prose import (
    PageProse,
    and_join,
    bullets,
    cap,
    code,
    count,
    num,
    paragraph,
    pct,
    range_text,
    run_line,
    signed,
)

__all__ = ["REFERENCE", "config_table", "figure_captions", "first_pick_passages", "first_pick_reference", "mi_holdout",
           "prose", "spread_table"]

#: Appendix I: mean R^2 at k = 5, 10% holdout, of the configuration the paper's numbers come from.
REFERENCE: dict[str, dict[str, float]] = {"early": {"entropy": 0.21, "mi": -0.11, "random": 0.24}}
#: Holdout and subset size of the paper's values.
PAPER_AT = (0.1, 5)
METHODS = ("entropy", "mi", "random")
METHOD_NAMES = {"entropy": "entropy", "mi": "MI", "random": "random"}


def mi_holdout(holdouts: Sequence[float]) -> float:
    """The holdout of the MI runs and of the comparison table: 10% when the run has it, else its first holdout."""
    return 0.1 if any(np.isclose(holdouts, 0.1)) else float(holdouts[0])


def config_table(summary: Mapping[str, pd.DataFrame], *, holdout: float, k: int) -> pd.DataFrame:
    """Mean R^2, its sd and standard error over folds per (configuration, method) at ``holdout`` and ``k``."""
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
    """Mean R^2 per method at ``holdout`` and ``k`` for each seed's run (the fold-assignment spread)."""
    rows = []
    for seed, sm in summaries.items():
        sm = sm[np.isclose(sm["holdout"], holdout) & (sm["k"] == k)].set_index("method")["r2_mean"]
        rows.append({"seed": seed, **{meth: float(sm[meth]) for meth in METHODS}})
    return pd.DataFrame(rows, columns=["seed", *METHODS]).set_index("seed")


def figure_captions(*, configs: Sequence[str], holdouts: Sequence[float], holdout: float, n_folds: int) -> dict[str, str]:
    """Captions of Figures 13 and 14 for this run (one figure per EM configuration)."""
    per = f"One figure per EM configuration ({', '.join(code(c) for c in configs)})"
    fig13 = paragraph(
        f"{per}, one row of panels per holdout ({', '.join(pct(h) for h in sorted(holdouts))}).",
        "Solid with markers: greedy entropy; dashed: random; shaded: ±1 sd across the "
        f"{count(n_folds, 'fold')}.")
    fig14 = paragraph(f"{per}, at {pct(holdout)} holdout (the holdout of the MI runs: 10% when the run has it, as "
                      f"in the paper).", "Blue: greedy entropy; red: greedy MI; gray dashed: random.")
    return {"figure13_md": fig13, "figure14_md": fig14}


def _values(t: pd.DataFrame, cfg: str) -> str:
    sub = t[t["config"] == cfg].set_index("method")["R2 mean"]
    return ", ".join(f"{METHOD_NAMES[m]} {num(sub[m])}" for m in METHODS)


def prose(
    *,
    table: pd.DataFrame,
    spread: pd.DataFrame,
    configs: Sequence[str],
    n_models: int,
    n_benchmarks: int,
    holdout: float,
    holdouts: Sequence[float],
    k_table: int,
    k_max: int,
    n_folds: int,
    seed: int,
    scheme: str,
    estimator: str,
    quick: bool,
    first_pick: str = "",
) -> PageProse:
    """The page's passages, written from the configuration table and the seed spread.

    Parameters
    ----------
    table : DataFrame
        :func:`config_table` at ``holdout`` and ``k_table``.
    spread : DataFrame
        :func:`spread_table` of the ``early`` runs (empty when the spread was not run).
    configs : list of str
        Configurations run.
    n_models, n_benchmarks : int
        Size of the BenchPress matrix.
    holdout, holdouts, k_table, k_max, n_folds, seed, scheme, estimator, quick :
        The run's parameters (``holdout`` is :func:`mi_holdout`).
    first_pick : str
        The ``first_pick_finding`` passage of :func:`first_pick_passages` (empty when the study was not run).

    Returns
    -------
    PageProse
        Passages ``this_book``, ``differ``, ``vs_paper_md``, ``spread_md``, ``findings``.
    """
    h = pct(holdout)
    details = [f"configuration{'s' if len(configs) > 1 else ''} " + ", ".join(code(c) for c in configs),
               f"holdout{'s' if len(holdouts) > 1 else ''} {', '.join(pct(x) for x in holdouts)}",
               count(n_folds, "fold"), f"k = 1-{k_max}", f"seed {seed}", f"fold scheme {code(scheme)}"]
    if estimator != "auto":
        details.append(f"correlation estimator {code(estimator)} (the configurations then share one estimate)")
    values = "; ".join(f"under {code(cfg)} {_values(table, cfg)}" for cfg in configs)
    lead = f"At {h} holdout and k = {k_table}: {values}."

    comparable = bool(np.isclose(holdout, PAPER_AT[0]) and k_table == PAPER_AT[1])
    if "early" in configs and comparable:
        sub = table[table["config"] == "early"].set_index("method")
        vs_paper_md = "Against the paper, the `early` run is off by " + ", ".join(
            f"{signed(sub.loc[m, 'R2 mean'] - sub.loc[m, 'paper'])} ("
            + (f"{num(abs(sub.loc[m, 'R2 mean'] - sub.loc[m, 'paper']) / sub.loc[m, 'R2 se'], '.1f')} standard errors"
               if sub.loc[m, "R2 se"] > 0 else "no fold spread") + f") for {METHOD_NAMES[m]}" for m in METHODS) + (
            "." if estimator == "auto" else f" (this run estimates the correlations with {code(estimator)}, not the "
                                            f"paper's EM).")
    elif "early" in configs:
        vs_paper_md = (f"The paper's values are for k = 5 at 10% holdout; this run's table is at k = {k_table} and "
                       f"{h} holdout, so it is not compared with them.")
    else:
        vs_paper_md = "The `early` configuration was not run (parameter `configs`), so there is no comparison with the paper."

    if len(spread):
        rng = "; ".join(f"{METHOD_NAMES[m]} {range_text(spread[m].min(), spread[m].max())}" for m in METHODS)
        spread_md = (f"Over the seeds {', '.join(map(str, spread.index))} the `early` run's mean R² at k = {k_table} "
                     f"spans: {rng}.")
    else:
        spread_md = "The seed spread was not run with these parameters (`spread_seeds`)."

    per_fold = n_models / n_folds
    fold_size = (f"{int(np.floor(per_fold))} or {int(np.ceil(per_fold))}" if per_fold != int(per_fold)
                 else str(int(per_fold)))
    n_train = int(min(round((1 - holdout) * n_models), np.floor(n_models - per_fold)))
    this_book = paragraph(run_line(["benchpress"], details=details, quick=quick),
                          "These are the paper's own folds (scheme `paper`, seed 42)." if scheme == "paper" and seed == 42
                          else "", lead, vs_paper_md if "early" in configs else "")
    differ = paragraph(
        first_pick.replace("**Entropy's first pick.** ", "") if first_pick else "",
        f"A fold holds {fold_size} validation models, so other, equally valid assignments of models to folds move "
        f"the mean R² too. {spread_md}" if len(spread) else
        f"A fold holds {fold_size} validation models, so which models land in which fold moves the mean R² a lot "
        f"(the seed spread was not run here: parameter `spread_seeds`).",
        "On a matrix this sparse small differences between the selection rules say little.")

    by_cfg = table.pivot(index="method", columns="config", values="R2 mean")
    ent_vs = " and ".join(f"{'above' if by_cfg.loc['entropy', c] > by_cfg.loc['random', c] else 'below'} random under "
                       f"{code(c)}" for c in configs)
    found = [
        paragraph("**The paper's values** (0.21 / -0.11 / 0.24 for entropy / MI / random, `early` configuration).",
                  vs_paper_md, spread_md if len(spread) else "",
                  f"Other, equally valid assignments of models to folds move the mean R² a lot, MI's above all: a "
                  f"fold holds {fold_size} validation models, and a single one with extreme residuals can dominate it "
                  f"(the residual table above names the worst entries)." if len(spread) else ""),
        first_pick,
        paragraph(f"BenchPress is small and sparse ({n_models} models, {n_benchmarks} benchmarks, about a third "
                  f"observed): at {h} holdout a training set has about {n_train} models for {n_benchmarks} "
                  f"benchmarks" + (" (fewer models than benchmarks)" if n_train < n_benchmarks else "")
                  + ", and many validation models observe only a few selected benchmarks; one that observes none of "
                    "them is not scored.",
                  f"At k = {k_table} greedy entropy is {ent_vs}; the paper reports entropy slightly below random "
                  f"(0.21 vs 0.24)."),
    ]
    if len(configs) > 1:
        diff = float((by_cfg.max(axis=1) - by_cfg.min(axis=1)).max())
        n_low = int(sum(by_cfg[c].idxmin() == "mi" for c in configs))
        found.append(paragraph(
            f"**The two configurations** differ by at most {num(diff)} in mean R² over the three methods"
            + (" (this run estimates the correlations pairwise, so the EM configurations coincide)."
               if estimator == "pairwise" else "."),
            f"MI has the lowest mean R² under {n_low} of the {len(configs)} configurations.",
            "On a matrix this sparse the conditional-Gaussian imputation is fragile, and small differences between "
            "the selection rules say little."))
    else:
        low = by_cfg[configs[0]].idxmin()
        found.append(paragraph(f"**One configuration** ({code(configs[0])}) was run; {METHOD_NAMES[low]} has the "
                               f"lowest mean R² there.",
                               "On a matrix this sparse the conditional-Gaussian imputation is fragile, and small "
                               "differences between the selection rules say little."))
    return PageProse(["benchpress"], {"this_book": this_book, "differ": differ, "vs_paper_md": vs_paper_md,
                                      "spread_md": spread_md, "findings": paragraph(lead) + "\n\n" + bullets(found)})


def first_pick_reference(*, k_max: int, holdout: float, seed: int, scheme: str,
                         estimator: str) -> dict[int, float] | None:
    """The paper's entropy values the first-pick study is compared with, or None where they do not apply.

    They apply on the paper's folds (``scheme="paper"``, seed 42) at 10% holdout with the EM estimate
    (``estimator="auto"``), at the subset sizes up to ``k_max``.
    """
    if scheme != "paper" or seed != 42 or not np.isclose(holdout, PAPER_AT[0]) or estimator != "auto":
        return None
    return {kk: v for kk, v in PAPER_BENCHPRESS_ENTROPY.items() if kk <= k_max}


def first_pick_passages(study: Any, *, table: pd.DataFrame, k: int) -> dict[str, str]:
    """What the first-pick study shows, against the paper's values (passages ``first_pick_md``, ``first_pick_finding``).

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
        ``first_pick_md`` (the section's text) and ``first_pick_finding`` (one item of "What we found").
    """
    if study is None:
        return {"first_pick_md": "The `early` configuration was not run (parameter `configs`), so the first-pick "
                                 "study was not run.", "first_pick_finding": ""}
    c = study.curves
    paper = study.paper
    early = table[table["config"] == "early"].set_index("method")
    same_folds = ""
    if paper and len(early) and early["paper"].notna().all():
        gaps = {m: float(early.loc[m, "R2 mean"] - early.loc[m, "paper"]) for m in METHODS}
        others = max(abs(gaps["mi"]), abs(gaps["random"]))
        same_folds = (f"On these folds MI and random, which have no tie to break, come within {num(others, '.3f')} of "
                      f"the paper's values, entropy {num(abs(gaps['entropy']), '.3f')}"
                      + (": a gap on identical folds that fold noise cannot explain." if others < abs(gaps["entropy"])
                         else "."))
    n_tied = study.picks["n_top"]
    tie = (f"In every fold each diagonal entry of the correlation is 1; the paper's code takes `numpy.argmax` of the "
           f"diagonal of Σ · d dᵀ (d = 1/√diag Σ), which is 1 only up to the last bits of the covariance estimate: in these "
           f"folds {range_text(n_tied.min(), n_tied.max(), 'd')} benchmarks share its largest rounded value.")
    body = paragraph(same_folds, tie, describe_first_pick(study, k=k))
    q = c.loc[k]
    band = c.loc[k, list(study.sources)]
    rules_range = f"the library's tie rules and the two covariance paths give {range_text(band.min(), band.max())}"
    if len(study.draws) and paper and k in study.paper_percentile.index:
        reported = and_join(f"{num(v)} at k = {kk}" for kk, v in sorted(paper.items()))
        won = [r for r, ok in study.matches.items() if ok]
        verdict = (f"no fixed rule reproduces the paper's {reported}" if not won else
                   f"{and_join(code(r) for r in won)} reproduce{'s' if len(won) == 1 else ''} the paper's {reported}")
        finding = paragraph(
            f"**Entropy's first pick.** On the paper's own folds entropy's value at k = {k} depends on how the first "
            f"pick's tie is broken: {rules_range}, and drawing the paper's floating-point rounding at random gives "
            f"{range_text(q['noise_q05'], q['noise_q95'])} (90% of {count(len(study.draws), 'draw')}), with the "
            f"paper's {num(paper[k])} at the {num(100 * study.paper_percentile[k], '.0f')}th percentile.",
            f"{cap(verdict)}; the difference from the paper is the rounding of its first pick, not fold noise.")
    else:
        finding = (f"**Entropy's first pick.** Entropy's first pick is a tie on a correlation matrix; at k = {k} "
                   f"{rules_range} depending on how it is broken.")
    return {"first_pick_md": body, "first_pick_finding": finding}

