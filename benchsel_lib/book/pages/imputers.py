"""Chapter 9: nonlinear imputation, TabImpute and the library's other imputers (Appendix J, Table 4, Figure 15):
Table 4, whether TabImpute V2 can run (:func:`tabimpute_status`: the ``tabimpute`` package, torch and
its weights, never downloaded), the imputers run, their R² table and the claims (:func:`claims`)."""
from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..claims import Claim, not_run, quantity, verdict
from ..notebook import and_join
from ..prose import label, num, pct

__all__ = ["IMPUTER_NAMES", "PAPER_GAUSS", "PAPER_TABIMPUTE", "TabImputeStatus", "at", "claims", "imputer_factories",
           "imputer_table", "key", "summarize", "tabimpute_status"]

#: Table 4 (k = 5, 10-fold CV, 10% holdout), Gaussian conditional mean: (entropy, MI, random).
PAPER_GAUSS = {"mmlu": (0.89, 0.91, 0.89), "mteb": (0.72, 0.76, 0.76), "merged": (0.35, 0.51, 0.53),
               "benchpress": (0.21, -0.11, 0.24)}
#: Table 4, TabImpute V2: (entropy, MI, random).
PAPER_TABIMPUTE = {"mmlu": (0.37, 0.61, 0.55), "mteb": (0.30, 0.33, 0.33), "merged": (0.03, 0.03, 0.05),
                   "benchpress": (0.06, 0.04, 0.09)}
METHODS = ("entropy", "mi", "random")
METHOD_NAMES = {"entropy": "entropy", "mi": "MI", "random": "random"}
#: Display names of the imputers (the keys label the runs).
IMPUTER_NAMES = {"Gaussian": "Gaussian", "SoftImpute": "soft-impute", "KNN": "kNN", "BenchPressBlend": "blend",
                 "TabImpute": "TabImpute"}
#: (holdout, k, folds) of Table 4; the EM configuration of each matrix that the paper's numbers come from.
PAPER_AT, PAPER_CONFIG = (0.1, 5, 10), {"benchpress": "early"}


@dataclass(frozen=True)
class TabImputeStatus:
    """Whether TabImpute V2 can run here (``available``); else ``reason``, what is missing in words."""
    available: bool
    reason: str
    checkpoint: Path | None = None


def tabimpute_status(checkpoint: str | Path | None = None) -> TabImputeStatus:
    """Look for ``tabimpute``, torch and the weights (``checkpoint``, else ``$BENCHSEL_TABIMPUTE_CKPT`` or the
    Hugging Face hub cache), without importing or downloading anything. O(1) file-system look-ups."""
    from ...method.tabimpute import MissingWeightsError, find_tabimpute_checkpoint
    missing = [name for name in ("tabimpute", "torch") if importlib.util.find_spec(name) is None]
    try:
        path: Path | None = find_tabimpute_checkpoint(checkpoint)
    except MissingWeightsError:
        path = None
    what = missing + (["its weights (tabimputev2.ckpt)"] if path is None else [])
    return TabImputeStatus(not what, f"TabImpute not run: {and_join(what)} not available here" if what else "", path)


def imputer_factories(status: TabImputeStatus, *, seed: int) -> dict[str, Callable[[], Any]]:
    """Label -> a function returning a fresh predictor (None: the Gaussian mean); TabImpute only when available."""
    from ...method.completion import BenchPressBlend, KNNImputer, SoftImpute
    out: dict[str, Callable[[], Any]] = {"Gaussian": lambda: None, "SoftImpute": SoftImpute, "KNN": KNNImputer,
                                         "BenchPressBlend": BenchPressBlend}
    if status.available:
        from ...method.tabimpute import TabImputeV2Imputer
        out["TabImpute"] = lambda: TabImputeV2Imputer(checkpoint_path=status.checkpoint, seed=seed)
    return out


