"""Chapter 12: which selection, which predictor? (the recommended pipeline against the paper's Gaussian + MI)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..notebook import and_join
from ..prose import (
    PageProse,
    bullets,
    code,
    count,
    num,
    paragraph,
    pct,
    run_line,
    signed,
)

__all__ = ["VERDICT", "prose", "verdict_lines", "peer_passage", "shared_sentences", "aside_passage"]

VERDICT = {"better": "the recommended pipeline is better", "worse": "Gaussian + MI is better",
           "level": "no clear difference: the paper's recommendation holds",
           "n/a": "no fold scores both, so there is no verdict"}


def verdict_lines(summary: pd.DataFrame) -> list[str]:
    """One line per (matrix, k) row of the paired summary: both R^2, their difference and the verdict."""
    lines = []
    for r in summary.itertuples(index=False):
        se = f" ± {num(r.diff_baseline_se)}" if np.isfinite(r.diff_baseline_se) else ""
        best_se = f" ± {num(r.diff_se)}" if np.isfinite(r.diff_se) else ""
        lines.append(f"**{r.matrix}, k = {r.k}**: recommended {num(r.reference)}, Gaussian + MI {num(r.baseline)} "
                     f"(difference {signed(r.diff_baseline)}{se}): {VERDICT[r.vs_baseline]}; best fixed pair "
                     f"{code(r.best_fixed)} {num(r.best_fixed_r2)} (recommended minus best {signed(r.diff)}{best_se}).")
    return lines


def peer_passage(peers: pd.DataFrame | None, gains: pd.DataFrame | None, *,
                 lead: str = "Against the re-implemented published methods",
                 falls: Mapping[str, pd.DataFrame] | None = None,
                 shared: pd.DataFrame | None = None) -> str:
    """What the peers table and the gain from the smallest to the largest k say, as Markdown.

    ``peers``: ``peer_differences`` rows of every matrix with a ``matrix`` column
    (display name); ``gains``: one ``k_gain`` row per matrix with a ``matrix``
    column, or None when the table has a single k (matrices compared at
    different sizes each name theirs).  ``lead`` opens the first sentence.
    ``falls``: for a matrix whose R^2 is lower at the larger k (display
    name), the ``newly_scored`` models of the fold where it falls most
    (``worst_fold`` of its gains row), for a sentence on that fold.
    ``shared``: the same comparisons on the entries both methods score
    (``shared_differences`` rows with a ``matrix`` column), for
    :func:`shared_sentences`.  A difference counts when it exceeds two
    standard errors.
    """
    parts = []
    if peers is not None and len(peers):
        d, se = peers["diff"].to_numpy(float), peers["diff_se"].to_numpy(float)
        clear = np.isfinite(se) & (np.abs(d) > 2 * se)
        n, n_at = len(peers), int((d >= 0).sum())
        n_better, n_worse = int(((d > 0) & clear).sum()), int(((d < 0) & clear).sum())
        below = peers[d < 0]
        head = (f"{lead} the recommended pipeline is at or above the peer in "
                f"{n_at} of {count(n, '(matrix, k, peer) comparison')}: better by more than two standard errors in "
                f"{n_better}, worse by as much in {n_worse}.")
        lines = [f"below {code(r.peer)} on {r.matrix} at k = {r.k}: {num(r.reference_r2, '.3f')} against "
                 f"{num(r.peer_r2, '.3f')} ({signed(r.diff, '.3f')} ± {num(r.diff_se, '.3f')})"
                 for r in below.itertuples(index=False)]
        parts.append(paragraph(head, ("It is " + and_join(lines) + ".") if lines else
                               "It is below none of them anywhere.", *shared_sentences(shared)))
    if gains is not None and len(gains):
        rows = list(gains.itertuples(index=False))
        same = len({(int(r.k0), int(r.k1)) for r in rows}) == 1
        k0, k1 = int(rows[0].k0), int(rows[0].k1)
        each = [f"{r.matrix} {signed(r.gain, '.3f')} ± {num(r.gain_se, '.3f')}"
                + ("" if same else f" (k = {int(r.k0)} to {int(r.k1)})") for r in rows]
        down = [r.matrix for r in rows if r.gain < 0]
        sizes = f"k = {k0} to k = {k1}" if same else "the smaller to the larger k"
        larger = f"k = {k1}" if same else "the larger k"
        text = [f"From {sizes} revealed benchmarks the recommended pipeline's R² changes by "
                f"{and_join(each)} (paired by fold)."]
        if down:
            text.append(f"It is lower at {larger} on {and_join(down)}. The two sizes are not scored on the same "
                        "entries: a larger selection takes its benchmarks out of the targets and brings in the "
                        "models that observe only a newly revealed one.")
            split = [r for r in rows if r.gain < 0 and all(np.isfinite(getattr(r, c, np.nan)) for c in
                                                           ("only_r2_k0", "only_r2_k1", "common_r2_k1"))]
            if split:
                text.append("Pooled over the folds, " + and_join([
                    f"on {r.matrix} the entries that the smaller selection scores beyond those every compared size "
                    f"scores (the benchmarks larger ones reveal, among them) were predicted at R² "
                    f"{num(r.only_r2_k0, '.3f')}, and those the larger one scores beyond them are at "
                    f"{num(r.only_r2_k1, '.3f')}, against {num(r.common_r2_k1, '.3f')} on the entries every "
                    "size scores" for r in split]) + ".")
            text += [_worst_fold_sentence(r, falls[r.matrix]) for r in rows
                     if r.gain < 0 and falls and r.matrix in falls and hasattr(r, "worst_fold")]
        else:
            text.append(f"It is never lower at {larger} than at {'k = ' + str(k0) if same else 'the smaller'}.")
        known = [r for r in rows if np.isfinite(getattr(r, "gain_common", np.nan))]
        if known:
            lower = [r.matrix + _nesting(r) for r in known if r.gain_common < 0]
            text.append("Scored on the same entries at both sizes (those that every compared size scores), it "
                        "changes by " + and_join([f"{r.matrix} {signed(r.gain_common, '.3f')} ± "
                                                          f"{num(r.gain_common_se, '.3f')}" for r in known])
                        + (f"; lower on {and_join(lower)}." if lower else ": lower nowhere."))
        parts.append(paragraph(*text))
    return "\n\n".join(parts)


def shared_sentences(shared: pd.DataFrame | None) -> list[str]:
    """What the peers table says on the entries both methods score (``shared_differences`` rows), as sentences.

    Each method is scored on the held-out entries its own selection leaves
    (and, on a sparse matrix, reaches), so a difference of the protocol's
    R^2 mixes prediction with what is scored; on the entries both score it
    is prediction alone.  Names every comparison the recommended pipeline loses
    by more than two standard errors there.  Empty when ``shared`` is.
    """
    if shared is None or not len(shared):
        return []
    none = int(shared["diff"].isna().sum())
    shared = shared.dropna(subset=["diff"])
    if not len(shared):
        return [f"In none of the {count(none, 'comparison')} is a held-out entry scored by both."]
    d, se = shared["diff"].to_numpy(float), shared["diff_se"].to_numpy(float)
    clear = np.isfinite(se) & (np.abs(d) > 2 * se)
    n_at, n_better, n_worse = int((d >= 0).sum()), int(((d > 0) & clear).sum()), int(((d < 0) & clear).sum())
    worse = shared[(d < 0) & clear]
    unscored = f" (in {count(none, 'more comparison')} no held-out entry is scored by both)" if none else ""
    text = [f"Scored only on the held-out entries that both it and the peer score, where the difference is one of "
            f"prediction and not of which entries each is scored on, it is at or above the peer in {n_at} of "
            f"{count(len(shared), 'comparison')}: better by more than two standard errors in {n_better}, worse by as "
            f"much in {n_worse}{unscored}."]
    if len(worse):
        text.append("It is clearly below " + and_join(
            f"{code(r.peer)} on {r.matrix} at k = {r.k} ({num(r.reference_r2, '.3f')} against "
            f"{num(r.peer_r2, '.3f')} on {count(int(r.n_shared), 'shared entry', 'shared entries')})"
            for r in worse.itertuples(index=False)) + ".")
    return text


def _worst_fold_sentence(row: Any, new: pd.DataFrame) -> str:
    """The fold where a ``k_gain`` row falls most and the first of the models only the larger size scores there."""
    n = int(row.n_cells)
    seed = int(getattr(row, "worst_seed", -1))
    where = f"fold {int(row.worst_fold)}" + (f" of seed {seed}" if seed >= 0 else "")
    text = (f"On {row.matrix} the fall is largest in {where} "
            f"({signed(row.worst_gain, '.3f')}; the other {count(n - 1, 'fold')} change by "
            f"{signed(row.others_gain, '.3f')} on average), where k = {int(row.k1)} scores "
            f"{count(len(new), 'held-out model')} that k = {int(row.k0)} does not")
    if not len(new):
        return text + "."
    first = new.iloc[0]
    if not len(first["revealed"]):
        return text + f"; among them {first['model']}, which observes none of the revealed benchmarks."
    seen = and_join(f"{code(b)} ({count(int(c), 'training model')})"
                    for b, c in zip(first["revealed"], first["train_observed"]))
    return text + (f"; among them {first['model']}, whose revealed benchmarks (and how many training models of the "
                   f"fold observe each) are {seen}.")


def _nesting(row: Any) -> str:
    """`` (where its larger selection contains the smaller in N of M folds)`` for a ``k_gain`` row, or ``""``."""
    n = getattr(row, "nested_cells", -1)
    if not np.isfinite(n) or n < 0:
        return ""
    return f" (where its larger selection contains the smaller in {int(n)} of {count(int(row.n_cells), 'fold')})"


def aside_passage(peers: pd.DataFrame | None, gains: pd.DataFrame | None, coverage: pd.DataFrame | None,
                  *, shared: pd.DataFrame | None = None) -> str:
    """What the comparison on the leaderboards kept aside says, as Markdown (empty when none was run).

    ``peers``, ``gains``: as for :func:`peer_passage`, over the leaderboards
    kept aside; ``coverage``: ``pooled_coverage`` rows of each (``nominal,
    coverage``), whose largest gap to the nominal level is reported;
    ``shared``: as for :func:`peer_passage`.
    """
    if peers is None or not len(peers):
        return ""
    names = and_join(dict.fromkeys(peers["matrix"]))
    text = peer_passage(peers, gains, lead=f"On the leaderboards kept aside ({names}), against the same methods,",
                        shared=shared)
    if coverage is not None and len(coverage):
        gap = float((coverage["coverage"] - coverage["nominal"]).abs().max())
        text += "\n\n" + paragraph(f"There the intervals' empirical coverage is within {num(gap, '.3f')} of the "
                                     "nominal level.")
    return text


def prose(
    *,
    summary: pd.DataFrame,
    coverage: pd.DataFrame,
    observed: Mapping[str, float],
    datasets: Sequence[str],
    seeds: Sequence[int],
    n_folds: int,
    ks: Sequence[int],
    k_max: int,
    strategies: Sequence[str],
    predictors: Sequence[str],
    estimator: str,
    quick: bool,
    peers: pd.DataFrame | None = None,
    gains: pd.DataFrame | None = None,
    aside: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | None = None,
    falls: Mapping[str, pd.DataFrame] | None = None,
    shared: pd.DataFrame | None = None,
    aside_shared: pd.DataFrame | None = None,
) -> PageProse:
    """The page's passages, written from the paired comparison of this run.

    Parameters
    ----------
    summary : DataFrame
        ``paired_summary`` rows of every matrix with a ``matrix`` column (display name).
    coverage : DataFrame
        ``pooled_coverage`` rows of every matrix (``nominal, coverage``).
    observed : mapping
        Observed fraction of each matrix (display name -> fraction).
    datasets, seeds, n_folds, ks, k_max, strategies, predictors, estimator, quick :
        The run's parameters.
    peers, gains : DataFrame, optional
        The peers table and the gains from the smallest to the largest k (:func:`peer_passage`).
    falls : mapping, optional
        The models only the larger k scores in the fold where a matrix falls most (:func:`peer_passage`).
    aside : (peers, gains, coverage), optional
        The same on the leaderboards kept aside
        (:func:`~benchsel_lib.studies.pipelines.aside_tables`, :func:`aside_passage`).
    shared, aside_shared : DataFrame, optional
        The peers tables on the entries both methods score, on the matrices
        and on the leaderboards kept aside (:func:`shared_sentences`).

    Returns
    -------
    PageProse
        Passages ``this_book``, ``differ``, ``verdicts_md``, ``peers_md``, ``aside_md``, ``findings``.
    """
    counts = summary["vs_baseline"].value_counts()
    n_rows = len(summary)
    n_b, n_l, n_w = (int(counts.get(v, 0)) for v in ("better", "level", "worse"))
    cov_gap = float((coverage["coverage"] - coverage["nominal"]).abs().max())
    details = [f"{count(len(seeds), 'seed')} ({', '.join(map(str, seeds))})", count(n_folds, "fold"),
               f"k = {', '.join(map(str, ks))}", f"{len(strategies)} strategies × {len(predictors)} predictors"]
    if estimator != "auto":
        details.append(f"correlation estimator {code(estimator)}")
    counts_sentence = (f"Of the {n_rows} (matrix, k) rows, the recommended pipeline is better than the paper's "
                       f"Gaussian + MI by more than two standard errors in {n_b}, indistinguishable in {n_l} and worse "
                       f"in {n_w}; the largest gap between its intervals' empirical coverage and the nominal level is "
                       f"{num(cov_gap, '.3f')}.")
    by_matrix = summary.groupby("matrix", sort=False)["vs_baseline"].agg(lambda v: set(v))
    better = [m for m, v in by_matrix.items() if v == {"better"}]
    worse = [m for m, v in by_matrix.items() if v == {"worse"}]
    level = [m for m, v in by_matrix.items() if v == {"level"}]
    mixed = [m for m in by_matrix.index if m not in better + worse + level]

    def obs(ms: Sequence[str]) -> str:
        return and_join(f"{m} ({pct(observed[m])} observed)" for m in ms)

    where = paragraph(
        f"The recommended pipeline is better at every k of the table on {obs(better)}." if better else "",
        f"Gaussian + MI is better at every k on {obs(worse)}." if worse else "",
        f"The two cannot be told apart on {obs(level)}, where the paper's recommendation holds." if level else "",
        f"The verdict depends on k on {obs(mixed)}." if mixed else "")

    this_book = paragraph(
        run_line(datasets, described=("mteb", "merged", "benchpress", "mmlu"), details=details, quick=quick),
        "It adds simple alternatives (per-target ridge, a BenchPress-style blend, kNN, soft-impute, lasso-path and "
        "filtered greedy selections), re-implementations of published methods (anchor points, two Lasso "
        "selections) and a recommended pipeline chosen by inner cross-validation on the training "
        "models only.", counts_sentence)
    differ = paragraph(
        "The paper's pair is built on one Gaussian model of all benchmarks; the alternatives fit predictors directly "
        "on the models that ran the revealed benchmarks, and the recommended pipeline picks among them by inner "
        "cross-validation.", where)
    lines = verdict_lines(summary)
    peers_md = (peer_passage(peers, gains, falls=falls, shared=shared)
                or "No published method was compared in this run (`peers` is empty).")
    aside_md = (aside_passage(*aside, shared=aside_shared) if aside is not None else "") or \
        "No leaderboard was kept aside in this run (`aside` is empty)."
    found = paragraph(counts_sentence) + "\n\n" + bullets(lines) + "\n\n" + peers_md + "\n\n" + aside_md + \
        "\n\n" + paragraph(
        where,
        "`benchsel predict` and `benchsel select` use the recommended pipeline by default (`select` leaves out the "
        "benchmarks that almost no model has run, `--min-observed`) and print what was chosen "
        "and its inner-CV scores; `--method gaussian --objective mi` reproduces the paper.")
    return PageProse(list(datasets), {"this_book": this_book, "differ": differ, "verdicts_md": bullets(lines),
                                      "peers_md": peers_md, "aside_md": aside_md, "findings": found})

