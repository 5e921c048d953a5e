"""Chapter 4: greedy selection under cross-validation (Section 5.3, Figures 2-4).

The page compares greedy entropy selection with random selection under the
paper's 10-fold protocol. Its claims table (:func:`claims`) checks the
numbers Section 5.3 states, its tables (:func:`r2_table`,
:func:`holdout_table`) show them beside this run's, and :func:`prose`
writes the passages that depend on the run: the figure caption, what failed
and why, the holdout effect and the tie of entropy's first pick.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..claims import Claim, claims_table, not_run, verdict
from ..tables import table
from ..prose import PageProse, count, label, labels, num, paragraph, pct, range_text, signed

__all__ = ["LEVELS", "Level", "PAPER_HOLDOUT", "SHORT", "STYLE_WORDS", "TABLE_STYLES", "TIE_RULES", "claims",
           "coinciding_rules", "figure_caption", "folds_text", "holdout_table", "page_table", "pair_coverage",
           "prose", "r2_table", "rule_lines", "seed_spread", "table_holdout", "table_ks", "training_sizes",
           "verdict_list"]

#: The holdout of the paper's statements in Section 5.3 (other than the 90% one).
PAPER_HOLDOUT = 0.1
#: A run within this of the paper's number reproduces it; within twice this, partly.
TOL = 0.03
#: The tie-break rules in a word or two.
SHORT = {"auto": "most-central", "argmax": "argmax", "index": "lowest-index", "mi": "largest-MI-gain"}
#: Cell padding of the page's tables (the default Styler output has none).
TABLE_STYLES = [{"selector": "th, td", "props": "padding: 0.15em 0.7em; text-align: right;"},
                {"selector": "th:first-child, td:first-child", "props": "text-align: left;"}]
#: The tie-break rules in words (the library's ``tie_break`` values).
TIE_RULES = {"auto": "most central benchmark first", "argmax": "first column (argmax)",
             "index": "first column (index)", "mi": "largest MI gain first"}


@dataclass(frozen=True)
class Level:
    """An R^2 that Section 5.3 states: matrix, subset size, holdout, method, value and how it is compared."""

    matrix: str
    k: int
    holdout: float
    paper: float
    claim: str
    method: str = "entropy"
    direction: str = "both"


#: The numbers of Section 5.3 (mean R^2 over folds).
LEVELS = (
    Level("mmlu", 5, 0.1, 0.89, "MMLU, k = 5"),
    Level("mmlu", 10, 0.1, 0.92, "MMLU, k = 10", direction="at least"),
    Level("mmlu", 15, 0.1, 0.95, "MMLU, k = 15"),
    Level("mmlu", 10, 0.9, 0.92, "MMLU, k = 10, 90% held out"),
    Level("mteb", 5, 0.1, 0.72, "MTEB, k = 5"),
    Level("mteb", 15, 0.1, 0.85, "MTEB, k = 15"),
    Level("merged", 15, 0.1, 0.55, "Merged, k = 15"),
    Level("mmlu", 5, 0.1, 0.89, "Random on MMLU is competitive, k = 5", method="random"),
)


def page_table(df: pd.DataFrame, *, digits: int | Mapping[str, int] = 2, missing: str = "—") -> Any:
    """:func:`benchsel_lib.book.tables.table` with padded cells (whole, no index, no ``nan``)."""
    return table(df, digits=digits, missing=missing).set_table_styles(TABLE_STYLES)


def table_holdout(holdouts: Sequence[float], band_holdout: float) -> float:
    """The run's holdout nearest ``band_holdout``: where the tie-break rules are run and the table is drawn."""
    return float(min(holdouts, key=lambda h: abs(h - band_holdout)))


def table_ks(k_max: int) -> list[int]:
    """Subset sizes of the comparison table: 1, ``min(5, k_max)``, 10 and 15 where they do not exceed ``k_max``."""
    return sorted({k for k in (1, min(5, k_max), 10, 15) if k <= k_max})


def _signed(value: float) -> str:
    """``+0.12``, ``-0.03``, or ``0.00`` for a value that rounds to zero (never ``-0.00``)."""
    text = signed(value)
    return "0.00" if float(text) == 0 else text


