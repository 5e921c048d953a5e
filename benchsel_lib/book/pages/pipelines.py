"""Chapter 12: which selection, which predictor? The recommended pipeline against published methods.

The page compares :meth:`~benchsel_lib.method.pipeline.Pipeline.auto` (the
recommended pipeline, ``"auto"``) with the paper's Gaussian + MI and with
re-implementations of published methods
(:data:`~benchsel_lib.studies.pipelines.PEERS`) on the paper's folds, under
two scorings: the protocol's R² (Section 5.1: each method on the held-out
entries its own selection leaves) and the R² on the same entries (both
methods on the entries both score). Its prose is in the notebook; this
module holds its tables, the explorer's panel (:func:`r2_panel`) and the
counts its checks read (:func:`tally`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["AUTO", "PAPER", "choice_table", "comparison_table", "every_model_table", "favourite", "gain_table",
           "grid_table", "not_drawn", "r2_at", "r2_panel", "tally"]

#: The recommended pipeline's row label in the tables.
AUTO = "recommended (auto)"
#: The paper's pipeline's row label in the tables.
PAPER = "Gaussian + MI (the paper)"


def _pm(d: float, se: float) -> str:
    """``"+0.083 ± 0.017"``; without a finite standard error the difference alone; ``"—"`` without one."""
    if not np.isfinite(d):
        return "—"
    text = f"{d:+.3f}"
    if float(text) == 0:  # no sign on a difference that rounds to zero
        text = text[1:]
    return text + (f" ± {se:.3f}" if np.isfinite(se) else "")


def _shown(pipeline: str) -> str:
    """A pipeline's row label in the tables."""
    return AUTO if pipeline == "auto" else PAPER if pipeline == "mi" else pipeline


def tally(df: pd.DataFrame, *, n_se: float = 2.0) -> dict[str, Any]:
    """Count paired differences ``auto - peer`` (columns ``diff, diff_se``; NaN: no entry both scored).

    Parameters
    ----------
    df : DataFrame
        Rows of :func:`~benchsel_lib.studies.pipelines.peer_differences` or
        :func:`~benchsel_lib.studies.pipelines.shared_differences`.
    n_se : float
        A difference is clear when it exceeds this many standard errors.

    Returns
    -------
    dict
        ``n`` (rows with a difference), ``at_or_above``, ``better``,
        ``worse`` (counts) and ``worse_rows`` (the rows clearly below).
    """
    known = df.dropna(subset=["diff"])
    d, se = known["diff"].to_numpy(float), known["diff_se"].to_numpy(float)
    clear = np.isfinite(se) & (np.abs(d) > n_se * se)
    return {"n": len(known), "at_or_above": int((d >= 0).sum()), "better": int(((d > 0) & clear).sum()),
            "worse": int(((d < 0) & clear).sum()), "worse_rows": known[(d < 0) & clear]}


def comparison_table(peers: pd.DataFrame, *, shared: pd.DataFrame | None = None) -> pd.DataFrame:
    """One matrix's comparison: per ``k``, the recommended pipeline's row, then each peer's.

    Parameters
    ----------
    peers : DataFrame
        :func:`~benchsel_lib.studies.pipelines.peer_differences` rows of one matrix.
    shared : DataFrame, optional
        :func:`~benchsel_lib.studies.pipelines.shared_differences` rows of the same run.

    Returns
    -------
    DataFrame
        ``k, pipeline, R², auto − pipeline`` (the protocol's R², mean ± standard
        error over the folds) and, with ``shared``, ``auto − pipeline, same
        entries`` and ``same entries`` (held-out entries both score, summed
        over the folds). The recommended pipeline's row has no difference.
    """
    rows = []
    same = shared.set_index(["k", "peer"]) if shared is not None else None
    for k, g in peers.groupby("k", sort=False):
        head = {"k": int(k), "pipeline": AUTO, "R²": float(g["reference_r2"].iloc[0]), "auto − pipeline": np.nan}
        if same is not None:
            head.update({"auto − pipeline, same entries": np.nan, "same entries": np.nan})
        rows.append(head)
        for r in g.itertuples(index=False):
            row = {"k": int(k), "pipeline": _shown(r.peer), "R²": float(r.peer_r2),
                   "auto − pipeline": _pm(r.diff, r.diff_se)}
            if same is not None:
                s = same.loc[(k, r.peer)] if (k, r.peer) in same.index else None
                row["auto − pipeline, same entries"] = (_pm(s["diff"], s["diff_se"]) if s is not None
                                                      and np.isfinite(s["diff"]) else "none shared")
                row["same entries"] = int(s["n_shared"]) if s is not None else 0
            rows.append(row)
    out = pd.DataFrame(rows)
    if "same entries" in out.columns:
        out["same entries"] = out["same entries"].astype("Int64")
    return out


