"""Chapter 6: selection order and stability (Appendix F, Figures 9-11).

The chapter runs greedy entropy and greedy MI in every fold of the paper's
cross-validation and asks which benchmarks come first and how much the order
moves between folds. This module turns the per-fold selection positions into
the claims table (the statements of Figures 9-11's captions), the figure
captions, the explanation of MMLU's MI first pick (:func:`first_step_gains`)
and the page's passages (:func:`prose`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..claims import VERDICTS, Claim, claims_table, failures, not_run, verdict
from ..prose import PageProse, and_join, code, count, label, num, paragraph, pct

__all__ = ["PAPER_MMLU_MODELS", "caption", "claim_rows", "figure_caption", "first_step_gains", "hub_table", "prose",
           "tolerance_table"]

#: Models in the paper's MMLU matrix (Section 5, Table 1).
PAPER_MMLU_MODELS = 5452
#: The paper's protocol for Figures 9-11: 10 folds, 10% holdout, the first 15 picks.
PAPER_FOLDS, PAPER_HOLDOUT, PAPER_TOP = 10, 0.1, 15
METHODS = ("entropy", "mi")
METHOD_NAMES = {"entropy": "entropy", "mi": "MI"}
FIGURES = {("mmlu", "entropy"): "Fig. 9a", ("mmlu", "mi"): "Fig. 9b", ("mteb", "entropy"): "Fig. 10a",
           ("mteb", "mi"): "Fig. 10b", ("merged", "entropy"): "Fig. 11a", ("merged", "mi"): "Fig. 11b"}
SECTION = "figures-9-11"
MMLU_SECTION = "the-first-pick-on-mmlu"
HUB_SECTION = "outliers-and-hubs"
#: Figure captions that contrast entropy's "outlier" picks with MI's "hub" picks.
HUB_FIGURES = {"mmlu": "Fig. 9", "mteb": "Fig. 10"}
#: Picks per fold whose centrality is compared.
HUB_PICKS = 5


def _first_counts(positions: pd.DataFrame, position: int = 1) -> pd.Series:
    """Folds in which each benchmark holds ``position``, most frequent first."""
    return positions.loc[positions["position"] == position, "benchmark"].value_counts()


def _in_every_fold(positions: pd.DataFrame, first: int, n_folds: int) -> list[str]:
    """Benchmarks among the first ``first`` picks of every one of the ``n_folds`` folds."""
    early = positions[positions["position"] <= first]
    folds = early.groupby("benchmark")["fold"].nunique()
    return folds[folds == n_folds].index.tolist()


def _of(n: int, total: int) -> str:
    return f"{n}/{total}"


def _fraction_verdict(n: int, total: int, paper: float, *, direction: str = "at least") -> str:
    """Verdict on a share of folds: within 10 points reproduced, within 30 partly."""
    return verdict(n / total, paper, tol=0.1, partly=0.3, direction=direction)


@dataclass(frozen=True)
class _Row:
    """One claim of Figures 9-11: its matrix and method, and how the run's number is computed.

    ``first_15`` marks a claim about the first 15 picks (the right margin of the figures), which the
    run checks only when it counts the same 15; ``needs_picks`` is the number of picks per fold it reads.
    """

    matrix: str
    method: str
    claim: str
    paper: str
    compute: Callable[[pd.DataFrame, pd.DataFrame, int, int], tuple[str, str, str]]
    section: str = SECTION
    first_15: bool = False
    needs_picks: int = 1


def _mmlu_entropy(pos: pd.DataFrame, st: pd.DataFrame, n_folds: int, top: int) -> tuple[str, str, str]:
    n = min(top, int((st["folds_in_top"] == n_folds).sum()))
    v = verdict(n / top, 13 / 15, tol=1 / 15, partly=4 / 15, direction="at least")
    return f"{_of(n, top)} in every fold", v, "well estimated" if v == "reproduced" else "more of the top 15 move"


def _first_in_every_fold(benchmark: str) -> Callable[..., tuple[str, str, str]]:
    def compute(pos: pd.DataFrame, st: pd.DataFrame, n_folds: int, top: int) -> tuple[str, str, str]:
        c = _first_counts(pos)
        n = int(c.get(benchmark, 0))
        v = _fraction_verdict(n, n_folds, 1.0)
        others = c.drop(benchmark, errors="ignore")
        why = ("same pick in every fold" if v == "reproduced" else
               f"{others.index[0]} first in {int(others.iloc[0])}" if len(others) else "never first")
        return _of(n, n_folds), v, why
    return compute


def _second_in_every_fold(benchmark: str) -> Callable[..., tuple[str, str, str]]:
    def compute(pos: pd.DataFrame, st: pd.DataFrame, n_folds: int, top: int) -> tuple[str, str, str]:
        n = int(_first_counts(pos, 2).get(benchmark, 0))
        v = _fraction_verdict(n, n_folds, 1.0)
        return _of(n, n_folds), v, "first pick rotates, second not" if v == "reproduced" else "second rotates too"
    return compute


def _mmlu_first_nine(pos: pd.DataFrame, st: pd.DataFrame, n_folds: int, top: int) -> tuple[str, str, str]:
    n = len(_in_every_fold(pos, 9, n_folds))
    v = verdict(n / 9, 1.0, tol=1 / 9, partly=3 / 9, direction="at least")
    return _of(n, 9), v, "same nine in every fold" if v == "reproduced" else "leading gains within fold noise"


def _massive_intent(pos: pd.DataFrame, st: pd.DataFrame, n_folds: int, top: int) -> tuple[str, str, str]:
    b = "MassiveIntentClassification"
    n = int(st.loc[b, "folds_in_top"]) if b in st.index else 0
    mean = float(st.loc[b, "mean_position"]) if n else float("nan")
    v_folds = _fraction_verdict(n, n_folds, 1.0)
    v_mean = verdict(mean, 2.9, tol=0.5, partly=1.5) if n else "not reproduced"
    v = max(v_folds, v_mean, key=VERDICTS.index)
    run = f"{_of(n, n_folds)}, mean {num(mean, '.1f')}" if n else _of(0, n_folds)
    return run, v, "a hub of MTEB" if v == "reproduced" else "moves later in some folds"


def _merged_entropy(pos: pd.DataFrame, st: pd.DataFrame, n_folds: int, top: int) -> tuple[str, str, str]:
    always = st.index[st["folds_in_top"] == n_folds].tolist()
    musr = "open_llm/MUSR" in always
    v = verdict(len(always), 1, tol=0, partly=2) if musr else "not reproduced"
    run = ", ".join(always[:3]) + (f" and {len(always) - 3} more" if len(always) > 3 else "") if always else "none"
    why = "only MUSR stable" if v == "reproduced" else "MUSR and others stable" if musr else "MUSR not stable"
    return run, v, why


def _in_top(benchmark: str, paper: float) -> Callable[..., tuple[str, str, str]]:
    def compute(pos: pd.DataFrame, st: pd.DataFrame, n_folds: int, top: int) -> tuple[str, str, str]:
        n = int(st.loc[benchmark, "folds_in_top"]) if benchmark in st.index else 0
        v = _fraction_verdict(n, n_folds, paper, direction="both")
        return _of(n, n_folds), v, "as in the paper" if v == "reproduced" else (
            "more often" if n / n_folds > paper else "less often")
    return compute


ROWS: tuple[_Row, ...] = (
    _Row("mmlu", "entropy", "MMLU entropy: nearly all top-15 picks stable", "13/15 (all but 2)", _mmlu_entropy,
         first_15=True),
    _Row("mmlu", "mi", "MMLU MI: miscellaneous first", "10/10", _first_in_every_fold("miscellaneous"), MMLU_SECTION),
    _Row("mmlu", "mi", "MMLU MI: same first 9 picks", "9/9", _mmlu_first_nine, MMLU_SECTION, needs_picks=9),
    _Row("mteb", "entropy", "MTEB entropy: SummEval second", "10/10", _second_in_every_fold("SummEval"),
         needs_picks=2),
    _Row("mteb", "mi", "MTEB MI: MassiveIntent\u00adClassification in the top 15", "10/10, mean 2.9",
         _massive_intent, first_15=True),
    _Row("merged", "entropy", "Merged entropy: only MUSR in the top 15 of every fold", "open_llm/MUSR",
         _merged_entropy, first_15=True),
    _Row("merged", "mi", "Merged MI: arena_hard/score first", "10/10", _first_in_every_fold("arena_hard/score")),
    _Row("merged", "mi", "Merged MI: helm/NarrativeQA in the top 15", "8/10", _in_top("helm/NarrativeQA", 0.8),
         first_15=True),
)


def hub_table(matrices: Mapping[str, object], positions: Mapping[tuple[str, str], pd.DataFrame], *,
              first: int = HUB_PICKS) -> pd.DataFrame:
    """How central the early picks of each method are: their mean squared correlation with the other benchmarks.

    A "hub" is correlated with many others (MI's target: it predicts the rest); an "outlier" with few
    (entropy's: it adds variance the others do not explain).

    Parameters
    ----------
    matrices : dict
        Matrix name -> ScoreMatrix (``scores``, ``benchmarks``); correlations on the pairs of observed entries.
    positions : dict
        ``(matrix, method) -> positions_from_cv`` output.
    first : int
        Each fold's first ``first`` picks are averaged.

    Returns
    -------
    DataFrame
        One row per matrix: ``matrix``, ``entropy``, ``MI`` (the mean over folds and picks) and ``all``
        (the mean over every benchmark).

    Notes
    -----
    Complexity O(M N²) per matrix for M models and N benchmarks.
    """
    rows = []
    for name, m in matrices.items():
        r = pd.DataFrame(np.asarray(m.scores, dtype=float), columns=list(m.benchmarks)).corr(min_periods=5) ** 2
        r = r.mask(np.eye(len(r), dtype=bool))
        central = r.mean(axis=1)  # NaN-skipping: pairs with too few shared models do not count
        row = {"matrix": label(name)}
        for meth in METHODS:
            if (name, meth) in positions:
                p = positions[name, meth]
                row[METHOD_NAMES[meth]] = float(central.reindex(p.loc[p["position"] <= first, "benchmark"]).mean())
        rows.append({**row, "all": float(central.mean())})
    return pd.DataFrame(rows, columns=["matrix", "entropy", "MI", "all"])


def _hub_rows(hubs: pd.DataFrame | None, datasets: Sequence[str], k_max: int) -> list[Claim]:
    """The captions' "entropy picks outliers, MI picks hubs" on MMLU and MTEB."""
    rows = []
    for name, where in HUB_FIGURES.items():
        claim, paper = f"{label(name)}: entropy picks outliers, MI hubs", "outliers, hubs"
        t = hubs.set_index("matrix") if hubs is not None else None
        if t is None or label(name) not in t.index or name not in datasets:
            rows.append(not_run(claim, where, paper, f"{label(name)} was not in this run", section=HUB_SECTION))
            continue
        if k_max < HUB_PICKS:
            rows.append(not_run(claim, where, paper, f"this run makes only {k_max} picks per fold",
                                section=HUB_SECTION))
            continue
        e, mi, avg = (float(t.loc[label(name), c]) for c in ("entropy", "MI", "all"))
        v = ("reproduced" if e < avg < mi else "partly" if e < mi else "not reproduced")
        why = {"reproduced": "entropy below average, MI above", "partly": "MI more central, not above average",
               "not reproduced": "entropy's picks more central"}[v]
        run = f"entropy {num(e)}, MI {num(mi)}, all {num(avg)}"
        rows.append(Claim(claim, where, paper, run, v, why, HUB_SECTION))
    return rows


def claim_rows(positions: Mapping[tuple[str, str], pd.DataFrame], stability: Mapping[tuple[str, str], pd.DataFrame],
               *, n_folds: int, top: int, k_max: int, gains: pd.DataFrame | None = None,
               n_models: int | None = None, hubs: pd.DataFrame | None = None) -> list[Claim]:
    """The claims of Figures 9-11's captions, checked on this run's selections.

    Parameters
    ----------
    positions : dict
        ``(matrix, method) -> positions_from_cv`` output (``benchmark, fold, position``).
    stability : dict
        ``(matrix, method) -> selection_summary`` output (indexed by benchmark, ``folds_in_top``).
    n_folds, top, k_max : int
        The run's folds, the picks the right margin counts, and the picks per fold.
    gains : DataFrame, optional
        :func:`first_step_gains` of MMLU; with ``n_models`` (MMLU's models) it gives the reason of an
        MMLU row that is not reproduced.
    n_models : int, optional
        Models in the MMLU matrix.
    hubs : DataFrame, optional
        :func:`hub_table` of the run (the "outliers vs hubs" rows are not run without it).

    Returns
    -------
    list of Claim
        One row per claim, in the order of the figures; a matrix the run left out, or a claim about
        other picks than the run counts, is a ``not run`` row saying so.

    Notes
    -----
    Complexity O(rows of the positions tables).
    """
    rows = []
    for r in ROWS:
        where = FIGURES[r.matrix, r.method]
        if (r.matrix, r.method) not in positions:
            missing = f"{label(r.matrix)} was not in this run"
        elif r.first_15 and top != PAPER_TOP:
            missing = f"this run counts the first {top} picks, not 15"
        elif r.needs_picks > k_max:
            missing = f"this run makes only {k_max} picks per fold"
        else:
            missing = ""
        if missing:
            rows.append(not_run(r.claim, where, r.paper, missing, section=r.section))
        else:
            run, v, why = r.compute(positions[r.matrix, r.method], stability[r.matrix, r.method], n_folds, top)
            if r.section == MMLU_SECTION and v != "reproduced" and gains is not None and len(gains) > 1 and n_models:
                gap = gains["whole matrix"].iloc[0] - gains["whole matrix"].iloc[1]
                why = f"{n_models} models, not {PAPER_MMLU_MODELS:,}: top gains {num(gap)} apart"
            rows.append(Claim(r.claim, where, r.paper, run, v, why, r.section))
    datasets = sorted({name for name, _ in positions})
    return rows + _hub_rows(hubs, datasets, k_max)


def first_step_gains(scores: np.ndarray, names: Sequence[str], splits: Sequence[tuple[int, np.ndarray, np.ndarray]],
                     *, n_candidates: int = 3) -> pd.DataFrame:
    """MI's first-step gain of the leading benchmarks, on the whole matrix and on each training split.

    On a correlation matrix ``R`` the gain of benchmark ``j`` at MI's first
    step (Algorithm 2, empty selection) is ``½ log (R⁻¹)_jj``: how well the
    other benchmarks predict it. Its argmax over ``j`` is MI's first pick.

    Parameters
    ----------
    scores : ndarray (models, benchmarks)
        A complete score matrix (the Pearson correlation of its rows is the protocol's estimate).
    names : sequence of str
        Benchmark names.
    splits : sequence of (fold, train, validation)
        :func:`benchsel_lib.protocol.splits.cv_splits` output.
    n_candidates : int
        Benchmarks with the largest gain on the whole matrix to list, besides every split's leader.

    Returns
    -------
    DataFrame
        One row per listed benchmark, by gain on the whole matrix: ``benchmark``, ``whole matrix``,
        ``lowest``, ``highest`` (over the training splits) and ``first in folds``.

    Raises
    ------
    ValueError
        The matrix has missing entries.

    Notes
    -----
    Complexity O(splits * (M N² + N³)) for M models and N benchmarks.
    """
    X = np.asarray(scores, dtype=float)
    if np.isnan(X).any():
        raise ValueError("first_step_gains needs a complete matrix (the pairwise correlation of its rows)")

    def gains(rows: np.ndarray) -> np.ndarray:
        return 0.5 * np.log(np.diag(np.linalg.inv(np.corrcoef(rows, rowvar=False))))

    whole = gains(X)
    per_split = np.array([gains(X[tr]) for _, tr, _ in splits])
    leaders = np.argmax(per_split, axis=1)
    listed = list(dict.fromkeys([*np.argsort(-whole)[:n_candidates], *sorted(set(leaders), key=lambda j: -whole[j])]))
    listed.sort(key=lambda j: -whole[j])
    return pd.DataFrame({"benchmark": [names[j] for j in listed], "whole matrix": whole[listed],
                         "lowest": per_split[:, listed].min(axis=0), "highest": per_split[:, listed].max(axis=0),
                         "first in folds": [int((leaders == j).sum()) for j in listed]})


def _mmlu_passage(gains: pd.DataFrame | None, *, n_models: int, n_train: int, n_folds: int) -> str:
    """Why MI's first pick on this book's MMLU changes between folds."""
    head = (f"This book's MMLU is a {n_models:,}-model matrix collected from per-subject sources (chapter 1); "
            f"the paper's has {PAPER_MMLU_MODELS:,} models from the Open LLM Leaderboard.")
    if gains is None or len(gains) < 2:
        return head
    a, b = gains.iloc[0], gains.iloc[1]
    widest = float((gains["highest"] - gains["lowest"]).max())
    firsts = [f"{code(r['benchmark'])} in {r['first in folds']}" for _, r in gains.iterrows() if r["first in folds"]]
    return paragraph(
        head,
        "MI's first pick is the benchmark that the others predict best, the largest ½ log (R⁻¹)ⱼⱼ.",
        f"On the whole matrix {code(a['benchmark'])} ({num(a['whole matrix'])}) and {code(b['benchmark'])} "
        f"({num(b['whole matrix'])}) differ by only {num(a['whole matrix'] - b['whole matrix'])}, while on "
        f"training splits of about {n_train} models a gain moves by up to {num(widest)}.",
        f"So the leader changes from fold to fold: first in the {n_folds} folds are {and_join(firsts)}.",
        f"The sampling error of a correlation shrinks as one over the square root of the number of models: the "
        f"paper's {PAPER_MMLU_MODELS:,} models make it {num(np.sqrt(PAPER_MMLU_MODELS / n_models), '.1f')} times "
        f"smaller than here, enough for one subject to lead in every fold.")


def figure_caption(name: str, method: str, positions: pd.DataFrame, stability: pd.DataFrame, *, n_folds: int,
                   top: int) -> str:
    """The caption of one selection-order figure: what it shows, first pick and stable benchmarks."""
    c = _first_counts(positions)
    always = stability.index[stability["folds_in_top"] == n_folds].tolist()
    shown = ", ".join(code(b) for b in always[:3]) + (", ..." if len(always) > 3 else "")
    first = (f"{code(c.index[0])} is first in {int(c.iloc[0])} of {n_folds} folds" if c.iloc[0] < n_folds else
             f"{code(c.index[0])} is first in all {n_folds} folds")
    rest = f" ({count(c.size, 'distinct first pick')})" if c.size > 1 else ""
    if len(always) == 1 and always[0] == c.index[0] and c.iloc[0] == n_folds:
        stable = f"no other benchmark is among the first {top} in every fold"
    elif len(always) == 1:
        stable = f"only {code(always[0])} is among the first {top} in every fold"
    elif always:
        stable = f"{count(len(always), 'benchmark')} are among the first {top} in every fold ({shown})"
    else:
        stable = f"no benchmark is among the first {top} in every fold"
    return f"**{label(name)}, {METHOD_NAMES[method]}.** {first}{rest}; {stable}."


def caption(prose: PageProse, name: str, method: str) -> object:
    """The caption of one selection-order figure, ready to display under it (an IPython Markdown object).

    Parameters
    ----------
    prose : PageProse
        :func:`prose` of the run (its ``caption_<matrix>_<method>`` passages).
    name, method : str
        The figure's matrix and method.

    Returns
    -------
    IPython.display.Markdown
    """
    from IPython.display import Markdown

    return Markdown(prose[f"caption_{name}_{method}"])


def tolerance_table(by_tol: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """MI's first pick per fold and EM tolerance, and the EM iterations per tolerance.

    Parameters
    ----------
    by_tol : DataFrame
        :func:`benchsel_lib.studies.em.selections_by_tolerance` output (``tol, fold, selected, em_iterations``).

    Returns
    -------
    picks : DataFrame
        ``fold`` and one column per tolerance (loosest first) with the first pick.
    iterations : DataFrame
        Indexed by tolerance: the fewest and most EM iterations of a fold.
    """
    by_tol = by_tol.assign(first_pick=by_tol["selected"].map(lambda sel: sel[0]))
    picks = by_tol.pivot(index="fold", columns="tol", values="first_pick").sort_index(axis=1, ascending=False)
    iters = by_tol.groupby("tol")["em_iterations"].agg(["min", "max"])
    return picks, iters


def _tolerance_passage(tolerance: tuple[pd.DataFrame, pd.DataFrame] | None, dataset: str, n_folds: int) -> str:
    if tolerance is None:
        return ("This run did not repeat the fits at a tighter tolerance: that study takes longer than the rest "
                "of the page together, and is an option of the notebook's parameters.")
    picks, iters = tolerance
    parts = []
    for t in picks.columns:
        lo, hi = int(iters.loc[t, "min"]), int(iters.loc[t, "max"])
        counts = picks[t].value_counts()
        parts.append(f"at tolerance {t:g} ({lo if lo == hi else f'{lo} to {hi}'} EM iterations) "
                     + and_join(f"{code(b)} in {n}" for b, n in counts.items()))
    return f"MI's first pick on {label(dataset)} across the {n_folds} folds: " + "; ".join(parts) + "."


def _failures_passage(rows: Sequence[Claim], *, n_models: Mapping[str, int], holdout: float, n_folds: int, seed: int,
                      scheme: str) -> str:
    said = failures(rows)
    if not said:
        ran = [r for r in rows if r.verdict != "not run"]
        said = "Every claim checked here is reproduced." if ran else "No claim of Appendix F was checked in this run."
    why = []
    if any(r.section == MMLU_SECTION and r.verdict in ("partly", "not reproduced") for r in rows):
        why.append("The MMLU rows fail because this book's MMLU has far fewer models than the paper's, so MI's "
                   "leading first-step gains are closer than their fold-to-fold noise (explained below).")
    merged = [r for r in rows if r.claim.startswith("Merged entropy") and r.verdict in ("partly", "not reproduced")]
    if merged:
        why.append(f"On Merged entropy is as unstable as the paper says; which benchmarks survive every fold is "
                   f"itself a noisy count on {n_models['merged']} sparsely observed models.")
    if any(r.section == HUB_SECTION and r.verdict == "partly" for r in rows):
        why.append("Where MI's early picks are more central than entropy's without being hubs, it is because MI "
                   "maximizes what its picks predict together, not each pick's own centrality.")
    if not (np.isclose(holdout, PAPER_HOLDOUT) and n_folds == PAPER_FOLDS and seed == 42 and scheme == "paper"):
        why.append(f"This run uses {count(n_folds, 'fold')} at {pct(holdout)} holdout"
                   + ("" if seed == 42 and scheme == "paper" else ", on other folds than the paper's")
                   + f", not the paper's {PAPER_FOLDS} folds at {pct(PAPER_HOLDOUT)}.")
    return paragraph(said, *why)


def prose(
    *,
    rows: Sequence[Claim],
    positions: Mapping[tuple[str, str], pd.DataFrame],
    stability: Mapping[tuple[str, str], pd.DataFrame],
    gains: pd.DataFrame | None,
    tolerance: tuple[pd.DataFrame, pd.DataFrame] | None,
    datasets: Sequence[str],
    tolerance_dataset: str,
    tie_break: str,
    n_models: Mapping[str, int],
    holdout: float,
    n_folds: int,
    k_max: int,
    top: int,
    seed: int,
    scheme: str,
) -> PageProse:
    """The page's passages, written from this run's selections.

    Parameters
    ----------
    rows : list of Claim
        :func:`claim_rows`.
    positions, stability : dict
        As in :func:`claim_rows`.
    gains : DataFrame or None
        :func:`first_step_gains` of MMLU (None when MMLU was not run).
    tolerance : tuple of DataFrame or None
        :func:`tolerance_table` of the tolerance comparison (None when it was not run).
    datasets, tolerance_dataset : list of str, str
        The matrices run, and the matrix of the tolerance comparison.
    tie_break : str
        The rule that broke entropy's tied first step.
    n_models : dict
        Models per matrix run.
    holdout, n_folds, k_max, top, seed, scheme :
        The run's protocol.

    Returns
    -------
    PageProse
        Passages ``claims``, ``failures_md``, ``run_md``, ``mmlu_md``, ``tie_md``, ``tolerance_md``
        and one caption per figure, ``caption_<matrix>_<method>``.
    """
    captions = {f"caption_{n}_{m}": figure_caption(n, m, positions[n, m], stability[n, m], n_folds=n_folds, top=top)
                for n, m in positions}
    names = and_join(label(n) for n in datasets)
    if seed == 42 and scheme == "paper" and n_folds == PAPER_FOLDS:
        split = f"This run uses the paper's own {count(n_folds, 'fold')} (seed 42) of {names}"
    else:
        split = (f"This run splits {names} into {count(n_folds, 'fold')} drawn with seed {seed}"
                 + ("" if scheme == "paper" else " by this book's nested scheme"))
    run_md = (f"{split}, at {pct(holdout)} holdout; each method picks {count(k_max, 'benchmark')} per fold, and the "
              f"figures count the folds in which a benchmark is among the first {top}.")
    tie_md = ("This run uses the library's default rule." if tie_break == "auto" else
              "This run uses plain argmax, as the paper's code does." if tie_break == "argmax" else
              f'This run uses the rule "{tie_break}".')
    mmlu_md = ("MMLU was not in this run." if "mmlu" not in datasets else
               _mmlu_passage(gains, n_models=n_models["mmlu"], n_train=int(round((1 - holdout) * n_models["mmlu"])),
                             n_folds=n_folds))
    passages = {"claims": claims_table(rows),
                "failures_md": _failures_passage(rows, n_models=n_models, holdout=holdout, n_folds=n_folds, seed=seed, scheme=scheme),
                "run_md": run_md, "mmlu_md": mmlu_md, "tie_md": tie_md,
                "tolerance_md": _tolerance_passage(tolerance, tolerance_dataset, n_folds), **captions}
    return PageProse(list(datasets), passages)