def _at(s: pd.DataFrame, method: str, k: int, holdout: float, col: str = "r2_mean") -> float:
    row = s[(s["method"] == method) & (s["k"] == k) & np.isclose(s["holdout"].astype(float), holdout)]
    return float(row[col].iloc[0]) if len(row) else np.nan


def _has(s: pd.DataFrame, holdout: float) -> bool:
    return bool(np.isclose(s["holdout"].astype(float), holdout).any())


def seed_spread(spread: Mapping[int, Mapping[str, pd.DataFrame]] | None, matrix: str, method: str, k: int,
                holdout: float) -> str:
    """``" (seeds 0-2: 0.70 to 0.74)"``: the range of one mean R^2 over other fold seeds, or ``""``.

    ``spread`` maps each further seed to its per-matrix CV summaries.
    """
    vals = {seed: _at(by[matrix], method, k, holdout) for seed, by in (spread or {}).items()
            if matrix in by and _has(by[matrix], holdout)}
    vals = {s: v for s, v in vals.items() if np.isfinite(v)}
    if not vals:
        return ""
    seeds = sorted(vals)
    names = f"{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2 \
        else ", ".join(str(s) for s in seeds)
    return f" (seed{'s' if len(seeds) > 1 else ''} {names}: {range_text(min(vals.values()), max(vals.values()))})"


def verdict_list(rows: Sequence[Claim]) -> str:
    """``"Of the 10 rows of the table, 7 reproduce, 2 only in part and 1 not."`` (zero counts left out)."""
    words = {"reproduced": "reproduce", "partly": "only in part", "not reproduced": "not",
             "not run": "were not run"}
    if all(c.verdict == "not run" for c in rows):
        return f"None of the {len(rows)} rows of the table was computed by this run."
    counts = [(sum(c.verdict == v for c in rows), w) for v, w in words.items()]
    parts = [f"{n} {w}" for n, w in counts if n]
    if len(parts) > 1:
        parts = [", ".join(parts[:-1]) + " and " + parts[-1]]
    return f"Of the {len(rows)} rows of the table, {parts[0]}."


def _level_claim(lv: Level, summary: Mapping[str, pd.DataFrame], *, k_max: int, n_models: Mapping[str, int],
                 spread: Mapping[int, Mapping[str, pd.DataFrame]] | None) -> Claim:
    where = "§5.3"
    section = "fewer-training-models" if lv.holdout > 0.5 else "against-the-paper"
    paper = ("R² above " if lv.direction == "at least" else "R² ") + num(lv.paper)
    if lv.matrix not in summary:
        return not_run(lv.claim, where, paper, f"{label(lv.matrix)} was not in this run", section=section)
    if lv.k > k_max:
        return not_run(lv.claim, where, paper, f"this run stops at k = {k_max}", section=section)
    if not _has(summary[lv.matrix], lv.holdout):
        return not_run(lv.claim, where, paper, f"the {pct(lv.holdout)} holdout was not in this run",
                       section=section)
    value = _at(summary[lv.matrix], lv.method, lv.k, lv.holdout)
    v = verdict(value, lv.paper, tol=TOL, direction=lv.direction)
    gap = value - lv.paper
    if v == "reproduced":
        why = f"within {num(TOL)}" if lv.direction == "both" else "above it"
    else:
        why = f"{_signed(gap)}"
        if lv.matrix == "mmlu" and "mmlu" in n_models:
            why += f"; smaller MMLU ({n_models['mmlu']:,} models, paper 5,452)"
    run = num(value) + seed_spread(spread, lv.matrix, lv.method, lv.k, lv.holdout)
    return Claim(lv.claim, where, paper, run, v, why, section)


