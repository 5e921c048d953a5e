"""Chapter 12: which selection, which predictor? The recommended pipeline against published methods.

The page compares :meth:`~benchsel_lib.method.pipeline.Pipeline.auto` (the
recommended pipeline, ``"auto"``) with the paper's Gaussian + MI and with
re-implementations of published methods
(:data:`~benchsel_lib.studies.pipelines.PEERS`), on the paper's folds. Every
comparison is given under two scorings, said once on the page and named in
every statement:

* **the protocol's R²** (Section 5.1): each method scored on the held-out
  entries its own selection leaves (the observed scores of the benchmarks it
  did not reveal, of the held-out models that observe one it revealed), the
  number of :func:`~benchsel_lib.studies.pipelines.peer_differences` and of
  the appendix page on the recommended pipeline;
* **R² on the same entries**: both methods scored on the held-out entries
  that both score (:func:`~benchsel_lib.studies.pipelines.shared_differences`),
  a comparison of the predictions alone.

The tables and sentences are written here from the run's results; the
notebook only calls them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..notebook import and_join
from ..prose import PageProse, cap, code, count, labels, num, paragraph, pct, signed

__all__ = [
    "AUTO",
    "SCORINGS",
    "answer",
    "aside_passage",
    "block_passage",
    "block_table",
    "choice_passage",
    "choice_table",
    "clipped_lines",
    "comparison_table",
    "coverage_passage",
    "curve_caption",
    "curve_means",
    "every_model_passage",
    "every_model_table",
    "gain_passage",
    "gain_table",
    "grid_passage",
    "grid_table",
    "optimism_passage",
    "peers_passage",
    "prose",
    "scope",
    "tally",
]

#: The recommended pipeline's row label in the tables.
AUTO = "recommended (auto)"
#: The two scorings of a comparison, as the text names them.
SCORINGS = {"protocol": "in the protocol's R²", "shared": "on the same entries"}
#: The paper's pipeline as the text names it.
PAPER = "the paper's Gaussian + MI"


def _pm(d: float, se: float) -> str:
    """``"+0.083 ± 0.017"``; without a finite standard error, the difference alone; ``"—"`` without one."""
    if not np.isfinite(d):
        return "—"
    text = signed(d, ".3f")
    if float(text) == 0:  # no sign on a difference that rounds to zero
        text = text[1:]
    return text + (f" ± {num(se, '.3f')}" if np.isfinite(se) else "")


def _name(method: str) -> str:
    """A method as the text names it: the paper's pipeline in words, the others in code."""
    return PAPER if method == "mi" else code(method)


def tally(df: pd.DataFrame, *, n_se: float = 2.0) -> dict[str, Any]:
    """Count a table of paired differences ``reference - peer`` (columns ``diff, diff_se``).

    Parameters
    ----------
    df : DataFrame
        Rows of :func:`~benchsel_lib.studies.pipelines.peer_differences` or
        :func:`~benchsel_lib.studies.pipelines.shared_differences` (a row
        whose difference is NaN had no entry both scored).
    n_se : float
        A difference is clear when it exceeds this many standard errors.

    Returns
    -------
    dict
        ``n`` (rows with a difference), ``none`` (rows without),
        ``at_or_above``, ``better``, ``worse`` (counts) and ``worse_rows``
        (the rows clearly below, a DataFrame).

    Notes
    -----
    O(rows).
    """
    known = df.dropna(subset=["diff"])
    d, se = known["diff"].to_numpy(float), known["diff_se"].to_numpy(float)
    clear = np.isfinite(se) & (np.abs(d) > n_se * se)
    return {"n": len(known), "none": len(df) - len(known), "at_or_above": int((d >= 0).sum()),
            "better": int(((d > 0) & clear).sum()), "worse": int(((d < 0) & clear).sum()),
            "worse_rows": known[(d < 0) & clear]}