def every_model_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One matrix's :func:`~benchsel_lib.studies.pipelines.every_model_r2` rows: ``k, pipeline``, both R², reach."""
    return pd.DataFrame({
        "k": rows["k"].astype(int).to_numpy(), "pipeline": [_shown(m) for m in rows["pipeline"]],
        "R², protocol": rows["r2"].to_numpy(float), "R², every held-out model": rows["r2_all"].to_numpy(float),
        "reach": [f"{100 * r:.0f}%" if np.isfinite(r) else "—" for r in rows["reach"].to_numpy(float)]})


def choice_table(runs: Mapping[str, pd.DataFrame], *, ks: Sequence[int], top: int = 3) -> pd.DataFrame:
    """Per matrix and ``k``: the recommended pipeline's ``top`` most frequent choices over the folds.

    Returns ``matrix, k, choice, folds`` (the (seed, fold) cells that chose it) and ``of`` (cells at that size).
    """
    from ...studies.pipelines import choice_counts

    rows = []
    for name, df in runs.items():
        for k, counts in choice_counts(df, ks=ks, top=top).items():
            total = int(((df["pipeline"] == "auto") & (df["k"] == k)).sum())
            rows += [{"matrix": name, "k": int(k), "choice": c, "folds": int(n), "of": total}
                     for c, n in counts.items()]
    return pd.DataFrame(rows, columns=["matrix", "k", "choice", "folds", "of"])


def favourite(choices: pd.DataFrame) -> dict[str, tuple[str, int, int]]:
    """Per matrix of :func:`choice_table`: its most frequent choice over the sizes shown, its count, the cells."""
    out = {}
    for name, g in choices.groupby("matrix", sort=False):
        best = g.groupby("choice", sort=False)["folds"].sum().sort_values(ascending=False, kind="stable")
        out[name] = (str(best.index[0]), int(best.iloc[0]), int(g.drop_duplicates("k")["of"].sum()))
    return out


def gain_table(gains: pd.DataFrame) -> pd.DataFrame:
    """The gain from the smallest to the largest ``k`` (``k_gain`` rows with ``matrix``), under both scorings."""
    return pd.DataFrame({
        "matrix": gains["matrix"], "k": [f"{int(a)} → {int(b)}" for a, b in zip(gains["k0"], gains["k1"])],
        "R², fewer": gains["r2_k0"], "R², more": gains["r2_k1"],
        "gain": [_pm(d, s) for d, s in zip(gains["gain"], gains["gain_se"])],
        "gain, same entries": [_pm(d, s) for d, s in zip(gains["gain_common"], gains["gain_common_se"])]})


def grid_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The recommended pipeline against the paper's pair and the best fixed pair (``paired_summary`` rows)."""
    return pd.DataFrame({
        "matrix": summary["matrix"], "k": summary["k"].astype(int), "auto": summary["reference"],
        "Gaussian + MI": summary["baseline"], "best fixed pair": summary["best_fixed"],
        "its R²": summary["best_fixed_r2"],
        "auto − best": [_pm(d, s) for d, s in zip(summary["diff"], summary["diff_se"])]})


def r2_at(df: pd.DataFrame, k: int) -> pd.DataFrame:
    """Every pipeline's protocol R² at ``k``: mean and standard error over the folds, best first.

    ``df`` holds :func:`~benchsel_lib.studies.pipelines.compare_pipelines` rows; returns ``pipeline, R², se``.
    """
    g = df[df["k"] == k].groupby("pipeline")["r2"]
    out = pd.DataFrame({"R²": g.mean(), "se": g.std(ddof=1) / np.sqrt(g.count())}).sort_values("R²", ascending=False)
    return out.rename_axis("pipeline").reset_index().assign(pipeline=lambda d: d["pipeline"].map(_shown))


def r2_panel(df: pd.DataFrame, k: int, *, title: str) -> Figure:
    """A bar per pipeline: its mean protocol R² at ``k`` ± one standard error (the explorer's panel)."""
    t = r2_at(df, k).iloc[::-1]
    fig = Figure(figsize=(5.6, 0.32 * len(t) + 1.0), layout="constrained")
    ax = fig.add_subplot()
    colours = ["black" if m == AUTO else "tab:red" if m == PAPER else "tab:blue" for m in t["pipeline"]]
    ax.barh(t["pipeline"], t["R²"], xerr=t["se"].fillna(0), color=colours, alpha=0.8)
    lo = min(0.0, float(t["R²"].min()))
    ax.set_xlim(lo - 0.05 * (1 - lo), 1.0)
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.set_xlabel("mean $R^2$ (protocol) ± 1 s.e. over folds")
    ax.set_title(f"{title}, k = {k}", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    return fig


def not_drawn(fig: Any, runs: Mapping[str, pd.DataFrame]) -> dict[str, list[str]]:
    """Per panel of the R²-against-k figure (titled by the keys of ``runs``): the run's pipelines it does not draw."""
    out = {}
    for ax in fig.axes:
        if ax.get_title() in runs:
            drawn = {ln.get_label() for ln in ax.get_lines()}
            out[ax.get_title()] = [m for m in dict.fromkeys(runs[ax.get_title()]["pipeline"]) if m not in drawn]
    return out
