"""Chapter 5: entropy versus mutual information (Section 5.4, Figures 5-7).

The page compares greedy entropy, greedy mutual information (MI) and random
selection under the paper's protocol at one holdout. Its claims table
(:func:`claims`) checks what Section 5.4 and the captions of Figures 5-7
state; its tables show the sign of MI's gain over entropy at small k with
its spread over folds (:func:`gain_table`), the R^2 of the three methods
(:func:`r2_table`), the two halves of the surrogate-gap explanation beside a
third objective (:func:`gap_table`) and how far entropy moves with a forced
first pick (:func:`first_pick_table`); :func:`prose` writes the passages.

Entropy's curve is the library's default tie rule for the first pick (the
most central benchmark); the range over the other rules is shown beside it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ...studies.bands import variant_range
from ..claims import Claim, claims_table, not_run, verdict
from ..prose import PageProse, count, label, labels, num, paragraph, pct, range_text, signed
from .greedy import folds_text, page_table, verdict_list

__all__ = ["PAPER_HOLDOUT", "PAPER_MATRICES", "SMALL_K", "claims", "crossover", "first_pick_sizes",
           "first_pick_table", "fold_gains", "gain_table", "gap_table", "page_table", "prose", "r2_table",
           "readable_floor", "seeds_text"]

#: The holdout of Section 5.4.
PAPER_HOLDOUT = 0.1
#: The matrices of Section 5.4.
PAPER_MATRICES = ("mmlu", "mteb", "merged")
#: The small subset sizes of the sign test ("for small k").
SMALL_K = (1, 2, 3, 4, 5)
#: Sizes of the R^2 table.
TABLE_KS = (1, 3, 5, 10, 15)
#: A gap within this of the paper's reproduces it; within twice this, partly.
TOL = 0.03
#: "MI predicts better" in the surrogate gap: MI's R^2 above entropy's by more than this.
MARGIN = 0.005


def _signed(value: float, spec: str = ".2f") -> str:
    """``+0.12``, ``-0.03``, or ``0.00`` for a value that rounds to zero (never ``-0.00``)."""
    text = signed(value, spec)
    return text[1:] if float(text) == 0 else text


def _at(s: pd.DataFrame, method: str, k: int, col: str = "r2_mean") -> float:
    row = s[(s["method"] == method) & (s["k"] == k)]
    return float(row[col].iloc[0]) if len(row) else np.nan


def seeds_text(seeds: Sequence[int]) -> str:
    """``"seeds 0-2"``, ``"seeds 0, 7"`` or ``"seed 3"``."""
    s = sorted(seeds)
    if len(s) > 2 and s == list(range(s[0], s[-1] + 1)):
        return f"seeds {s[0]}-{s[-1]}"
    return ("seed " if len(s) == 1 else "seeds ") + ", ".join(str(x) for x in s)


def fold_gains(cv: pd.DataFrame, *, other: str = "entropy") -> pd.DataFrame:
    """Per fold and k: MI's R^2 minus ``other``'s on the same fold (columns ``fold, k, gain``)."""
    keys = ["fold", "k"]
    mi = cv[cv["method"] == "mi"].set_index(keys)["r2"]
    ot = cv[cv["method"] == other].set_index(keys)["r2"]
    return (mi - ot.reindex(mi.index)).rename("gain").reset_index()


def gain_table(cv: Mapping[str, pd.DataFrame], *, k_max: int) -> pd.DataFrame:
    """MI's gain over entropy at each small k: the mean over folds, its range and the folds where MI is ahead."""
    rows = []
    for name, df in cv.items():
        g = fold_gains(df)
        for k in [k for k in SMALL_K if k <= k_max]:
            x = g.loc[g["k"] == k, "gain"].dropna()
            rows.append({"matrix": label(name), "k": k, "MI − entropy": _signed(float(x.mean()), ".3f"),
                         "over folds": f"{_signed(x.min())} to {_signed(x.max())}",
                         "folds MI ahead": f"{int((x > 0).sum())} of {len(x)}"})
    return pd.DataFrame(rows)


def r2_table(summary: Mapping[str, pd.DataFrame], band: Mapping[str, pd.DataFrame], *, k_max: int) -> pd.DataFrame:
    """Mean R^2 of entropy (with its range over tie rules), MI and random at the sizes of :data:`TABLE_KS`."""
    rows = []
    for name, s in summary.items():
        b = band[name].groupby("k")["r2_mean"].agg(["min", "max"])
        for k in [k for k in TABLE_KS if k <= k_max]:
            rows.append({"matrix": label(name), "k": k, "entropy": _at(s, "entropy", k),
                         "tie rules": range_text(b.loc[k, "min"], b.loc[k, "max"]), "MI": _at(s, "mi", k),
                         "random": _at(s, "random", k)})
    return pd.DataFrame(rows)