def comparison_table(peers: pd.DataFrame, *, shared: pd.DataFrame | None = None) -> pd.DataFrame:
    """One matrix's comparison as the page shows it: per ``k``, the recommended pipeline's row, then each peer's.

    Parameters
    ----------
    peers : DataFrame
        :func:`~benchsel_lib.studies.pipelines.peer_differences` rows of one matrix.
    shared : DataFrame, optional
        :func:`~benchsel_lib.studies.pipelines.shared_differences` rows of the same run.

    Returns
    -------
    DataFrame
        ``k, method, R², auto − method`` (the protocol's R², mean ± standard
        error over the folds) and, with ``shared``, ``auto − method, same
        entries`` and ``same entries`` (held-out entries both score, summed
        over the folds). The recommended pipeline's row has no difference (NaN).
    """
    rows = []
    same = shared.set_index(["k", "peer"]) if shared is not None else None
    for k, g in peers.groupby("k", sort=False):
        head = {"k": int(k), "method": AUTO, "R²": float(g["reference_r2"].iloc[0]), "auto − method": np.nan}
        if same is not None:
            head.update({"auto − method, same entries": np.nan, "same entries": np.nan})
        rows.append(head)
        for r in g.itertuples(index=False):
            row = {"k": int(k), "method": "Gaussian + MI (the paper)" if r.peer == "mi" else r.peer,
                   "R²": float(r.peer_r2), "auto − method": _pm(r.diff, r.diff_se)}
            if same is not None:
                s = same.loc[(k, r.peer)] if (k, r.peer) in same.index else None
                row["auto − method, same entries"] = (_pm(s["diff"], s["diff_se"]) if s is not None
                                                      and np.isfinite(s["diff"]) else "none shared")
                row["same entries"] = int(s["n_shared"]) if s is not None else 0
            rows.append(row)
    out = pd.DataFrame(rows)
    if "same entries" in out.columns:
        out["same entries"] = out["same entries"].astype("Int64")
    return out


def _shown(method: str) -> str:
    """A method's row label in the tables."""
    return AUTO if method == "auto" else "Gaussian + MI (the paper)" if method == "mi" else method