def summarize(keys: Sequence[tuple[str, str]], frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """``summarize_cv`` of each (matrix, imputer) run, with columns ``matrix``, ``dataset`` and ``imputer``."""
    from ...protocol.summaries import summarize_cv
    return pd.concat([summarize_cv(df).assign(matrix=n, dataset=label(n), imputer=i)
                      for (n, i), df in zip(keys, frames, strict=True)], ignore_index=True)


def at(summary: pd.DataFrame, matrix: str, pipeline: str, imputer: str, k: int) -> float:
    """Mean R² of one (matrix, pipeline, imputer) at ``k``; NaN when not scored. O(rows)."""
    s = summary[(summary["matrix"] == matrix) & (summary["pipeline"] == pipeline) & (summary["imputer"] == imputer)
                & (summary["k"] == k)]
    return float(s["r2_mean"].iloc[0]) if len(s) else float("nan")


def key(matrix: str, pipeline: str, *, config: str, **run: Any) -> str:
    """The quantity key of a Gaussian R² (shared with chapters 4, 5 and 8); ``run``: k, holdout, folds, seed, scheme."""
    extra = {"config": config} if config != "released" or matrix in PAPER_CONFIG else {}
    return quantity(f"{matrix}-{pipeline}-r2", **run, **extra)


def imputer_table(summary: pd.DataFrame, *, datasets: Sequence[str], pipelines: Sequence[str],
                  imputers: Sequence[str], k: int, paper: bool) -> pd.DataFrame:
    """R² at ``k`` of every imputer, one row per (matrix, objective); with ``paper``, Table 4's two columns first."""
    return pd.DataFrame([{"Matrix": label(n), "Objective": METHOD_NAMES[m]}
                         | ({"Gaussian (paper)": PAPER_GAUSS[n][METHODS.index(m)],
                             "TabImpute (paper)": PAPER_TABIMPUTE[n][METHODS.index(m)]} if paper else {})
                         | {IMPUTER_NAMES[imp]: at(summary, n, m, imp, k) for imp in imputers}
                         for n in datasets for m in pipelines])


def _gauss_claim(summary: pd.DataFrame, n: str, m: str, *, run: dict[str, Any], cfg: str, datasets: Sequence[str],
                 pipelines: Sequence[str], ok: bool, off: str) -> Claim:
    """One Gaussian row of Table 4 (matrix ``n``, objective ``m``); ``not run`` with ``off`` unless ``ok``."""
    c, paper = f"Gaussian R², {label(n)}, {METHOD_NAMES[m]}", PAPER_GAUSS[n][METHODS.index(m)]
    qk, v = key(n, m, config=cfg, **run), at(summary, n, m, "Gaussian", run["k"])
    why = (off if not ok else f"{label(n)} was not in this run" if n not in datasets else
           f"{METHOD_NAMES[m]} was not in this run" if m not in pipelines else
           f"EM configuration {cfg}, not the paper's" if cfg != PAPER_CONFIG.get(n, "released") else "")
    if why or not np.isfinite(v):
        return not_run(c, "Table 4", f"{paper:.2f}", why or "not scored", section="table-4", key=qk)
    return Claim(c, "Table 4", f"{paper:.2f}", num(v), vd := verdict(v, paper, kind="r2"), "within 0.03 of the paper"
                 if vd == "reproduced" else "this MMLU has 234 of the paper's 5,452 models" if n == "mmlu" else
                 "entropy's tied first pick (ch. 5)" if m == "entropy" else "fold noise", "table-4", qk)


def claims(summary: pd.DataFrame, *, datasets: Sequence[str], pipelines: Sequence[str], status: TabImputeStatus,
           run: dict[str, Any], em_configs: dict[str, str]) -> list[Claim]:
    """Table 4's Gaussian values, one row per (matrix, objective), and the paper's claims on TabImpute.

    Parameters
    ----------
    summary : DataFrame
        :func:`summarize` of every (matrix, imputer) run.
    datasets, pipelines : list of str
    status : TabImputeStatus
        Whether TabImpute ran (its rows are ``not run``, with the reason, otherwise).
    run : dict
        ``k, holdout, folds, seed, scheme`` of the table; ``em_configs``: matrix -> EM configuration.
    """
    ok = np.isclose(run["holdout"], PAPER_AT[0]) and (run["k"], run["folds"]) == PAPER_AT[1:]
    off = f"Table 4 is at k = 5, 10% holdout, 10 folds; this run: k = {run['k']}, {pct(run['holdout'])}, {run['folds']} folds"
    rows = [_gauss_claim(summary, n, m, run=run, cfg=em_configs.get(n, "released"), datasets=datasets,
                         pipelines=pipelines, ok=ok, off=off) for n, m in product(PAPER_GAUSS, METHODS)]
    tab = [("Gaussian above TabImpute", "Table 4, Fig. 15", "11 of 12 pairs"),
           ("TabImpute V2 R² at k = 5", "Table 4", "0.03 to 0.61"),
           ("TabImpute near zero on Merged", "Fig. 15", "0.03 to 0.05"),
           ("Under TabImpute, MI far ahead of entropy on MMLU", "App. J", "0.61 against 0.37")]
    if not (status.available and ok and summary["imputer"].eq("TabImpute").any()):
        return rows + [not_run(*t, status.reason or off, section="tabimpute") for t in tab]
    tv = {(n, m): v for n in datasets for m in pipelines if np.isfinite(v := at(summary, n, m, "TabImpute", run["k"]))}
    above = sum(at(summary, *p, "Gaussian", run["k"]) > v for p, v in tv.items())
    gap = max(abs(v - PAPER_TABIMPUTE[p[0]][METHODS.index(p[1])]) for p, v in tv.items())
    merged = max([v for (n, _), v in tv.items() if n == "merged"], default=np.nan)
    d = tv.get(("mmlu", "mi"), np.nan) - tv.get(("mmlu", "entropy"), np.nan)
    spec = [(above / len(tv), 11 / 12, "share", "at least", lambda: f"{above} of {len(tv)} pairs"),
            (gap, 0.0, "r2", "both", lambda: f"largest gap to the paper {num(gap)}"),
            (merged, 0.05, "r2", "at most", lambda: f"at most {num(merged)}"),
            (d, 0.24, "r2", "at least", lambda: f"MI − entropy {num(d)}")]
    return rows + [Claim(*t, text(), verdict(v, p, kind=kd, direction=dr), "this run's TabImpute V2", "tabimpute")
                   if np.isfinite(v) else not_run(*t, "not scored in this run", section="tabimpute")
                   for t, (v, p, kd, dr, text) in zip(tab, spec)]