def gap_table(summary: Mapping[str, pd.DataFrame], trace: Mapping[str, pd.DataFrame], *,
              k_max: int) -> pd.DataFrame:
    """At each small k: training residual variance and held-out R^2 of entropy, MI and the trace greedy.

    ``trace`` maps each matrix to the CV summary of ``Pipeline.paper(objective="trace")`` on the same folds.
    """
    rows = []
    for name, s in summary.items():
        t = trace[name]
        for k in [k for k in SMALL_K if k <= k_max]:
            rows.append({"matrix": label(name), "k": k,
                         "resid. entropy": _at(s, "entropy", k, "residual_fraction_mean"),
                         "resid. MI": _at(s, "mi", k, "residual_fraction_mean"),
                         "resid. trace": _at(t, "trace", k, "residual_fraction_mean"),
                         "R² entropy": _at(s, "entropy", k), "R² MI": _at(s, "mi", k),
                         "R² trace": _at(t, "trace", k)})
    return pd.DataFrame(rows)


def crossover(s: pd.DataFrame) -> float:
    """The smallest k from which entropy's mean R^2 stays at or above MI's (NaN if it never does)."""
    e = s[s["method"] == "entropy"].set_index("k")["r2_mean"].sort_index()
    m = s[s["method"] == "mi"].set_index("k")["r2_mean"].reindex(e.index)
    ahead = (e >= m).to_numpy()
    for i, k in enumerate(e.index):
        if ahead[i:].all():
            return float(k)
    return np.nan


def first_pick_sizes(first_pick_ks: Sequence[int] | None, k_max: int) -> list[int] | None:
    """Sizes scored in the forced-first-pick runs: those given up to ``k_max``, with 1, ``min(5, k_max)``, ``k_max``.

    ``None`` scores every size (returns ``None``).
    """
    if first_pick_ks is None:
        return None
    return sorted({k for k in first_pick_ks if k <= k_max} | {1, min(5, k_max), k_max})


def first_pick_table(summary: Mapping[str, pd.DataFrame], first_pick: Mapping[str, pd.DataFrame], *,
                     k_max: int) -> pd.DataFrame:
    """Entropy's mean R^2 over forced first picks at k = 1, ``min(5, k_max)`` and ``k_max``: range and its ends."""
    rows = []
    for name, fp in first_pick.items():
        for k in dict.fromkeys((1, min(5, k_max), k_max)):
            r = variant_range(fp, k=k).iloc[0]
            rows.append({"matrix": label(name), "k": k, "default rule": _at(summary[name], "entropy", k),
                         "forced first picks": range_text(r["min"], r["max"]), "worst first pick": r["lo_variant"]})
    return pd.DataFrame(rows)


def readable_floor(summary: pd.DataFrame, band: pd.DataFrame) -> float | None:
    """Lower R^2 limit of a first-pick figure: ``None`` if the band is no lower than the method curves.

    The curves (mean minus one sd of entropy, MI and random) set the floor,
    at most 0, less a margin of 0.1; a band reaching below it is cut there.
    """
    lows = (summary["r2_mean"] - summary["r2_sd"].fillna(0)).min()
    floor = float(np.floor((min(0.0, lows) - 0.1) * 10) / 10)
    return floor if float(band["r2_mean"].min()) < floor else None


def _rule_gap(band: pd.DataFrame, summary: pd.DataFrame, ks: Sequence[int], rule: str) -> float:
    """MI's mean R^2 minus entropy's under tie rule ``rule``, averaged over ``ks`` (NaN if the rule was not run)."""
    b = band[band["variant"] == rule].set_index("k")["r2_mean"]
    if b.empty:
        return np.nan
    return float(np.mean([_at(summary, "mi", k) - b.get(k, np.nan) for k in ks]))


def _first_column(band: pd.DataFrame, summary: pd.DataFrame, ks: Sequence[int]) -> str:
    """``"; first-column rule: +0.24"`` when the run has that rule, else ``""``."""
    for rule in ("argmax", "index"):
        g = _rule_gap(band, summary, ks, rule)
        if np.isfinite(g):
            return f"; first-column tie rule {_signed(g)}"
    return ""