def _structure_claim(summary: Mapping[str, pd.DataFrame], *, holdout: float) -> Claim:
    """Greedy leaves less residual variance and more entropy than random on MTEB and Merged."""
    text, where, paper = ("Greedy beats random in residual variance and entropy, MTEB and Merged",
                          "§5.3, Figs. 3-4", "at every k > 1")
    ran = [m for m in ("mteb", "merged") if m in summary and _has(summary[m], holdout)]
    if not ran:
        why = ("neither MTEB nor Merged was in this run" if not any(m in summary for m in ("mteb", "merged"))
               else f"the {pct(holdout)} holdout was not in this run")
        return not_run(text, where, paper, why, section="figures-2-4")
    parts, wins, cells = [], 0, 0
    for m in ran:
        s = summary[m][np.isclose(summary[m]["holdout"].astype(float), holdout)]
        e = s[(s["method"] == "entropy") & (s["k"] > 1)].set_index("k")  # at k = 1 every pick has entropy 0
        r = s[s["method"] == "random"].set_index("k").reindex(e.index)
        both = (e["residual_fraction_mean"] < r["residual_fraction_mean"]) & (e["logdet_mean"] > r["logdet_mean"])
        wins, cells = wins + int(both.sum()), cells + len(both)
        parts.append(f"{label(m)} {int(both.sum())} of {len(both)}")
    v = verdict(wins / cells, 1.0, tol=0.1, partly=0.5, direction="at least")
    why = "ahead in both at every size" if wins == cells else f"ahead in both at {wins} of {cells}"
    return Claim(text, where, paper, "; ".join(parts) + " sizes", v, why, "figures-2-4")


def _baseline_claim(summary: Mapping[str, pd.DataFrame], *, k_max: int, holdout: float) -> Claim:
    """Random remains a strong baseline for imputation: entropy's R^2 lead over random at k = 5."""
    text, where, paper = "Random stays a strong baseline for imputation", "§5.3", "close in R²"
    k = min(5, k_max)
    ran = [m for m in summary if _has(summary[m], holdout)]
    if not ran:
        return not_run(text, where, paper, f"the {pct(holdout)} holdout was not in this run",
                       section="figures-2-4")
    leads = {m: _at(summary[m], "entropy", k, holdout) - _at(summary[m], "random", k, holdout) for m in ran}
    v = verdict(max(leads.values()), 0.0, tol=0.05, partly=0.1, direction="at most")
    run = f"entropy − random, k = {k}: " + ", ".join(f"{label(m)} {_signed(d)}" for m, d in leads.items())
    return Claim(text, where, paper, run, v, "entropy ahead by 0.05 or less" if v == "reproduced"
                 else "entropy ahead by more than 0.05", "figures-2-4")


def claims(summary: Mapping[str, pd.DataFrame], *, k_max: int, n_models: Mapping[str, int],
           spread: Mapping[int, Mapping[str, pd.DataFrame]] | None = None) -> list[Claim]:
    """The rows of the claims table: Section 5.3's numbers and its two statements about random.

    Parameters
    ----------
    summary : mapping of str to DataFrame
        :func:`~benchsel_lib.summarize_cv` of entropy and random per matrix of the run.
    k_max : int
        The run's largest subset size.
    n_models : mapping of str to int
        Models per matrix (the book's MMLU is smaller than the paper's).
    spread : mapping of int to mapping, optional
        Further fold seeds -> per-matrix summaries; their range follows each number.

    Returns
    -------
    list of Claim
        A matrix, holdout or size the run did not include gives a ``not run`` row.
    """
    rows = [_level_claim(lv, summary, k_max=k_max, n_models=n_models, spread=spread) for lv in LEVELS[:-1]]
    rows.append(_structure_claim(summary, holdout=PAPER_HOLDOUT))
    rows.append(_level_claim(LEVELS[-1], summary, k_max=k_max, n_models=n_models, spread=spread))
    rows.append(_baseline_claim(summary, k_max=k_max, holdout=PAPER_HOLDOUT))
    return rows


def r2_table(summary: Mapping[str, pd.DataFrame], band: Mapping[str, pd.DataFrame], *, holdout: float,
             k_max: int) -> pd.DataFrame:
    """Mean R^2 of entropy, its range over tie rules, random and the paper's value, at ``holdout``.

    ``band`` must hold the tie-break variants at the same ``holdout``. The
    paper column is empty away from the paper's 10% holdout.
    """
    rows = []
    for name, s in summary.items():
        b = band[name][np.isclose(band[name]["holdout"].astype(float), holdout)]
        if b.empty:
            raise ValueError(f"the tie-break band of {name} has no rows at holdout {holdout}")
        b = b.groupby("k")["r2_mean"].agg(["min", "max"])
        for k in table_ks(k_max):
            paper = [lv.paper for lv in LEVELS if lv.method == "entropy" and (lv.matrix, lv.k) == (name, k)
                     and np.isclose(lv.holdout, holdout)]
            rows.append({"matrix": label(name), "k": k, "entropy": _at(s, "entropy", k, holdout),
                         "tie rules": range_text(b.loc[k, "min"], b.loc[k, "max"]),
                         "random": _at(s, "random", k, holdout), "paper": paper[0] if paper else np.nan})
    return pd.DataFrame(rows)


