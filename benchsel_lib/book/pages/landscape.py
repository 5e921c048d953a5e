"""Chapter 1: the benchmark landscape and the experiment matrices (Appendices D and E)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..notebook import and_join
from ..prose import PageProse, bullets, code, count, label, labels, num, paragraph

__all__ = ["PAPER_SHAPES", "compare_tables", "matrices_table", "merged_rebuild", "prose"]

#: The paper's experiment matrices: (models, benchmarks, observed fraction); Section 5 and Appendix I.
PAPER_SHAPES: dict[str, tuple[int, int, float]] = {
    "mmlu": (5452, 57, 1.0), "mteb": (263, 56, 0.773), "merged": (118, 114, 0.311), "benchpress": (83, 49, 0.338)}
#: Matrices whose data the page computes whatever ``datasets`` says (Tables 1-3 and the two rebuilds).
ALWAYS = ("mmlu", "mteb", "merged")


def compare_tables(t1: pd.DataFrame, t3: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tables 1 and 3 with an ``as paper`` column (M, N and % missing; total and unmatched)."""
    t1 = t1.assign(**{"as paper": (t1["M"] == t1["paper_M"]) & (t1["N"] == t1["paper_N"])
                      & np.isclose(t1["pct_missing"], t1["paper_pct_missing"], atol=0.05)})
    t3 = t3.assign(**{"as paper": (t3["total"] == t3["paper_total"]) & (t3["unmatched"] == t3["paper_unmatched"])})
    return t1, t3


def matrices_table(matrices: Mapping[str, Any]) -> pd.DataFrame:
    """Shape, observed fraction and per-column coverage of each experiment matrix, beside the paper's."""
    rows = []
    for name, m in matrices.items():
        pm, pn, pobs = PAPER_SHAPES.get(name, (np.nan, np.nan, np.nan))
        counts = m.observed_counts(axis=0)
        rows.append({"matrix": label(name), "M": m.shape[0], "N": m.shape[1],
                     "observed": round(m.observed_fraction, 4), "min obs. per column": int(counts.min()),
                     "median obs. per column": float(np.median(counts)), "paper M": pm, "paper N": pn,
                     "paper observed": pobs, "source": m.source})
    return pd.DataFrame(rows).set_index("matrix")


def merged_rebuild(released: Any, disc: pd.DataFrame) -> dict[str, Any]:
    """Counts of the Merged rebuild: observed, reproduced, unreproducible and differing entries and models."""
    n_obs = int(released.observed.sum())
    unrep = disc["status"] == "unreproducible"
    value = disc["status"] == "value"
    return {"n_obs": n_obs, "n_reproduced": n_obs - int(unrep.sum()) - int(value.sum()),
            "pct_reproduced": 100 * (n_obs - int(unrep.sum()) - int(value.sum())) / n_obs,
            "n_unrep": int(unrep.sum()), "n_value": int(value.sum()),
            "n_models_unrep": int(disc.loc[unrep, "model"].nunique()),
            "n_models_value": int(disc.loc[value, "model"].nunique()),
            "n_unrep_outside_mmlu": int((unrep & (disc["collection"] != "mmlu")).sum()),
            "n_value_outside_mmlu": int((value & (disc["collection"] != "mmlu")).sum())}


def _matrix_sentences(table: pd.DataFrame, names: Sequence[str]) -> tuple[str, list[str], list[str]]:
    """Sentence on the experiment matrices of this run, and which match / differ from the paper's shape."""
    parts, same, other = [], [], []
    for name in names:
        r = table.loc[label(name)]
        parts.append(f"{label(name)} {r['M']} × {r['N']} with {num(100 * r['observed'], '.1f')}% observed")
        pm, pn, pobs = PAPER_SHAPES[name]
        (same if (r["M"], r["N"]) == (pm, pn) and abs(r["observed"] - pobs) < 0.005 else other).append(name)
    return "; ".join(parts), same, other