def _gap_claim(text: str, where: str, paper_gap: float, paper: str, name: str, ks: Sequence[int], *,
               summary: Mapping[str, pd.DataFrame], band: Mapping[str, pd.DataFrame], k_max: int, section: str,
               spread: Mapping[int, Mapping[str, pd.DataFrame]] | None = None) -> Claim:
    """A claim on MI's lead over entropy, averaged over ``ks``, compared with the paper's ``paper_gap``."""
    if name not in summary:
        return not_run(text, where, paper, f"{label(name)} was not in this run", section=section)
    ks = [k for k in ks if k <= k_max]
    if not ks:
        return not_run(text, where, paper, f"this run stops at k = {k_max}", section=section)
    s = summary[name]
    gap = float(np.mean([_at(s, "mi", k) - _at(s, "entropy", k) for k in ks]))
    v = verdict(gap, paper_gap, tol=TOL)
    run = _signed(gap) + (f" (MI {num(_at(s, 'mi', ks[0]))}, entropy {num(_at(s, 'entropy', ks[0]))})"
                          if len(ks) == 1 else "")
    if spread:
        other = [float(np.mean([_at(by[name], "mi", k) - _at(by[name], "entropy", k) for k in ks]))
                 for by in spread.values() if name in by]
        if other:
            run += f" ({seeds_text(list(spread))}: {range_text(min(other), max(other), '+.2f')})"
    if v == "reproduced":
        why = f"within {num(TOL)}"
    elif abs(gap) < 0.005:
        why = f"no gap{_first_column(band[name], s, ks)}"
    elif gap * paper_gap < 0:
        why = f"reversed{_first_column(band[name], s, ks)}"
    else:
        why = f"{'larger' if gap > paper_gap else 'smaller'} lead{_first_column(band[name], s, ks)}"
    return Claim(text, where, paper, run, v, why, section)


def _crossover_claim(text: str, where: str, paper_k: int, name: str, *, summary: Mapping[str, pd.DataFrame],
                     k_max: int) -> Claim:
    paper = f"k ≈ {paper_k}" if paper_k != 10 else "k = 10"
    if name not in summary:
        return not_run(text, where, paper, f"{label(name)} was not in this run", section="large-k")
    if k_max < paper_k + 2:
        return not_run(text, where, paper, f"this run stops at k = {k_max}", section="large-k")
    k = crossover(summary[name])
    if not np.isfinite(k):
        return Claim(text, where, paper, f"MI ahead up to k = {k_max}", "not reproduced",
                     "entropy never stays ahead", "large-k")
    v = verdict(k, paper_k, tol=1, partly=3)
    return Claim(text, where, paper, f"k = {int(k)}", v, "entropy at or above MI from there on", "large-k")


def _large_k_claim(summary: Mapping[str, pd.DataFrame], *, k_max: int) -> Claim:
    text, where, paper = "Merged: MI clearly ahead at large k", "Fig. 7", "MI ahead"
    if "merged" not in summary:
        return not_run(text, where, paper, "Merged was not in this run", section="large-k")
    ks = [k for k in range(10, 16) if k <= k_max]
    if not ks:
        return not_run(text, where, paper, f"this run stops at k = {k_max}", section="large-k")
    s = summary["merged"]
    gaps = [_at(s, "mi", k) - _at(s, "entropy", k) for k in ks]
    mean = float(np.mean(gaps))
    v = verdict(mean, 0.02, tol=0.0, partly=0.02, direction="at least")
    ahead = sum(g > 0 for g in gaps)
    return Claim(text, where, paper, f"MI − entropy {_signed(mean)} over k = {ks[0]}-{ks[-1]}", v,
                 f"MI ahead at {ahead} of {len(ks)} sizes", "large-k")


def _sign_claim(cv: Mapping[str, pd.DataFrame], *, k_max: int,
                spread_cv: Mapping[int, Mapping[str, pd.DataFrame]] | None) -> Claim:
    text, where, paper = "MI ahead of entropy at small k, on every matrix", "§5.4", "k = 1-5"
    if not cv:
        return not_run(text, where, f"MI ahead, {paper}", "none of the paper's matrices was in this run",
                       section="small-k")
    ks = [k for k in SMALL_K if k <= k_max]
    cells = [(name, k, float(fold_gains(df).query("k == @k")["gain"].mean()))
             for name, df in cv.items() for k in ks]
    pos = [c for c in cells if c[2] > 0]
    v = verdict(len(pos) / len(cells), 1.0, tol=1e-9, partly=0.5, direction="at least")
    run = f"{len(pos)} of {len(cells)} (matrix, k)"
    if spread_cv:
        counts = [sum(float(fold_gains(by[n]).query("k == @k")["gain"].mean()) > 0 for n in cv if n in by
                      for k in ks) for by in spread_cv.values()]
        run += f" ({seeds_text(list(spread_cv))}: {range_text(min(counts), max(counts), 'd')})"
    neg = [c for c in cells if c[2] <= 0]
    why = "MI ahead everywhere" if not neg else "entropy level or ahead at " + "; ".join(
        f"{label(n)} k = {', '.join(str(k) for m, k, _ in neg if m == n)}" for n in dict.fromkeys(m for m, _, _ in neg))
    return Claim(text, where, f"MI ahead, {paper}", run, v, why, "small-k")