def every_model_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One matrix's R² over every held-out model beside the protocol's, as the page shows it.

    Parameters
    ----------
    rows : DataFrame
        :func:`~benchsel_lib.studies.pipelines.every_model_r2` rows of one matrix.

    Returns
    -------
    DataFrame
        ``k, method, R², protocol, R², every held-out model`` (means over the
        folds) and ``reach`` (the mean share of held-out models that ran at
        least one revealed benchmark, in percent).

    Notes
    -----
    O(rows).
    """
    return pd.DataFrame({
        "k": rows["k"].astype(int).to_numpy(), "method": [_shown(m) for m in rows["method"]],
        "R², protocol": rows["r2"].to_numpy(float), "R², every held-out model": rows["r2_all"].to_numpy(float),
        "reach": [f"{100 * r:.0f}%" if np.isfinite(r) else "—" for r in rows["reach"].to_numpy(float)]})


def _leaders(every: pd.DataFrame, column: str) -> pd.Series:
    """Per (matrix, k) of ``every``: the method with the highest ``column`` (first in row order on a tie)."""
    known = every.dropna(subset=[column])
    return known.loc[known.groupby(["matrix", "k"], sort=False)[column].idxmax()].set_index(["matrix", "k"])["method"]


def every_model_passage(every: pd.DataFrame) -> str:
    """What the R² over every held-out model and the reach add to the protocol's R², as Markdown.

    Parameters
    ----------
    every : DataFrame
        :func:`~benchsel_lib.studies.pipelines.every_model_r2` rows of every
        matrix, with a ``matrix`` column (display name).

    Returns
    -------
    str
        One paragraph: the recommended pipeline's lowest reach and its two R²
        there, and in how many (matrix, k) cells it leads under each scoring,
        naming the cells where the leader changes.

    Notes
    -----
    O(rows).
    """
    if every is None or not len(every):
        return ""
    text = ["The protocol's R² scores only the held-out models that ran at least one revealed benchmark; the reach "
            "is their share, and the R² over every held-out model scores the others as well, each predicted by the "
            "training mean (the protocol's rule `unconditioned=\"mean\"`, applied to the same fits)."]
    auto = every[(every["method"] == "auto") & every["reach"].notna()]
    if len(auto):
        low = auto.loc[auto["reach"].idxmin()]
        if low["reach"] < 1 and np.isfinite(low["r2"]) and np.isfinite(low["r2_all"]):
            text.append(f"The recommended pipeline's lowest reach is {pct(low['reach'])}, on {low['matrix']} at "
                        f"*k* = {int(low['k'])}: its R² is {num(low['r2'], '.3f')} in the protocol's scoring and "
                        f"{num(low['r2_all'], '.3f')} over every held-out model.")
        else:
            text.append("The recommended pipeline reaches every held-out model on every matrix and *k* of this run, "
                        "so its two R² are the same.")
    first, every_first = _leaders(every, "r2"), _leaders(every, "r2_all")
    cells = first.index.intersection(every_first.index)
    if len(cells):
        n_auto = int(sum(first[c] == "auto" for c in cells))
        n_all = int(sum(every_first[c] == "auto" for c in cells))
        text.append(f"It has the highest R² in {n_auto} of {count(len(cells), '(matrix, k) cell')} in the protocol's "
                    f"scoring and in {n_all} over every held-out model.")
        changed = [c for c in cells if first[c] != every_first[c]]
        if changed:
            text.append("Over every held-out model the leader changes " + and_join(
                f"on {m} at *k* = {int(k)} ({_label(every_first[(m, k)])} instead of {_label(first[(m, k)])})"
                for m, k in changed) + ".")
    return paragraph(*text)


def block_table(split: pd.DataFrame, *, block: str = "MMLU") -> pd.DataFrame:
    """A matrix's R² inside and outside a block of benchmarks, in both scorings, as the page shows it.

    Parameters
    ----------
    split : DataFrame
        :func:`~benchsel_lib.studies.pipelines.block_split` rows.
    block : str
        The block's name in the column headers.

    Returns
    -------
    DataFrame
        ``k, method``; the protocol's R² over all its entries, inside and
        outside the block, and the block's share of its ``SS_tot``; the R²
        over every held-out model, inside and outside.  Pooled over the folds.

    Notes
    -----
    O(rows).
    """
    return pd.DataFrame({
        "k": split["k"].astype(int).to_numpy(), "method": [_shown(m) for m in split["method"]],
        "protocol": split["r2"].to_numpy(float), f"protocol, inside {block}": split["r2_inside"].to_numpy(float),
        f"protocol, outside {block}": split["r2_outside"].to_numpy(float),
        f"{block} share of the protocol's SS_tot": [f"{100 * s:.0f}%" if np.isfinite(s) else "—"
                                                   for s in split["share_inside"].to_numpy(float)],
        "every model": split["r2_all"].to_numpy(float),
        f"every model, inside {block}": split["r2_all_inside"].to_numpy(float),
        f"every model, outside {block}": split["r2_all_outside"].to_numpy(float)})


def block_passage(split: pd.DataFrame | None, *, matrix: str = "Merged", block: str = "MMLU",
                  sizes: tuple[int, int, int] | None = None, own_run: bool = False) -> str:
    """What the R² inside and outside a block says about the protocol's R², as Markdown.

    Parameters
    ----------
    split : DataFrame or None
        :func:`~benchsel_lib.studies.pipelines.block_split` rows (None: not run).
    matrix, block : str
        The matrix and the block as the text names them.
    sizes : (int, int, int), optional
        The benchmarks in the block, the models of the matrix that ran one of
        them, and all its models.
    own_run : bool
        The rows come from a run of the recommended pipeline and the paper's
        pipeline alone (the matrix was not among the chapter's).

    Returns
    -------
    str
        One paragraph: what is split, the recommended pipeline's numbers at
        each ``k``, and at how many (method, k) rows the R² inside the block
        is above the R² outside it.

    Notes
    -----
    O(rows).
    """
    if split is None or not len(split):
        return f"This run does not split {matrix}'s R² by block (`-p mmlu_block False`)."
    head = (f"{sizes[0]} of {matrix}'s benchmarks are {block} subjects, which {sizes[1]} of its "
            f"{count(sizes[2], 'model')} ran." if sizes is not None else f"{matrix} holds a block of {block} subjects.")
    text = [head + " Each scored held-out entry is inside that block or outside it; pooled over the folds, the two "
            "parts add up to the whole R²."
            + (f" The rows come from a run of the recommended pipeline and {PAPER} alone on {matrix}, on the same "
               "folds." if own_run else "")]
    for r in split[split["method"] == "auto"].itertuples(index=False):
        if not (np.isfinite(r.r2) and np.isfinite(r.r2_inside) and np.isfinite(r.r2_outside)
                and np.isfinite(r.r2_all_outside)):
            continue
        text.append(f"At *k* = {int(r.k)} the recommended pipeline's R² is {num(r.r2, '.3f')} in the protocol's "
                    f"scoring (pooled over the folds): {num(r.r2_inside, '.3f')} inside the block, which holds "
                    f"{pct(r.share_inside)} of that score's total sum of squares, and {num(r.r2_outside, '.3f')} "
                    f"outside it; over every held-out model the R² outside the block is "
                    f"{num(r.r2_all_outside, '.3f')}.")
    known = split.dropna(subset=["r2_inside", "r2_outside"])
    above = int((known["r2_inside"] > known["r2_outside"]).sum())
    text.append(f"Inside the block the protocol's R² is above the R² outside it in {above} of "
                f"{count(len(known), '(method, k) row')}.")
    return paragraph(*text)


def _losses(rows: pd.DataFrame, what: str) -> str:
    """``"`mi+knn` on MMLU at k = 5 (0.951 against 0.958, -0.007 ± 0.002 ...)"`` joined, for clear losses."""
    return and_join(f"{_name(r.peer)} on {r.matrix} at *k* = {int(r.k)} ({num(r.reference_r2, '.3f')} against "
                    f"{num(r.peer_r2, '.3f')}, {_pm(r.diff, r.diff_se)}"
                    + (f", on {count(int(r.n_shared), 'shared entry', 'shared entries')}" if what == "shared" else "")
                    + ")" for r in rows.itertuples(index=False))


def _count_sentence(t: Mapping[str, Any], what: str, lead: str) -> str:
    none = (f" (in {count(t['none'], 'more comparison')} no held-out entry is scored by both)" if t["none"] else "")
    return (f"{lead} {SCORINGS[what]}, the recommended pipeline is at or above the other method in {t['at_or_above']} "
            f"of {count(t['n'], 'comparison')}, above by more than two standard errors in {t['better']} and below "
            f"by as much in {t['worse']}{none}.")


def peers_passage(peers: pd.DataFrame, *, shared: pd.DataFrame | None = None,
                  lead: str = "Over the matrices and sizes of this run,", shared_lead: str = "Scored") -> str:
    """What the comparison with the published methods says, under each scoring, as Markdown.

    Parameters
    ----------
    peers : DataFrame
        ``peer_differences`` rows of every matrix, with a ``matrix`` column (display name).
    shared : DataFrame, optional
        ``shared_differences`` rows of the same runs, with a ``matrix`` column.
    lead, shared_lead : str
        The words that open the first sentence, and the sentence on the same entries.

    Returns
    -------
    str
        One paragraph: the counts in the protocol's R² and each clear loss,
        then the same on the same entries, and, where a method wins on the
        same entries but loses in the protocol's R², why.
    """
    if peers is None or not len(peers):
        return ""
    t = tally(peers)
    text = [_count_sentence(t, "protocol", lead)]
    if t["worse"]:
        text.append(f"It is clearly below {_losses(t['worse_rows'], 'protocol')} {SCORINGS['protocol']}.")
    if shared is not None and len(shared):
        s = tally(shared)
        if not s["n"]:
            text.append(f"No held-out entry is scored by both methods in any of the {count(s['none'], 'comparison')}.")
        else:
            text.append(_count_sentence(s, "shared", shared_lead))
            if s["worse"]:
                rows = s["worse_rows"]
                text.append(f"It is clearly below {_losses(rows, 'shared')} {SCORINGS['shared']}.")
                key = ["matrix", "k", "peer"]
                ahead = rows.merge(peers[[*key, "diff"]].rename(columns={"diff": "protocol"}), on=key)
                ahead = ahead[ahead["protocol"] > 0]
                if len(ahead):
                    where = and_join(dict.fromkeys(ahead["matrix"]))
                    text.append(("In all of these" if len(ahead) == len(rows) else f"In {len(ahead)} of these")
                                + f" it is ahead {SCORINGS['protocol']}, so its lead there on {where} comes from "
                                "which benchmarks it reveals (and so takes out of the score), not from better "
                                "predictions of the others.")
    return paragraph(*text)


def choice_table(runs: Mapping[str, pd.DataFrame], *, ks: Sequence[int], top: int = 3) -> pd.DataFrame:
    """What the recommended pipeline chose: per matrix and ``k``, its ``top`` most frequent choices over the folds.

    Parameters
    ----------
    runs : mapping of str to DataFrame
        Display name to :func:`~benchsel_lib.studies.pipelines.compare_pipelines` rows.
    ks : sequence of int
        The sizes shown.
    top : int
        Choices shown per size.

    Returns
    -------
    DataFrame
        ``matrix, k, choice, folds`` (how many (seed, fold) cells chose it) and ``of`` (cells at that size).
    """
    from ...studies.pipelines import choice_counts

    rows = []
    for name, df in runs.items():
        for k, counts in choice_counts(df, ks=ks, top=top).items():
            total = int(((df["method"] == "auto") & (df["k"] == k)).sum())
            rows += [{"matrix": name, "k": int(k), "choice": c, "folds": int(n), "of": total}
                     for c, n in counts.items()]
    return pd.DataFrame(rows, columns=["matrix", "k", "choice", "folds", "of"])


def _favourite(choices: pd.DataFrame) -> dict[str, tuple[str, int, int]]:
    """Per matrix: its most frequent choice over the sizes shown, how often, and of how many cells."""
    out = {}
    for name, g in choices.groupby("matrix", sort=False):
        total = int(g.drop_duplicates("k")["of"].sum())
        best = g.groupby("choice", sort=False)["folds"].sum().sort_values(ascending=False, kind="stable")
        out[name] = (str(best.index[0]), int(best.iloc[0]), total)
    return out


def choice_passage(choices: pd.DataFrame) -> str:
    """Which selection and which predictor the recommended pipeline chose, per matrix, as a sentence."""
    if choices is None or not len(choices):
        return ""
    fav = _favourite(choices)
    return paragraph(
        "Its inner cross-validation chose " + and_join(
            f"{code(c)} in {n} of {count(total, '(fold, k) cell')} on {m}" for m, (c, n, total) in fav.items()) + ".",
        "A choice names the selection before the `+` and the predictor after it; `stack` is the non-negative "
        "combination of the predictors fitted on the inner folds.")


def optimism_passage(opt: pd.DataFrame) -> str:
    """How far the inner-CV score of the chosen pipeline overstates its held-out R² (``inner_optimism`` rows)."""
    if opt is None or not len(opt):
        return ""
    worst = opt.loc[opt["optimism"].idxmax()]
    head = ("`benchsel predict` prints the inner cross-validation R² of the pipeline it chose. That score is the best "
            "of about twenty candidates on the same inner folds, so it can overstate what the choice achieves on new "
            "models.")
    if worst["optimism"] <= 0:
        return paragraph(head, "Here it does not: on every matrix and *k* of the table the held-out R² (over "
                               "every held-out model, as the inner one is scored) is at least the inner one.")
    se = f" ± {num(worst['optimism_se'], '.3f')}" if np.isfinite(worst["optimism_se"]) else ""
    return paragraph(
        head, f"Here it does so by at most {signed(worst['optimism'], '.3f')}{se} ({worst['matrix']}, *k* = "
              f"{int(worst['k'])}: inner {num(worst['inner_r2'], '.3f')} against held-out {num(worst['r2'], '.3f')} "
              "over every held-out model, the scoring of the inner search).")


def coverage_passage(cov: pd.DataFrame) -> str:
    """The recommended pipeline's interval coverage against the nominal levels (``pooled_coverage`` rows)."""
    if cov is None or not len(cov):
        return ""
    worst = cov.loc[(cov["coverage"] - cov["nominal"]).abs().idxmax()]
    return paragraph(
        "Its intervals are split-conformal, from the residuals of the inner cross-validation (one scale per "
        "benchmark, the finite-sample quantile; Barber et al., 2021), so their coverage does not rest on a Gaussian "
        "assumption.",
        f"Pooled over the folds and every *k*, the empirical coverage is within "
        f"{num(abs(worst['coverage'] - worst['nominal']), '.3f')} of the nominal level everywhere (largest gap: "
        f"{worst['matrix']} at {num(100 * worst['nominal'], '.0f')}%, {num(worst['coverage'], '.3f')}).")


def gain_table(gains: pd.DataFrame) -> pd.DataFrame:
    """The gain from the smallest to the largest ``k`` of each matrix (``k_gain`` rows with ``matrix``), shown."""
    return pd.DataFrame({
        "matrix": gains["matrix"], "k": [f"{int(a)} → {int(b)}" for a, b in zip(gains["k0"], gains["k1"])],
        "R², fewer": gains["r2_k0"], "R², more": gains["r2_k1"],
        "gain": [_pm(d, s) for d, s in zip(gains["gain"], gains["gain_se"])],
        "gain, same entries": [_pm(d, s) for d, s in zip(gains["gain_common"], gains["gain_common_se"])]})


def gain_passage(gains: pd.DataFrame | None) -> str:
    """What more benchmarks buy the recommended pipeline, under both scorings (``k_gain`` rows with ``matrix``)."""
    if gains is None or not len(gains):
        return "This run compares a single subset size, so it measures no gain from more benchmarks."
    rows = list(gains.itertuples(index=False))
    down = [r.matrix for r in rows if r.gain < 0]
    down_same = [r.matrix for r in rows if np.isfinite(r.gain_common) and r.gain_common < 0]
    text = ["More revealed benchmarks should not make the predictions worse."]
    text.append(f"From the smallest to the largest *k* of the table the recommended pipeline's R² falls "
                f"{SCORINGS['protocol']} on {and_join(down)}" if down else
                f"From the smallest to the largest *k* of the table its R² does not fall {SCORINGS['protocol']} on "
                "any matrix")
    text[-1] += (f", and {SCORINGS['shared']} (those every size of the fold scores) it falls on {and_join(down_same)}."
                 if down_same else f", nor {SCORINGS['shared']} (those every size of the fold scores).")
    if down and not set(down) <= set(down_same):
        text.append("Where it falls only in the protocol's R², the two sizes are scored on different entries: a "
                    "larger selection takes its benchmarks out of the targets and brings in held-out models that "
                    "observe only a newly revealed benchmark.")
    return paragraph(*text)


def grid_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The recommended pipeline against the best fixed pair (``paired_summary`` rows with ``matrix``), shown."""
    return pd.DataFrame({
        "matrix": summary["matrix"], "k": summary["k"].astype(int), "auto": summary["reference"],
        "Gaussian + MI": summary["baseline"], "best fixed pair": summary["best_fixed"],
        "its R²": summary["best_fixed_r2"],
        "auto − best": [_pm(d, s) for d, s in zip(summary["diff"], summary["diff_se"])]})


def grid_passage(summary: pd.DataFrame | None, n_pairs: int) -> str:
    """The recommended pipeline against every fixed (selection, predictor) pair, in the protocol's R²."""
    if summary is None or not len(summary) or not n_pairs:
        return ("This run compares no grid of fixed (selection, predictor) pairs beyond the published methods; the "
                "full study adds the 30 pairs of six selections and five predictors.")
    d, se = summary["diff"].to_numpy(float), summary["diff_se"].to_numpy(float)
    worse = summary[(d < 0) & np.isfinite(se) & (np.abs(d) > 2 * se)]
    text = [f"{cap(SCORINGS['protocol'])}, the best fixed pipeline of each matrix and *k*, among the grid's "
            f"{count(n_pairs, 'pair')} and the published methods, is at or below the recommended pipeline in "
            f"{int((d >= 0).sum())} of {len(summary)} (matrix, *k*) rows."]
    if len(worse):
        text.append("It is clearly above it at " + and_join(
            f"{r.matrix}, *k* = {int(r.k)} ({code(r.best_fixed)} {num(r.best_fixed_r2, '.3f')} against "
            f"{num(r.reference, '.3f')})" for r in worse.itertuples(index=False)) + ".")
    text.append("A pair fixed in advance would have had to be picked without the held-out models; the recommended "
                "pipeline picks its own on the training models of each fold.")
    return paragraph(*text)


def aside_passage(peers: pd.DataFrame | None, shared: pd.DataFrame | None, coverage: pd.DataFrame | None) -> str:
    """The comparison on the leaderboards kept aside (``aside_tables`` rows), as Markdown; ``""`` when none ran."""
    if peers is None or not len(peers):
        return ""
    names = and_join(dict.fromkeys(peers["matrix"]))
    text = peers_passage(peers, shared=shared, lead=f"On {names}, against the same methods and",
                         shared_lead="There, scored")
    if coverage is not None and len(coverage):
        gap = float((coverage["coverage"] - coverage["nominal"]).abs().max())
        text += " " + f"There the intervals' coverage is within {num(gap, '.3f')} of the nominal level."
    return text


def curve_means(fig: Any, *, exclude: Sequence[str] = ("auto, same entries",)) -> dict[str, pd.DataFrame]:
    """The mean R² each line of the R²-against-k figure draws, per panel title: methods (rows) by ``k`` (columns).

    The lines' x values are rounded back to the integer ``k`` they were
    shifted from (``plot_pipeline_curves(..., separate=True)``). O(lines x k).
    """
    out = {}
    for ax in fig.axes:
        rows = {ln.get_label(): pd.Series(np.asarray(ln.get_ydata(), float),
                                          index=np.rint(np.asarray(ln.get_xdata(), float)).astype(int))
                for ln in ax.get_lines() if ln.get_label() not in exclude and not ln.get_label().startswith("_")}
        out[ax.get_title()] = pd.DataFrame(rows).T
    return out


def clipped_lines(fig: Any) -> list[tuple[str, str, float, float]]:
    """The lines of a figure drawn wholly below their panel's y range: ``(panel title, label, lowest, highest)``."""
    out = []
    for ax in fig.axes:
        bottom = ax.get_ylim()[0]
        for ln in ax.get_lines():
            y = np.asarray(ln.get_ydata(), dtype=float)
            if y.size and np.nanmax(y) < bottom:
                out.append((ax.get_title(), ln.get_label(), float(np.nanmin(y)), float(np.nanmax(y))))
    return out


def curve_caption(means: Mapping[str, pd.DataFrame], groups: Sequence[tuple[str, Sequence[str]]], *,
                  clipped: Sequence[tuple[str, str, float, float]] = (), reference: str = "auto") -> str:
    """The caption of the R²-against-k figure: what is drawn, where the recommended pipeline leads, what coincides.

    Parameters
    ----------
    means : mapping of str to DataFrame
        Per panel title, the mean R² of each drawn method (rows) at each
        ``k`` (columns), as drawn.
    groups : sequence of (str, list of str)
        :func:`~benchsel_lib.book.plotting.coinciding_lines` of the figure.
    clipped : sequence of (str, str, float, float)
        :func:`clipped_lines` of the figure.
    reference : str
        The recommended pipeline's label.

    Returns
    -------
    str
    """
    lead = []
    for title, m in means.items():
        others = m.drop(index=[reference]).max()
        n = int((m.loc[reference] >= others - 1e-12).sum())
        lead.append(f"at {n} of {count(m.shape[1], 'size')} on {title}")
    text = ["Mean R² on the held-out models (the protocol's) against the number of revealed benchmarks: the "
            "recommended pipeline (thick black), the paper's Gaussian + MI (red, dashed) and the three other methods "
            "with the highest R² at the largest *k*; the dotted black line is the recommended pipeline "
            "on the same entries at every *k*.",
            f"The recommended pipeline is at or above every other drawn method {and_join(lead)}."]
    if groups:
        text.append("Lines that lie on top of one another (within 0.005 at every *k*): " + "; ".join(
            f"{t}: " + and_join(g) for t, g in groups) + ".")
    else:
        text.append("No two lines coincide (markers are set side by side where they come close).")
    if clipped:
        text.append("Below the axis, so that the others stay readable: " + "; ".join(
            f"{_label(lab)} on {t} (R² {num(lo)} to {num(hi)})" for t, lab, lo, hi in clipped) + ".")
    return paragraph(*text)


def _label(line: str) -> str:
    """A figure's line label in the caption's words."""
    return PAPER if line == "mi" else "the recommended pipeline" if line == "auto" else code(line)


def scope(*, datasets: Sequence[str], seeds: Sequence[int], n_folds: int, ks: Sequence[int], k_max: int,
          n_peers: int, n_pairs: int, aside: Sequence[str], full: Mapping[str, Any], quick: bool,
          estimator: str = "auto") -> str:
    """What this run covers, and what the full study adds, in words.

    Parameters
    ----------
    datasets, seeds, n_folds, ks, k_max :
        The run's matrices, seeds of the paper's folds, folds, sizes of the
        tables and largest size.
    n_peers : int
        Methods compared with it (the paper's Gaussian + MI and the published methods).
    n_pairs : int
        Fixed (selection, predictor) pairs of the grid (0: none).
    aside : sequence of str
        Display names of the leaderboards kept aside that the run compared.
    full : mapping
        What the full study runs: ``{"datasets": [matrix names], "pairs":
        number of fixed pairs, "aside": [display names]}``.
    quick : bool
        Quick mode (capped parameters).
    estimator : str
        The correlation estimator of the fixed pipelines.

    Returns
    -------
    str
    """
    folds = ("the paper's folds" if list(seeds) == [42] and n_folds == 10 else
             f"the paper's fold layout drawn with seed{'s' if len(seeds) > 1 else ''} {and_join(seeds)}")
    text = [f"This run compares the recommended pipeline with {count(n_peers, 'other method')} on "
            f"{labels(datasets)}, on {folds} ({count(n_folds, 'fold')}), with 1 to {k_max} benchmarks revealed; the "
            f"tables give *k* = {and_join(ks)}."
            + (" It is a quick run with capped parameters." if quick else "")
            + (f" The fixed pipelines estimate the correlation with {code(estimator)}." if estimator != "auto" else "")]
    adds = []
    missing = [d for d in full["datasets"] if d not in datasets]
    if missing:
        adds.append(labels(missing))
    if n_pairs < int(full["pairs"]):
        adds.append(f"the grid of {int(full['pairs'])} fixed (selection, predictor) pairs")
    left = [a for a in full["aside"] if a not in aside]
    if left:
        adds.append(f"{count(len(left), 'leaderboard')} kept aside ({and_join(left)})")
    if adds:
        text.append(f"The full study (`-p full True`, several minutes on two cores) adds {and_join(adds)}.")
    else:
        text.append("It is the full study.")
    return paragraph(*text)


def answer(peers: pd.DataFrame, shared: pd.DataFrame | None, choices: pd.DataFrame, *,
           datasets: Sequence[str], ks: Sequence[int]) -> str:
    """The page's opening answer, from the comparison with the published methods and the pipeline's choices.

    Parameters
    ----------
    peers, shared : DataFrame
        ``peer_differences`` and ``shared_differences`` rows of every matrix, with a ``matrix`` column.
    choices : DataFrame
        :func:`choice_table` rows.
    datasets, ks : sequence
        The run's matrices and table sizes.

    Returns
    -------
    str
    """
    t = tally(peers)
    methods = list(dict.fromkeys(peers["peer"]))
    who = ("the paper's Gaussian + MI and " if "mi" in methods else "") + (
        f"{count(len(methods) - ('mi' in methods), 're-implemented published method')}")
    where = f"On {labels(datasets)} with {and_join(ks)} benchmarks revealed"
    if t["worse"] == 0 and t["at_or_above"] == t["n"] and t["better"] > 0:
        head = "Use the recommended pipeline."
    elif t["worse"] == 0:
        head = "The recommended pipeline, or one of the methods it cannot be told apart from."
    else:
        head = "It depends on the matrix: no one pipeline is best everywhere."
    text = [head, "`Pipeline.auto`, the default of `benchsel predict`, chooses the selection and the predictor for "
            "each matrix and number of benchmarks by cross-validation on the training models.",
            f"{where}, its R² under the paper's protocol is at or above that of {who} in {t['at_or_above']} of "
            f"{count(t['n'], 'comparison')}, clearly above (by more than two standard errors) in {t['better']} and "
            f"clearly below in {t['worse']}."]
    if shared is not None and len(shared):
        s = tally(shared)
        if s["n"]:
            where_ = and_join(dict.fromkeys(s["worse_rows"]["matrix"])) if s["worse"] else ""
            text.append(f"Scored only on the held-out entries that both methods predict, it is clearly below in "
                        f"{s['worse']} of {s['n']}" + (f", on {where_} (named below)." if s["worse"] else "."))
    fav = _favourite(choices) if choices is not None and len(choices) else {}
    if fav:
        text.append("Its own answer to the chapter's question, its most frequent choice on each matrix: " + and_join(
            f"{code(c)} on {m} ({n} of {total} choices)" for m, (c, n, total) in fav.items()) + ".")
    return paragraph(*text)


def prose(
    *,
    datasets: Sequence[str],
    peers: pd.DataFrame,
    shared: pd.DataFrame | None,
    choices: pd.DataFrame,
    coverage: pd.DataFrame,
    optimism: pd.DataFrame,
    gains: pd.DataFrame | None,
    curves: Mapping[str, pd.DataFrame],
    coinciding: Sequence[tuple[str, Sequence[str]]],
    scope_text: str,
    clipped: Sequence[tuple[str, str, float, float]] = (),
    ks: Sequence[int],
    grid: pd.DataFrame | None = None,
    n_pairs: int = 0,
    aside: tuple[pd.DataFrame, pd.DataFrame | None, pd.DataFrame] | None = None,
    every: pd.DataFrame | None = None,
    block: pd.DataFrame | None = None,
    block_sizes: tuple[int, int, int] | None = None,
    block_own_run: bool = False,
) -> PageProse:
    """The page's passages, written from this run's results.

    Parameters
    ----------
    datasets : sequence of str
        The matrices run (names of ``benchsel_lib.data.DATASETS``).
    peers, shared : DataFrame
        ``peer_differences`` and ``shared_differences`` rows of every matrix, with a ``matrix`` column.
    choices : DataFrame
        :func:`choice_table` rows.
    coverage : DataFrame
        ``pooled_coverage`` rows with a ``matrix`` column.
    optimism : DataFrame
        ``inner_optimism`` rows with a ``matrix`` column.
    gains : DataFrame, optional
        ``k_gain`` rows with a ``matrix`` column (None: a single size).
    curves, coinciding, clipped :
        The figure's mean curves, its coinciding lines and its lines below the axis (:func:`curve_caption`).
    scope_text : str
        :func:`scope`.
    ks : sequence of int
        The table sizes.
    grid : DataFrame, optional
        ``paired_summary`` rows with a ``matrix`` column, when a grid of fixed pairs ran.
    n_pairs : int
        Fixed pairs of that grid.
    aside : (peers, shared, coverage), optional
        The same comparison on the leaderboards kept aside.
    every : DataFrame, optional
        ``every_model_r2`` rows with a ``matrix`` column (None: the page has no section on every held-out model).
    block : DataFrame, optional
        ``block_split`` rows of Merged's MMLU block (None: not split).
    block_sizes : (int, int, int), optional
        Merged's MMLU subjects, its models that ran one, and all its models.
    block_own_run : bool
        Those rows come from a run of their own (Merged is not among ``datasets``).

    Returns
    -------
    PageProse
        Passages ``answer``, ``scope``, ``peers_md``, ``curve_caption``, ``choice_md``, ``optimism_md``,
        ``coverage_md``, ``gain_md``, ``grid_md``, ``aside_md`` and, with ``every``, ``every_md`` and
        ``block_md``.
    """
    aside_md = aside_passage(*aside) if aside is not None else ""
    matrices = list(datasets) + (["merged"] if block is not None and "merged" not in datasets else [])
    out = PageProse(matrices, {
        "answer": answer(peers, shared, choices, datasets=datasets, ks=ks),
        "scope": scope_text,
        "peers_md": peers_passage(peers, shared=shared),
        "curve_caption": curve_caption(curves, coinciding, clipped=clipped),
        "choice_md": choice_passage(choices),
        "optimism_md": optimism_passage(optimism),
        "coverage_md": coverage_passage(coverage),
        "gain_md": gain_passage(gains),
        "grid_md": grid_passage(grid, n_pairs),
        "aside_md": aside_md or "No leaderboard was kept aside in this run; the full study compares three.",
    })
    if every is not None:  # the section on every held-out model
        out.add(every_md=every_model_passage(every),
                block_md=block_passage(block, sizes=block_sizes, own_run=block_own_run))
    return out