def holdout_table(summary: Mapping[str, pd.DataFrame], *, ks: Sequence[int]) -> pd.DataFrame:
    """Entropy's mean R^2 per matrix and ``k`` (rows) at every holdout of the run (one column each)."""
    rows = []
    for name, s in summary.items():
        e = s[s["method"] == "entropy"]
        for k in ks:
            row = {"matrix": label(name), "k": k}
            for h in sorted(e["holdout"].unique()):
                row[f"{pct(h)} held out"] = _at(s, "entropy", k, float(h))
            rows.append(row)
    return pd.DataFrame(rows)


def pair_coverage(observed: np.ndarray) -> float:
    """The mean, over pairs of benchmarks, of the fraction of models that observe both (1 on a complete matrix).

    ``observed`` is the models x benchmarks mask of observed scores. O(M N^2).
    """
    o = np.asarray(observed, dtype=float)
    both = o.T @ o
    n = both.shape[0]
    return float(both[~np.eye(n, dtype=bool)].mean() / o.shape[0]) if n > 1 else 1.0


def training_sizes(cv: Mapping[str, pd.DataFrame]) -> dict[str, dict[float, int]]:
    """Per matrix and holdout: the number of training models of a split (the mean over folds, rounded)."""
    return {name: {float(h): int(round(g["n_train"].mean())) for h, g in df.groupby("holdout")}
            for name, df in cv.items()}