def _surrogate_claim(gap: pd.DataFrame) -> Claim:
    text = "Surrogate gap: entropy less residual variance, yet MI better R²"
    where, paper = "§5.4, Fig. 5", "at small k"
    if gap.empty:
        return not_run(text, where, paper, "this run has no small k", section="the-surrogate-gap")
    holds = (gap["resid. entropy"] < gap["resid. MI"]) & (gap["R² MI"] > gap["R² entropy"] + MARGIN)
    mi_lower = int((gap["resid. MI"] < gap["resid. entropy"]).sum())
    v = verdict(float(holds.mean()), 1.0, tol=0.1, partly=0.5, direction="at least")
    why = (f"MI has less residual variance in {mi_lower} of {len(gap)}" if mi_lower else
           "entropy leaves less residual variance, but MI does not predict better")
    return Claim(text, where, paper, f"holds in {int(holds.sum())} of {len(gap)} (matrix, k)", v, why,
                 "the-surrogate-gap")


def _random_claims(summary: Mapping[str, pd.DataFrame]) -> list[Claim]:
    """Figures 5-7: random is competitive in R^2 but dominated in residual variance and MI."""
    if not summary:
        why = "none of the paper's matrices was in this run"
        return [not_run("Random is competitive in R²", "Figs. 5-7", "competitive", why, section="figures-5-7"),
                not_run("Random dominated in residual variance and MI", "Figs. 5-7", "dominated", why,
                        section="figures-5-7")]
    gaps, dominated, cells = {}, 0, 0
    for name, s in summary.items():
        w = s.pivot_table(index="k", columns="method", values=["r2_mean", "residual_fraction_mean", "mi_mean"])
        best = w["r2_mean"][["entropy", "mi"]].max(axis=1)
        gaps[name] = float((best - w["r2_mean"]["random"]).median())
        res, mi = w["residual_fraction_mean"], w["mi_mean"]
        worse = (res["random"] > res[["entropy", "mi"]].max(axis=1)) & (mi["random"] < mi["mi"])
        dominated, cells = dominated + int(worse.sum()), cells + len(worse)
    lead = max(gaps.values())
    competitive = Claim("Random is competitive in R²", "Figs. 5-7", "competitive",
                        "best greedy − random (median over k): " + ", ".join(f"{label(n)} {_signed(g)}"
                                                                             for n, g in gaps.items()),
                        verdict(lead, 0.0, tol=0.05, partly=0.1, direction="at most"),
                        "greedy ahead by 0.05 or less" if lead <= 0.05 else "greedy ahead by more than 0.05",
                        "figures-5-7")
    frac = dominated / cells
    beaten = Claim("Random dominated in residual variance and MI", "Figs. 5-7", "dominated",
                   f"{dominated} of {cells} (matrix, k)", verdict(frac, 1.0, tol=0.1, partly=0.5, direction="at least"),
                   "more residual variance than both greedy, less MI than greedy MI", "figures-5-7")
    return [competitive, beaten]


def claims(summary: Mapping[str, pd.DataFrame], cv: Mapping[str, pd.DataFrame], band: Mapping[str, pd.DataFrame],
           gap: pd.DataFrame, *, k_max: int, holdout: float,
           spread_cv: Mapping[int, Mapping[str, pd.DataFrame]] | None = None) -> list[Claim]:
    """The rows of the claims table: Section 5.4 and the captions of Figures 5-7.

    Parameters
    ----------
    summary, cv, band : mapping of str to DataFrame
        Per matrix: the CV summary and the per-fold rows of entropy, MI and
        random, and entropy's tie-break band.
    gap : DataFrame
        :func:`gap_table`.
    k_max, holdout : int, float
        The run's largest size and holdout (the paper's is 10%).
    spread_cv : mapping of int to mapping, optional
        Further fold seeds -> per-matrix CV rows (entropy and MI); their
        range follows the numbers of the Merged and small-k rows.

    Returns
    -------
    list of Claim
        Matrices or sizes the run did not include give ``not run`` rows.
    """
    spread = ({seed: {n: _summ(df) for n, df in by.items()} for seed, by in spread_cv.items()}
              if spread_cv else None)
    common = dict(summary=summary, band=band, k_max=k_max)
    paper = [n for n in PAPER_MATRICES if n in summary]
    rows = [
        _gap_claim("MMLU, k = 1: MI ahead, 0.83 against 0.65", "§5.4", 0.18, "+0.18", "mmlu", [1],
                   section="small-k", **common),
        _gap_claim("MTEB, k ≤ 3: MI ahead by about 10 points", "Fig. 6", 0.10, "+0.10", "mteb", [1, 2, 3],
                   section="small-k", **common),
        _sign_claim({n: cv[n] for n in paper}, k_max=k_max, spread_cv=spread_cv),
        _crossover_claim("MMLU: entropy catches up near k = 7", "§5.4", 7, "mmlu", summary=summary, k_max=k_max),
        _crossover_claim("MTEB: entropy overtakes for k ≥ 10", "Fig. 6", 10, "mteb", summary=summary,
                         k_max=k_max),
        _large_k_claim(summary, k_max=k_max),
        _gap_claim("Merged, k = 15: MI 0.59 against entropy 0.55", "§5.4", 0.04, "+0.04", "merged", [15],
                   section="large-k", spread=spread, **common),
        _surrogate_claim(gap[gap["matrix"].isin([label(n) for n in paper])]),
        *_random_claims({n: summary[n] for n in paper}),
    ]
    if not np.isclose(holdout, PAPER_HOLDOUT):
        why = f"this run holds out {pct(holdout)}, the paper 10%"
        rows = [r if r.verdict == "not run" else not_run(r.claim, r.where, r.paper, why, section=r.section)
                for r in rows]
    return rows