def prose(
    *,
    t1: pd.DataFrame,
    t2: pd.DataFrame,
    t3: pd.DataFrame,
    nodes: pd.DataFrame,
    edges: pd.DataFrame,
    nodes_vs_table3: pd.DataFrame,
    mmlu: Any,
    matrices: pd.DataFrame,
    rebuild: Mapping[str, Any],
    datasets: Sequence[str],
) -> PageProse:
    """The page's passages, written from its tables.

    Parameters
    ----------
    t1, t3 : DataFrame
        Tables 1 and 3 with their ``as paper`` columns (:func:`compare_tables`).
    t2 : DataFrame
        Table 2 (``benchsel_lib.table_canonical``).
    nodes, edges : DataFrame
        Figure 8 (``benchsel_lib.overlap_network``).
    nodes_vs_table3 : DataFrame
        :func:`benchsel_lib.studies.landscape.node_counts`.
    mmlu : ScoreMatrix
        This project's MMLU matrix.
    matrices : DataFrame
        :func:`matrices_table` of the matrices in ``datasets``.
    rebuild : mapping
        :func:`merged_rebuild`.
    datasets : list of str
        The experiment matrices this run describes.

    Returns
    -------
    PageProse
        Passages ``this_book``, ``differ``, ``t1_exceptions``, ``mteb_links``, ``matrices_md``, ``network_md``,
        ``network_links``, ``findings``.
    """
    ran = list(dict.fromkeys([*ALWAYS, *datasets]))
    n1, m1 = len(t1), int(t1["as paper"].sum())
    n3, m3 = len(t3), int(t3["as paper"].sum())
    off1 = [str(x) for x in t1.loc[~t1["as paper"], "label"]]
    off3 = [str(x) for x in t3.loc[~t3["as paper"], "label"]]
    mm = f"{mmlu.shape[0]} × {mmlu.shape[1]}"
    shape_text, same, other = _matrix_sentences(matrices, datasets)
    pct_rebuilt = num(rebuild["pct_reproduced"], ".1f")
    outside = rebuild["n_unrep_outside_mmlu"] + rebuild["n_value_outside_mmlu"]
    outside = "none" if outside == 0 else str(outside)

    # Figure 8 against Table 3
    nv = nodes_vs_table3
    diff = nv[nv["canonical_models"] != nv["rows_in_mirror"]]
    doubled = nv[nv["canonical_models"] > nv["named_rows"]]
    missing = nv[nv["named_rows"] > nv["rows_in_mirror"]]
    extra = int((nv["canonical_models"] - nv["named_rows"]).sum())
    why = []
    if len(doubled):
        example = doubled["double_named"].iloc[0].split("; ")[0]
        why.append(f"the mapping gives one leaderboard row two canonical names in {labels_of(doubled)} "
                   f"({count(extra, 'extra name')}, e.g. {example})")
    if len(missing):
        why.append("; ".join(f"{r.label}'s canonical models name {r.named_rows} rows, of which the mirrored table "
                             f"holds {r.rows_in_mirror}" for r in missing.itertuples()))
    if len(diff):
        network_md = paragraph(
            f"Figure 8 counts canonical models, Table 3 distinct rows of each collection's own table, so the "
            f"node numbers differ from Table 3's `matched` column for {labels_of(diff)} "
            f"({'; '.join(f'{r.label} {r.canonical_models} vs {r.rows_in_mirror}' for r in diff.itertuples())}): "
            + "; ".join(why) + ".")
        short = paragraph(
            f"Figure 8's node numbers count canonical models and Table 3's `matched` column leaderboard rows, so "
            f"they differ for {labels_of(diff)}:",
            (f"{count(extra, 'canonical name')} share{'s' if extra == 1 else ''} a row with another name"
             if extra else "") + ("; " if extra and len(missing) else "")
            + "; ".join(f"{r.label}'s mirror holds {r.rows_in_mirror} of the {r.named_rows} rows its canonical "
                        f"models name" for r in missing.itertuples()) + ".")
    else:
        network_md = short = "Figure 8's node numbers equal Table 3's `matched` column for every collection."

    strongest = edges.iloc[0]
    lab = dict(zip(nodes.index, nodes["label"]))
    thin = nodes.sort_values(["n_models", "label"]).head(2)
    weakest = thin.iloc[0]
    n_mteb = int(t2["mteb"].sum()) if "mteb" in t2.columns else 0
    mteb_alone = n_mteb == 0
    links = [f"{lab[e.source]}–{lab[e.target]} ({count(int(e.shared), 'shared model') if i == 0 else e.shared})"
             for i, e in enumerate(edges.head(3).itertuples())]
    thinnest = [f"{r.label} ({int(r.n_models)})" for r in thin.itertuples()]
    network_links = paragraph(
        f"The strongest {'links are' if len(links) > 1 else 'link is'} {and_join(links)};"
        if links else "No two collections share a model;",
        f"{and_join(thinnest)} hold the fewest canonical models.",
        "A model observes only the collections that ran it, so the Merged matrix that joins them is mostly missing.")
    t1_exceptions = ""
    if off1:
        keys = [str(x) for x in t1.index[~t1["as paper"]]]
        t1_exceptions = (f"The exception{'s are' if len(keys) > 1 else ' is'} {and_join(off1)}"
                         + (": the paper's 5,452 MMLU models come from the Open LLM Leaderboard v1 result dump, which "
                            "the public mirror does not hold (details below)." if "mmlu" in keys else
                            " (see the table)."))
    mteb_links = ("No MTEB model (text-embedding models) matches a model of any LLM leaderboard, which is why MTEB "
                  "stays a separate matrix." if mteb_alone else
                  f"{count(n_mteb, 'canonical model')} {'has' if n_mteb == 1 else 'have'} an MTEB entry.")
    this_book = paragraph(
        f"This run describes the experiment {'matrix' if len(datasets) == 1 else 'matrices'} {labels(datasets)} "
        f"(parameter {code('datasets')}); Tables 1-3, Figure 8 and the MMLU and Merged rebuilds always cover every "
        f"collection.",
        f"{m1} of {n1} Table 1 rows and {m3} of {n3} Table 3 rows match the paper exactly; Table 2 has "
        f"{len(t2)} canonical models and Figure 8 has {count(len(edges), 'edge')}; {pct_rebuilt}% of Merged's observed "
        f"entries are rebuilt exactly from the per-leaderboard files.")
    differ = paragraph(
        f"MMLU is {mm} here: the paper's 5,452 models come from the Open LLM Leaderboard v1 result dump, which "
        f"the mirror does not hold." if mmlu.shape[0] != PAPER_SHAPES["mmlu"][0] else "",
        f"Of the Merged entries that cannot be rebuilt ({rebuild['n_unrep']} unreproducible, {rebuild['n_value']} "
        f"with another value), {outside} lie outside the MMLU columns; every experiment uses the released Merged "
        f"matrix, so they do not affect later chapters." if rebuild["n_unrep"] + rebuild["n_value"] else "",
        short)

    found = [
        paragraph(f"**Tables 1 and 3.** {m1} of {n1} Table 1 rows and {m3} of {n3} Table 3 rows agree with the paper"
                  + (f"; the others are {', '.join(dict.fromkeys(off1 + off3))}." if off1 or off3 else "."),
                  f"The paper's MMLU has 5,452 models (5,454 before deduplication); the public mirror allows {mm}."
                  if mmlu.shape[0] != PAPER_SHAPES["mmlu"][0] else ""),
        paragraph(f"**Table 2 and Figure 8.** Table 2 has {len(t2)} canonical models (the paper: 118, the rows of "
                  f"Merged); the best-covered model appears in {int(t2['n'].max())} collections.",
                  f"The strongest link of Figure 8 is {lab[strongest['source']]}–{lab[strongest['target']]} "
                  f"({count(int(strongest['shared']), 'shared model')}), the thinnest node "
                  f"{weakest['label']} ({count(int(weakest['n_models']), 'canonical model')}), and "
                  + ("MTEB shares no model with any other collection, as in the paper." if mteb_alone else
                     f"{count(n_mteb, 'canonical model')} link MTEB to the LLM leaderboards (the paper: none)."),
                  short),
        paragraph(f"**The experiment matrices.** {shape_text}.",
                  f"{labels(same)} {'has' if len(same) == 1 else 'have'} the paper's shape and observed fraction."
                  if same else "",
                  f"{labels(other)} {'differs' if len(other) == 1 else 'differ'} from the paper's (see the table)."
                  if other else ""),
        paragraph(f"**Merged from its sources.** {pct_rebuilt}% of the released matrix's {rebuild['n_obs']} observed "
                  f"entries are rebuilt exactly;",
                  f"of the {rebuild['n_unrep']} unreproducible and {rebuild['n_value']} differing entries, "
                  f"{outside} lie outside the `mmlu/*` columns; the MMLU ones belong to models missing from, or run "
                  f"differently in, the mirrored MMLU tables."),
    ]
    return PageProse(ran, {"this_book": this_book, "differ": differ, "t1_exceptions": t1_exceptions,
                           "mteb_links": mteb_links, "matrices_md": _matrices_md(shape_text, same, other),
                           "network_md": network_md, "network_links": network_links, "findings": bullets(found)})


def labels_of(rows: pd.DataFrame) -> str:
    """``"MMLU and Open LLM v2"`` from a table with a ``label`` column."""
    return and_join(str(x) for x in rows["label"])


def _matrices_md(shape_text: str, same: Sequence[str], other: Sequence[str]) -> str:
    return paragraph(
        f"{shape_text}.",
        f"{labels(same)} {'has' if len(same) == 1 else 'have'} the paper's shape and observed fraction." if same else "",
        f"{labels(other)} {'is' if len(other) == 1 else 'are'} not the paper's matrix"
        + (" (MMLU: see the next section)." if "mmlu" in other else ".") if other else "",
        f"A column observed for only a few models (see {code('min obs. per column')}) has a meaningless estimated "
        f"correlation and normality test (chapters 5 and 7).")