def rule_lines(tie_breaks: Sequence[str], *, same: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """The tie rules drawn as lines of their own, with their legend labels.

    All but the default ``"auto"`` (entropy's own curve); of two rules that
    give the same curve (``same``, from :func:`coinciding_rules`) only the
    first is drawn, its label naming both.
    """
    merged = {b: a for a, b in same}
    lines = {}
    for t in tie_breaks:
        if t == "auto" or t in merged:
            continue
        twins = [b for a, b in same if a == t and b in tie_breaks]
        lines[t] = f"entropy, {_rule_words(t, twins)}"
    return lines


def _rule_words(rule: str, twins: Sequence[str]) -> str:
    if not twins:
        return TIE_RULES[rule]
    if {rule, *twins} == {"argmax", "index"}:
        return "first column (argmax, index)"
    return " and ".join(TIE_RULES[t] for t in (rule, *twins)) + " (one curve)"


#: How :func:`benchsel_lib.book.plotting.plot_cv_curves` draws the first, second, ... rule line.
STYLE_WORDS = ("purple dotted with squares", "orange dash-dot with triangles", "green dashed with down-triangles",
               "brown dotted with diamonds")


def coinciding_rules(band: Mapping[str, pd.DataFrame], *, holdout: float, tol: float = 5e-4) -> list[tuple[str, str]]:
    """Pairs of tie rules whose mean R^2 agree within ``tol`` at every k on every matrix of ``band``."""
    rules = None
    curves = {}
    for name, b in band.items():
        b = b[np.isclose(b["holdout"].astype(float), holdout)]
        curves[name] = b.pivot_table(index="k", columns="variant", values="r2_mean")
        rules = list(curves[name].columns) if rules is None else [r for r in rules if r in curves[name].columns]
    pairs = []
    for i, a in enumerate(rules or []):
        for c in (rules or [])[i + 1:]:
            if all(np.allclose(cv[a], cv[c], atol=tol, rtol=0) for cv in curves.values()):
                pairs.append((a, c))
    return pairs


def _near_default(band: Mapping[str, pd.DataFrame], *, holdout: float, rules: Sequence[str],
                  tol: float = 0.01) -> dict[str, list[str]]:
    """Per rule: the matrices where its mean R^2 stays within ``tol`` of the default rule's at every k."""
    out: dict[str, list[str]] = {}
    for name, b in band.items():
        c = b[np.isclose(b["holdout"].astype(float), holdout)].pivot_table(index="k", columns="variant",
                                                                             values="r2_mean")
        if "auto" not in c.columns:
            continue
        for t in rules:
            if t in c.columns and float((c[t] - c["auto"]).abs().max()) < tol:
                out.setdefault(t, []).append(name)
    return out


def _wins(summary: Mapping[str, pd.DataFrame], h: float) -> tuple[int, int, int, int]:
    """At holdout ``h``, over (matrix, k): entropy below random in residual variance, above in R^2 and (k > 1,
    where picks differ in it) in entropy; the number of points and of those with k > 1."""
    res = ent = r2 = n = n2 = 0
    for s in summary.values():
        s = s[np.isclose(s["holdout"].astype(float), h)]
        e = s[s["method"] == "entropy"].set_index("k")
        r = s[s["method"] == "random"].set_index("k").reindex(e.index)
        res += int((e["residual_fraction_mean"] < r["residual_fraction_mean"]).sum())
        ent += int(((e["logdet_mean"] > r["logdet_mean"]) & (e.index > 1)).sum())
        r2 += int((e["r2_mean"] > r["r2_mean"]).sum())
        n, n2 = n + len(e), n2 + int((e.index > 1).sum())
    return res, ent, r2, n, n2


def figure_caption(summary: Mapping[str, pd.DataFrame], band: Mapping[str, pd.DataFrame], *, holdouts: Sequence[float],
                   holdout: float, n_folds: int, tie_breaks: Sequence[str]) -> str:
    """Caption of Figures 2-4: what the panels show and what they find (counts over (matrix, k) points)."""
    hs = sorted(holdouts)
    wins = {h: _wins(summary, h) for h in hs}
    res, ent, r2, n, n2 = wins[hs[0]]
    lead = ("Greedy entropy's advantage over random lies in what it optimizes: "
            if 2 * res > n and 2 * ent > n2 and r2 < min(res, ent) else "")
    finding = (f"{lead}at {pct(hs[0])} holdout entropy's residual variance is lower than random's at {res} of the "
               f"{n} (matrix, k) points and its entropy higher at {ent} of the {n2} with k > 1; its R² is higher at "
               f"{'only ' if lead else ''}{r2} of {n}.")
    finding = finding[:1].upper() + finding[1:]
    if len(hs) > 1:
        finding += (" R² above random, by holdout: " + ", ".join(f"{pct(h)} {wins[h][2]} of {wins[h][3]}" for h in hs)
                    + ".")
    same = coinciding_rules(band, holdout=holdout)
    lines = rule_lines(tie_breaks, same=same)
    rules = ""
    if lines:
        rules = (f"In the {pct(holdout)} row the thin lines are entropy under other tie rules for its first pick: "
                 + "; ".join(f"{STYLE_WORDS[i % len(STYLE_WORDS)]}, {lines[t].removeprefix('entropy, ')}"
                             for i, t in enumerate(lines)) + ".")
        near = _near_default(band, holdout=holdout, rules=list(lines))
        rules += "".join(f" On {labels(ms)} the {SHORT[t]} rule stays within 0.01 of the default curve and covers "
                         "it in places." for t, ms in near.items())
        if ("argmax", "index") in same and "argmax" in lines:
            rules += (" The argmax and lowest-index rules give one curve, drawn once: with a diagonal of exactly 1 "
                      "the argmax is the first column.")
        elif any(a in lines for a, _ in same):
            rules += " Rules that give the same curve on every matrix are drawn once."
    return paragraph(
        finding,
        f"Solid blue with markers: greedy entropy (most central benchmark first); dashed gray: random; shaded: ±1 "
        f"standard deviation over the {count(n_folds, 'fold')}. One row of panels per holdout; left, R² on the "
        "held-out models; middle, residual variance fraction of the training correlation (log scale); right, "
        "entropy (log-determinant) of the selected set.", rules)


def folds_text(seed: int, scheme: str) -> str:
    """The folds of the run in words."""
    if scheme == "paper":
        return "the paper's own folds (its code's layout, seed 42)" if seed == 42 else \
            f"folds laid out as the paper's code does, with seed {seed} (the paper's are seed 42)"
    return f"this book's nested fold layout with seed {seed} (not the paper's folds)"


def _run_passage(datasets: Sequence[str], *, holdouts: Sequence[float], n_folds: int, k_max: int, seed: int,
                 scheme: str, quick: bool) -> str:
    skipped = [m for m in ("mmlu", "mteb", "merged") if m not in datasets]
    hs = sorted(holdouts)
    return paragraph(
        f"This run: {labels(datasets)}, {count(n_folds, 'fold')}, {', '.join(pct(h) for h in hs)} held out, "
        f"k = 1 to {k_max}, on {folds_text(seed, scheme)}" + (" (quick mode, a smoke test)" if quick else "") + ".",
        f"{labels(skipped)} {'was' if len(skipped) == 1 else 'were'} not run." if skipped else "",
        "The paper's 20% holdout is left out of this run to keep the page fast (each holdout costs one EM fit a "
        "fold on Merged); the notebook runs it on request." if not any(np.isclose(h, 0.2) for h in hs) else "")


def _failures_passage(rows: Sequence[Claim], *, n_models: Mapping[str, int], spread: bool, seed: int,
                      scheme: str) -> str:
    bad = [c for c in rows if c.verdict in ("partly", "not reproduced")]
    text = verdict_list(rows)
    mmlu = [c for c in bad if "MMLU" in c.claim]
    why = (f"The {len(mmlu)} MMLU row{'s' if len(mmlu) > 1 else ''} off by more than {num(TOL)} "
           f"({', '.join(c.claim for c in mmlu)}) come from another matrix: the book's MMLU holds "
           f"{n_models['mmlu']:,} models from the public Open LLM Leaderboard (chapter 1) against the paper's "
           "5,452, so its correlation is estimated from other, far fewer models, and its R² need not match."
           if mmlu and "mmlu" in n_models else "")
    others = [c.claim for c in bad if c not in mmlu]
    rest = ("The other rows that fall short: " + "; ".join(others) + "." if others else "")
    seeds = ("" if spread else f"The numbers are for {folds_text(seed, scheme)}; their spread over other fold "
             "seeds was not run, since each seed costs a full cross-validation.")
    return "\n\n".join(x for x in (paragraph(text, seeds), why, rest) if x)


def _holdout_passage(table: pd.DataFrame, sizes: Mapping[str, Mapping[float, int]], coverage: Mapping[str, float],
                     k: int) -> str:
    cols = [c for c in table.columns if c.endswith("held out")]
    if len(cols) < 2:
        return "This run has one holdout, so the effect of holding out more models is not shown."
    first, last = cols[0], cols[-1]
    h_last = max(h for s in sizes.values() for h in s)
    rows = table[table["k"] == k].assign(drop=lambda t: t[first] - t[last])
    falls = "; ".join(f"{r['matrix']} {num(r[first])} to {num(r[last])}" for _, r in rows.iterrows())
    names = {label(m): m for m in sizes}

    def shared(matrix: str) -> str:
        m = names[matrix]
        n = sizes[m][h_last]
        both = coverage[m] * n
        return (f"all {n} training models observe every benchmark" if coverage[m] >= 1 - 1e-9 else
                f"a pair of benchmarks shares on average {num(both, '.1f')} of its {n} training models")

    text = paragraph(
        f"Holding out more models leaves fewer to estimate the correlation from. From {first} to {last}, entropy's R² "
        f"at k = {k} goes from {falls}.")
    if len(rows) < 2:
        return text
    lo, hi = rows.sort_values("drop").iloc[0], rows.sort_values("drop").iloc[-1]
    return paragraph(
        text,
        f"{lo['matrix']} loses least ({num(lo['drop'])}): with {pct(h_last)} held out {shared(lo['matrix'])}.",
        f"{hi['matrix']} loses most ({num(hi['drop'])}): {shared(hi['matrix'])}, so most of its correlations rest "
        "on a handful of models and the conditional mean built on them predicts little.")


def _ties_passage(band: Mapping[str, pd.DataFrame], *, holdout: float, k_max: int) -> str:
    k2 = min(5, k_max)
    at1, at2, top = [], [], []
    for name, b in band.items():
        b = b[np.isclose(b["holdout"].astype(float), holdout)]
        r = b.groupby("k")["r2_mean"].agg(["min", "max"])
        at1.append(f"{label(name)} {range_text(r.loc[1, 'min'], r.loc[1, 'max'])}")
        at2.append(f"{label(name)} {range_text(r.loc[k2, 'min'], r.loc[k2, 'max'])}")
        auto = b[(b["variant"] == "auto") & (b["k"] == 1)]["r2_mean"]
        if len(auto) and float(auto.iloc[0]) >= r.loc[1, "max"] - 1e-9:
            top.append(label(name))
    return paragraph(
        "Every diagonal entry of a correlation matrix is 1, so every candidate's first entropy gain is the same: "
        "the first pick is a tie, decided by a rule and not by the data, and every later pick depends on it.",
        f"At {pct(holdout)} holdout the R² at k = 1 spans, over the tie rules run, " + "; ".join(at1) + "."
        + (f" At k = {k2} the span is " + "; ".join(at2) + "." if k2 > 1 else ""),
        (f"The default rule, most central benchmark first, gives the highest R² at k = 1 on {labels(top)}: one "
         "benchmark predicts the rest best when it correlates with all of them." if top else ""),
        "The paper's code takes the argmax over a diagonal that is 1 only up to rounding, so its first pick is set "
        "by the last bits of the estimate (chapter 8 models this); its entropy curve at small k is one of these.")


def prose(*, claims_rows: Sequence[Claim], table: pd.DataFrame, holdouts_r2: pd.DataFrame,
          summary: Mapping[str, pd.DataFrame], band: Mapping[str, pd.DataFrame],
          sizes: Mapping[str, Mapping[float, int]], coverage: Mapping[str, float], n_models: Mapping[str, int],
          datasets: Sequence[str],
          holdout: float, holdouts: Sequence[float], k_max: int, n_folds: int, seed: int, scheme: str, quick: bool,
          tie_breaks: Sequence[str], spread: bool = False) -> PageProse:
    """The page's glued passages, written from the claims, the tables and the bands of this run.

    Parameters
    ----------
    claims_rows : list of Claim
        :func:`claims`.
    table, holdouts_r2 : DataFrame
        :func:`r2_table` and :func:`holdout_table`.
    summary, band : mapping of str to DataFrame
        CV summaries and tie-break bands per matrix.
    sizes, coverage, n_models : mapping
        :func:`training_sizes`, :func:`pair_coverage` and the models per matrix.
    datasets, holdout, holdouts, k_max, n_folds, seed, scheme, quick, tie_breaks :
        The run's parameters (``holdout``: where the tie rules and the table are).
    spread : bool
        Whether other fold seeds were run.

    Returns
    -------
    PageProse
        Passages ``claims``, ``failures_md``, ``run_md``, ``figures_md``, ``table_md``, ``holdout_md``,
        ``ties_md``.
    """
    k_hold = max(k for k in (1, 5, 10) if k <= k_max)
    above = int((table["entropy"] > table["random"]).sum())
    table_md = paragraph(
        f"Mean R² over the folds at {pct(holdout)} holdout; tie rules: the range of entropy's R² over the tie "
        "rules for its first pick; paper: the value Section 5.3 states, a dash where it states none.",
        f"Entropy is above random in {above} of the {len(table)} rows.")
    return PageProse(list(datasets), {
        "claims": claims_table(claims_rows),
        "failures_md": _failures_passage(claims_rows, n_models=n_models, spread=spread, seed=seed, scheme=scheme),
        "run_md": _run_passage(datasets, holdouts=holdouts, n_folds=n_folds, k_max=k_max, seed=seed, scheme=scheme,
                               quick=quick),
        "figures_md": figure_caption(summary, band, holdouts=holdouts, holdout=holdout, n_folds=n_folds,
                                     tie_breaks=tie_breaks),
        "table_md": table_md,
        "holdout_md": _holdout_passage(holdouts_r2, sizes, coverage, k_hold),
        "ties_md": _ties_passage(band, holdout=holdout, k_max=k_max)})