def _summ(df: pd.DataFrame) -> pd.DataFrame:
    from ...protocol.summaries import summarize_cv

    return summarize_cv(df)


def _first_picks(cv: pd.DataFrame, method: str) -> tuple[str, int, int]:
    """The most frequent first pick of ``method`` over the folds: (benchmark, folds, all folds)."""
    firsts = cv[(cv["method"] == method) & (cv["k"] == 1)]["selected"].map(lambda sel: sel[0]).value_counts()
    return str(firsts.index[0]), int(firsts.iloc[0]), int(firsts.sum())


def _failures_passage(rows: Sequence[Claim], *, summary: Mapping[str, pd.DataFrame], cv: Mapping[str, pd.DataFrame],
                      band: Mapping[str, pd.DataFrame], gap: pd.DataFrame, k_max: int, spread: bool, folds: str,
                      n_models: Mapping[str, int]) -> str:
    bad = {c.claim for c in rows if c.verdict in ("partly", "not reproduced")}
    parts = [paragraph(verdict_list(rows), "" if spread else f"The numbers are for {folds}; their spread over "
                       "other fold seeds was not run, since each seed costs a full cross-validation with EM on "
                       "Merged.")]
    if any(c.startswith(("MMLU, k = 1", "MTEB, k ≤ 3")) for c in bad):
        parts.append("**Small k.** " + _tie_passage(summary, band, k_max=k_max))
    if any(c.startswith("MMLU:") for c in bad) and "mmlu" in n_models:
        parts.append(f"**MMLU.** The book's MMLU matrix holds {n_models['mmlu']:,} models from the public Open LLM "
                     "Leaderboard (chapter 1), not the paper's 5,452, so where its curves cross need not match.")
    if any(c.startswith("Merged") for c in bad) and "merged" in cv and k_max >= 15:
        g = fold_gains(cv["merged"]).query("k == 15")["gain"]
        b = band["merged"].query("k == 15")["r2_mean"]
        parts.append(f"**Merged at k = 15.** The sign turns on the tie as well (entropy spans "
                     f"{range_text(b.min(), b.max())} over the tie rules) and on the folds: the standard error of "
                     f"MI − entropy over the "
                     f"{count(len(g), 'fold')} is {num(g.std(ddof=1) / np.sqrt(len(g)))}, as large as the paper's "
                     "gap of 0.04.")
    if any(c.startswith("Surrogate gap") for c in bad) and not gap.empty:
        lower = int((gap["resid. MI"] < gap["resid. entropy"]).sum())
        parts.append(f"**Surrogate gap.** It fails on its first half: MI's picks leave less training residual variance "
                     f"than entropy's in {lower} of the {len(gap)} (matrix, k) cells with k ≤ {int(gap['k'].max())}, "
                     "because greedy entropy does not minimize the residual variance "
                     "([the surrogate gap](#the-surrogate-gap)).")
    return "\n\n".join(x for x in parts if x)


def _tie_passage(summary: Mapping[str, pd.DataFrame], band: Mapping[str, pd.DataFrame], *, k_max: int) -> str:
    """Why the small-k gaps of MMLU and MTEB turn on entropy's tie rule (computed per matrix run)."""
    cases = [(n, [k for k in ks if k <= k_max]) for n, ks in (("mmlu", [1]), ("mteb", [1, 2, 3]))
             if n in summary and n in band]
    level = [n for n, ks in cases if abs(_at(summary[n], "mi", 1) - _at(summary[n], "entropy", 1)) < 0.02]
    first = [f"{_first_column(band[n], summary[n], ks).removeprefix('; first-column tie rule ')} on {label(n)} "
             f"(k {'= 1' if ks == [1] else '≤ ' + str(ks[-1])})" for n, ks in cases
             if _first_column(band[n], summary[n], ks)]
    return paragraph(
        "The small-k gaps turn on entropy's first pick, which is a tie: every candidate has the same first entropy "
        "gain on a correlation matrix. The default rule takes the most central benchmark"
        + (f", which on {labels(level)} predicts the rest as well as MI's first pick (within 0.02 at k = 1)"
           if level else "") + ".",
        "The paper's code takes whichever benchmark the rounding of the diagonal favours, an arbitrary one"
        + ("; under the first-column rule, another arbitrary one, MI leads by " + " and ".join(first) if first
           else "") + ".",
        "The paper's small-k gaps measure how much better MI's first pick is than an arbitrary one.")


