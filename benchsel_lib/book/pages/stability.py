"""Chapter 6: selection order and stability (Appendix F, Figs. 9-11): the paper's claims and the chapter's tables."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

import numpy as np
import pandas as pd

from ..claims import Claim, not_run, quantity, verdict
from ..prose import label, num

__all__ = ["PAPER_MMLU_MODELS", "claims", "first_step_gains", "fold_order", "hub_table"]

#: Models in the paper's MMLU matrix (Table 1), the first picks its figures count, and its figure of each matrix.
PAPER_MMLU_MODELS, PAPER_TOP, FIGURES = 5452, 15, {"mmlu": 9, "mteb": 10, "merged": 11}


def _at(position: int, bench: str, pos: pd.DataFrame, st: pd.DataFrame, n_folds: int) -> tuple[float, str, str]:
    """Share of folds in which ``bench`` is picked at ``position``; why: the others picked there."""
    c = pos.loc[pos["position"] == position, "benchmark"].value_counts()
    n, rest = int(c.get(bench, 0)), c.drop(bench, errors="ignore")
    return n / n_folds, f"{n} of {n_folds} folds", ("no other pick there" if rest.empty else
                                                    "also: " + ", ".join(f"{b} ({k})" for b, k in rest[:2].items()))


def _in_top(bench: str, pos: pd.DataFrame, st: pd.DataFrame, n_folds: int, *, mean: bool = False) -> tuple[float, str, str]:
    """Share of folds in which ``bench`` is among the first picks counted (or its mean position, ``mean``)."""
    n = int(st["folds_in_top"].get(bench, 0))
    at = num(st.at[bench, "mean_position"], ".1f") if n else "never"
    if mean:
        return float(st.at[bench, "mean_position"]) if n else np.inf, at, f"among them in {n} of {n_folds} folds"
    return n / n_folds, f"{n} of {n_folds} folds", f"mean position {at}"


def _always(first: int, pos: pd.DataFrame, st: pd.DataFrame, n_folds: int) -> tuple[float, str, str]:
    """How many benchmarks are among the first ``first`` picks of every fold; why: which."""
    folds = pos[pos["position"] <= first].groupby("benchmark")["fold"].nunique()
    names = folds.index[folds == n_folds].tolist()
    return len(names), f"{len(names)} of {first}", f"in every fold: {', '.join(names[:3]) or 'none'}{' ...' * (len(names) > 3)}"


#: (matrix, method, claim, paper's text, paper's value, kind of quantity, statistic, picks per fold it reads).
ROWS = (("mmlu", "entropy", "MMLU entropy: top-15 picks in every fold", "13 of 15", 13, "count", partial(_always, 15), 15),
        ("mmlu", "mi", "MMLU MI: miscellaneous first", "10 of 10 folds", 1.0, "share", partial(_at, 1, "miscellaneous"), 1),
        ("mmlu", "mi", "MMLU MI: first 9 picks the same in every fold", "9 of 9", 9, "count", partial(_always, 9), 9),
        ("mteb", "entropy", "MTEB entropy: SummEval second", "10 of 10 folds", 1.0, "share", partial(_at, 2, "SummEval"), 2),
        ("mteb", "mi", "MTEB MI: MassiveIntentClassification in the top 15", "10 of 10 folds", 1.0, "share",
         partial(_in_top, "MassiveIntentClassification"), 15),
        ("mteb", "mi", "MTEB MI: MassiveIntentClassification's mean position", "2.9", 2.9, "position",
         partial(_in_top, "MassiveIntentClassification", mean=True), 15),
        ("merged", "entropy", "Merged entropy: open_llm/MUSR in the top 15", "10 of 10 folds", 1.0, "share",
         partial(_in_top, "open_llm/MUSR"), 15),
        ("merged", "entropy", "Merged entropy: only MUSR in the top 15 of every fold", "1", 1, "count",
         partial(_always, 15), 15),
        ("merged", "mi", "Merged MI: arena_hard/score first", "10 of 10 folds", 1.0, "share",
         partial(_at, 1, "arena_hard/score"), 1),
        ("merged", "mi", "Merged MI: helm/NarrativeQA in the top 15", "8 of 10 folds", 0.8, "share",
         partial(_in_top, "helm/NarrativeQA"), 15))


def hub_table(matrices: Mapping[str, object], positions: Mapping[tuple[str, str], pd.DataFrame], *,
              first: int = 5) -> pd.DataFrame:
    """Mean squared correlation with the other benchmarks of each method's first ``first`` picks, and of all.

    Measures Figs. 9-10's "outlier" (entropy) and "hub" (MI) picks: rows ``matrix, entropy, MI, all``. O(M N²).
    """
    rows = []
    for name, m in matrices.items():
        r = pd.DataFrame(np.asarray(m.scores, dtype=float), columns=list(m.benchmarks)).corr(min_periods=5) ** 2
        central = r.mask(np.eye(len(r), dtype=bool)).mean(axis=1)
        early = {col: (p := positions[name, meth]).loc[p["position"] <= first, "benchmark"]
                 for meth, col in (("entropy", "entropy"), ("mi", "MI")) if (name, meth) in positions}
        rows.append({"matrix": label(name), "all": central.mean(), **{c: central.reindex(b).mean() for c, b in early.items()}})
    return pd.DataFrame(rows, columns=["matrix", "entropy", "MI", "all"])


def fold_order(positions: Mapping[str, pd.DataFrame], stability: Mapping[str, pd.DataFrame], fold: int) -> pd.DataFrame:
    """One fold's greedy order for each method (by method name), with the folds in which each pick is counted."""
    out = {}
    for meth, pos in positions.items():
        out[meth] = p = pos[pos["fold"] == fold].sort_values("position").set_index("position")["benchmark"]
        out[f"{meth}: folds in top"] = p.map(stability[meth]["folds_in_top"]).astype("Int64")
    return pd.DataFrame(out).rename_axis("position").reset_index()