def _figure_caption(summary: Mapping[str, pd.DataFrame], *, n_folds: int, holdout: float) -> str:
    ahead, lower, n_lower, n_small = [], [], 0, 0
    for name, s in summary.items():
        w = s.pivot_table(index="k", columns="method", values=["r2_mean", "residual_fraction_mean"])
        r2, res = w["r2_mean"], w["residual_fraction_mean"]
        ahead.append(f"{label(name)} {int((r2['mi'] > r2['entropy']).sum())} of {len(r2)}")
        small = res.index <= max(SMALL_K)
        top = int(res.index[small].max()) if small.any() else max(SMALL_K)
        lower.append(f"{label(name)} {int(((res['mi'] < res['entropy']) & small).sum())} of {int(small.sum())}")
        n_lower, n_small = n_lower + int(((res["mi"] < res["entropy"]) & small).sum()), n_small + int(small.sum())
    return paragraph(
        "MI's R² is above entropy's at " + "; ".join(ahead) + " sizes, and MI leaves less residual variance than "
        f"entropy at {'; '.join(lower)} of the sizes up to {top}"
        + (": the reverse of the surrogate gap." if 2 * n_lower > n_small else "."),
        f"At {pct(holdout)} holdout. Blue: greedy entropy (most central benchmark first; hatched: the range over "
        "the tie rules for its first pick); red: greedy MI; gray dashed: random; shaded: ±1 standard deviation "
        f"over the {count(n_folds, 'fold')}. Left, R² on the held-out models; middle, residual variance fraction "
        "of the training correlation (log scale); right, MI between the selected benchmarks and the rest.")


def _small_passage(table: pd.DataFrame, cv: Mapping[str, pd.DataFrame]) -> str:
    if table.empty:
        return "This run has no small subset size."
    means = [float(fold_gains(df).query("k == @k")["gain"].mean()) for df in cv.values() for k in table["k"].unique()]
    pos = sum(m > 0 for m in means)
    firsts = []
    for name, df in cv.items():
        mi, n_mi, n = _first_picks(df, "mi")
        ent, n_ent, _ = _first_picks(df, "entropy")
        firsts.append(f"{label(name)}: MI `{mi}` ({n_mi} of {n} folds), entropy `{ent}` ({n_ent} of {n})")
    cross = sum(int(((g := fold_gains(df).query("k == @k")["gain"]).min() < 0) & (g.max() > 0))
                for df in cv.values() for k in table["k"].unique())
    return paragraph(
        f"MI − entropy is the mean over folds of MI's R² minus entropy's on the same fold; it is positive in "
        f"{pos} of the {len(table)} (matrix, k) rows. The range over folds crosses zero in {cross} of them"
        + (": on some folds entropy is ahead even where MI is ahead on average." if cross else "."),
        "First picks, the most frequent over the folds: " + "; ".join(firsts) + ".",
        "Where the two objectives start from the same benchmark the gain at k = 1 is zero by construction; where "
        "they do not, it is the difference between two single-benchmark predictors.")


def _large_passage(summary: Mapping[str, pd.DataFrame], band: Mapping[str, pd.DataFrame], *, k_max: int) -> str:
    cross = []
    for name, s in summary.items():
        k = crossover(s)
        cross.append(f"{label(name)} from k = {int(k)}" if np.isfinite(k) else
                     f"{label(name)} never up to k = {k_max}")
    text = "Entropy's R² stays at or above MI's: " + "; ".join(cross) + "."
    if "merged" in summary and k_max >= 10:
        s, b = summary["merged"], band["merged"]
        k = min(15, k_max)
        bk = b[b["k"] == k]["r2_mean"]
        text = paragraph(text, f"On Merged at k = {k} MI reaches {num(_at(s, 'mi', k))} and entropy "
                               f"{num(_at(s, 'entropy', k))} ({range_text(bk.min(), bk.max())} over the tie rules): "
                               "which method leads at large k on the sparse matrix depends on the tie rule of "
                               "entropy's first pick, fifteen picks later.")
    return text


def _gap_passage(gap: pd.DataFrame) -> str:
    if gap.empty:
        return "This run has no small subset size, so the surrogate gap is not tested."
    holds = int(((gap["resid. entropy"] < gap["resid. MI"]) & (gap["R² MI"] > gap["R² entropy"] + MARGIN)).sum())
    mi_lower = int((gap["resid. MI"] < gap["resid. entropy"]).sum())
    rest = gap[gap["k"] > 1]
    tr_low = int((rest["resid. trace"] <= rest[["resid. entropy", "resid. MI"]].min(axis=1) + 1e-12).sum())
    tr_best = int((rest["R² trace"] >= rest[["R² entropy", "R² MI"]].max(axis=1)).sum())
    return paragraph(
        f"Both halves of the explanation (entropy with the lower residual variance, MI with an R² higher by more "
        f"than {num(MARGIN, '.3f')}) hold in {holds} of the {len(gap)} (matrix, k) rows, and MI leaves the lower "
        f"residual variance in {mi_lower}.",
        "Greedy entropy is pivoted Cholesky: each step adds the benchmark with the largest variance left "
        "unexplained by those already picked. That is the benchmark least like the others, which maximizes the "
        "determinant of the selected block but explains little of the rest; MI's gain adds the term log P_jj, "
        "which rewards a benchmark coupled to the ones left out, and that is what lowers their residual variance.",
        f"A greedy that minimizes the residual variance itself (the trace objective, an extension of the paper) "
        f"leaves the least of the three in {tr_low} of the {len(rest)} rows with k > 1 and has the highest R² in "
        f"{tr_best}." if len(rest) else "")


def _first_pick_passage(table: pd.DataFrame, *, summary: Mapping[str, pd.DataFrame],
                        first_pick: Mapping[str, pd.DataFrame], observed: Mapping[str, Mapping[str, int]],
                        n_models: Mapping[str, int], floors: Mapping[str, float | None],
                        ks: Sequence[int] | None) -> tuple[str, str]:
    """The passage and the figure caption of the forced-first-pick band."""
    if table.empty:
        return ("No forced first picks were run.", "")
    spans, narrows, wider = [], [], []
    for name, fp in first_pick.items():
        g = table[table["matrix"] == label(name)]
        spans.append(f"{label(name)}: " + ", ".join(f"k = {r['k']} {r['forced first picks']}"
                                                     for _, r in g.iterrows()))
        width = fp.groupby("k")["r2_mean"].agg(lambda x: x.max() - x.min())
        k_last = int(width.index.max())
        narrows.append(bool(width.loc[k_last] < width.iloc[0]))
        wider.append(bool(width.loc[k_last] > abs(_at(summary[name], "mi", k_last) - _at(summary[name], "entropy",
                                                                                          k_last))))
    text = paragraph(
        "Forcing each benchmark in turn as entropy's first pick, and letting greedy continue from it, spans the "
        "mean R² as follows: " + "; ".join(spans) + ".",
        ("The range narrows as k grows, since later picks make up for a poor first one"
         + (", but at the largest k it is still wider than the gap between MI and entropy there." if all(wider)
            else ".")) if all(narrows) else
        ("The range does not narrow on every matrix as k grows"
         + (", and at the largest k it is wider than the gap between MI and entropy there." if all(wider)
            else ".")))
    cut = []
    for name, floor in floors.items():
        if floor is None:
            continue
        fp = first_pick[name]
        worst = fp.loc[fp["r2_mean"].idxmin()]
        seen = observed[name].get(str(worst["variant"]))
        cut.append((name, floor, worst, seen))
        text = paragraph(text, f"The outlier is `{worst['variant']}` on {label(name)}, at R² "
                               f"{num(worst['r2_mean'], '.1f')} with k = {int(worst['k'])}: only {seen} of the "
                               f"{n_models[name]} models have a score on it, so its correlations with the others are "
                               "estimated from a handful of training models, and predicting every other benchmark "
                               "from it alone goes far off scale.")
    sizes = "every k" if ks is None else "k = " + ", ".join(str(k) for k in ks)
    caption = paragraph(
        f"Entropy with each benchmark forced as its first pick (hatched: the range of the mean R² over the forced "
        f"picks, scored at {sizes}); the lines are those of the figures above.",
        " ".join(f"On {label(n)} the R² axis is cut at {num(f, '.1f')}: `{w['variant']}` at k = {int(w['k'])} "
                 f"(R² {num(w['r2_mean'], '.1f')}) lies below it and would flatten every other curve."
                 for n, f, w, _ in cut))
    return text, caption