def first_step_gains(scores: np.ndarray, names: Sequence[str], splits: Sequence[tuple[int, np.ndarray, np.ndarray]], *,
                     n_candidates: int = 3) -> pd.DataFrame:
    """MI's first-step gain ½ log (R⁻¹)ⱼⱼ (Algorithm 2) of the leading benchmarks of complete ``scores``: ``whole
    matrix``, ``lowest`` and ``highest`` over the training ``splits`` (``cv_splits``), ``first in folds``. O(S(MN² + N³)).
    """
    X, gain = np.asarray(scores, dtype=float), lambda R: 0.5 * np.log(np.diag(np.linalg.inv(np.corrcoef(R, rowvar=False))))
    whole, per_split = gain(X), np.array([gain(X[tr]) for _, tr, _ in splits])
    leaders = np.argmax(per_split, axis=1)
    listed = sorted(set(np.argsort(-whole)[:n_candidates]) | set(leaders), key=lambda j: -whole[j])
    return pd.DataFrame({"benchmark": [names[j] for j in listed], "whole matrix": whole[listed],
                         "lowest": per_split[:, listed].min(axis=0), "highest": per_split[:, listed].max(axis=0),
                         "first in folds": [int((leaders == j).sum()) for j in listed]})


def claims(*, positions: Mapping[tuple[str, str], pd.DataFrame], stability: Mapping[tuple[str, str], pd.DataFrame],
           hubs: pd.DataFrame, n_folds: int, top: int, n_models: Mapping[str, int], settings: Mapping[str, object]) -> list[Claim]:
    """The claims of Figures 9-11 and Appendix F checked on this run's selections (one verdict rule: :func:`verdict`).

    Parameters
    ----------
    positions, stability, hubs :
        ``(matrix, method)`` -> ``positions_from_cv`` / ``selection_summary``; :func:`hub_table`.
    n_folds, top, n_models, settings :
        Folds, first picks counted, models per matrix, protocol (holdout, folds, seed, scheme, tie_break: in the keys).

    Returns
    -------
    list of Claim
        A matrix not run, or fewer picks than a claim reads, gives a ``not run`` row saying so.
    """
    rows, t = [], hubs.set_index("matrix")
    for name, meth, claim, paper, value, kind, stat, picks in ROWS:
        where, key, sec = f"Fig. {FIGURES[name]}{'a' if meth == 'entropy' else 'b'}", quantity(claim, **settings), name
        k_max = int(positions[name, meth]["position"].max()) if (name, meth) in positions else 0
        missing = (f"{label(name)} was not in this run" if not k_max else
                   f"this run counts the first {top} picks, not 15" if picks == PAPER_TOP and top != PAPER_TOP else
                   f"this run makes {k_max} picks per fold" if k_max < picks else "")
        if missing:
            rows.append(not_run(claim, where, paper, missing, section=sec, key=key))
            continue
        got, run, why = stat(positions[name, meth], stability[name, meth], n_folds)
        v = verdict(got, value, kind=kind, direction="at least" if "every fold" in claim and "only" not in claim else "both")
        why += f"; {n_models['mmlu']:,} of the paper's {PAPER_MMLU_MODELS:,} models" if name == "mmlu" and v != "reproduced" else ""
        rows.append(Claim(claim, where, paper, run, v, why, sec, key))
    for name, where in (("mmlu", "Fig. 9"), ("mteb", "Fig. 10")):
        claim, m, sec = f"{label(name)}: entropy picks outliers, MI hubs", label(name), "outliers-and-hubs"
        if m not in t.index or t.loc[m, ["entropy", "MI"]].isna().any():
            rows.append(not_run(claim, where, "both", f"{m} was not in this run", section=sec))
            continue
        e, mi, avg = t.loc[m, ["entropy", "MI", "all"]].astype(float)
        rows.append(Claim(claim, where, "both", f"mean r²: entropy {num(e)}, MI {num(mi)}, all {num(avg)}",
                          verdict(((e < avg) + (mi > avg)) / 2, 1.0, kind="share"),
                          f"entropy {'below' if e < avg else 'above'} all, MI {'above' if mi > avg else 'below'}", sec))
    return rows