def _run_passage(datasets: Sequence[str], first_pick_datasets: Sequence[str], *, holdout: float, n_folds: int,
                 k_max: int, seed: int, scheme: str, estimator: str, n_first_picks: int | None,
                 first_pick_ks: Sequence[int] | None, quick: bool) -> str:
    skipped = [m for m in PAPER_MATRICES if m not in datasets and m not in first_pick_datasets]
    only_fp = [m for m in PAPER_MATRICES if m not in datasets and m in first_pick_datasets]
    est = {"auto": "", "em": " EM on every matrix,",
           "pairwise": " pairwise correlations instead of the paper's EM,"}[estimator]
    which = "every benchmark in turn" if n_first_picks is None else f"a seeded sample of {n_first_picks} benchmarks"
    sizes = "every k" if first_pick_ks is None else "k = " + ", ".join(str(k) for k in first_pick_ks)
    return paragraph(
        f"This run: {labels(datasets)} at {pct(holdout)} holdout, {count(n_folds, 'fold')},{est} k = 1 to {k_max}, "
        f"on {folds_text(seed, scheme)}" + (" (quick mode, a smoke test)" if quick else "") + ".",
        f"{labels(skipped)} {'was' if len(skipped) == 1 else 'were'} not run." if skipped else "",
        f"{labels(only_fp)} {'was' if len(only_fp) == 1 else 'were'} run with forced first picks only."
        if only_fp else "",
        f"Forced first picks on {labels(first_pick_datasets)}: {which}, scored at {sizes} to keep the page fast."
        if first_pick_datasets else "No forced first picks were run.")


def prose(*, claims_rows: Sequence[Claim], summary: Mapping[str, pd.DataFrame], cv: Mapping[str, pd.DataFrame],
          band: Mapping[str, pd.DataFrame], gains: pd.DataFrame, gap: pd.DataFrame,
          first_pick: Mapping[str, pd.DataFrame], first_picks: pd.DataFrame,
          observed: Mapping[str, Mapping[str, int]], n_models: Mapping[str, int],
          floors: Mapping[str, float | None], datasets: Sequence[str], first_pick_datasets: Sequence[str],
          holdout: float, k_max: int, n_folds: int, seed: int, scheme: str, estimator: str,
          n_first_picks: int | None, first_pick_ks: Sequence[int] | None, quick: bool,
          spread: bool = False) -> PageProse:
    """The page's glued passages, written from the claims and tables of this run.

    Parameters
    ----------
    claims_rows : list of Claim
        :func:`claims`.
    summary, cv, band : mapping of str to DataFrame
        Per matrix: CV summary, per-fold rows and entropy's tie-break band.
    gains, gap, first_picks : DataFrame
        :func:`gain_table`, :func:`gap_table`, :func:`first_pick_table`.
    first_pick : mapping of str to DataFrame
        The forced-first-pick bands.
    observed, n_models : mapping
        Models observing each benchmark, and models, per matrix.
    floors : mapping of str to float or None
        The R^2 axis limit of each first-pick figure (:func:`readable_floor`).
    datasets, first_pick_datasets, holdout, k_max, n_folds, seed, scheme, estimator, n_first_picks, \
first_pick_ks, quick :
        The run's parameters (``datasets``: the compared matrices; ``first_pick_ks``: the sizes scored, or
        None for all).
    spread : bool
        Whether other fold seeds were run.

    Returns
    -------
    PageProse
        Passages ``claims``, ``failures_md``, ``run_md``, ``figures_md``, ``small_md``, ``large_md``,
        ``gap_md``, ``first_pick_md``, ``first_pick_caption``.
    """
    fp_text, fp_caption = _first_pick_passage(first_picks, summary=summary, first_pick=first_pick,
                                              observed=observed, n_models=n_models, floors=floors, ks=first_pick_ks)
    summary = {n: summary[n] for n in cv}  # the compared matrices (a forced-first-pick one may be extra)
    return PageProse(list(dict.fromkeys([*datasets, *first_pick_datasets])), {
        "claims": claims_table(claims_rows),
        "failures_md": _failures_passage(claims_rows, summary=summary, cv=cv, band=band, gap=gap, k_max=k_max,
                                         spread=spread, folds=folds_text(seed, scheme), n_models=n_models),
        "run_md": _run_passage(datasets, first_pick_datasets, holdout=holdout, n_folds=n_folds, k_max=k_max,
                               seed=seed, scheme=scheme, estimator=estimator, n_first_picks=n_first_picks,
                               first_pick_ks=first_pick_ks, quick=quick),
        "figures_md": _figure_caption(summary, n_folds=n_folds, holdout=holdout),
        "small_md": _small_passage(gains, cv),
        "large_md": _large_passage(summary, band, k_max=k_max),
        "gap_md": _gap_passage(gap),
        "first_pick_md": fp_text,
        "first_pick_caption": fp_caption or "No forced first picks were run."})
