"""benchsel_lib.book.prose and the chapter modules of benchsel_lib.book.pages: text written from results."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book import prose
from benchsel_lib.book.pages import benchpress, logit, pipelines


@pytest.mark.parametrize("bad", [float("nan"), None, math.inf, "n/a"])
def test_a_missing_number_cannot_be_written_into_a_sentence(bad):
    with pytest.raises(ValueError, match="value"):
        prose.num(bad)
    with pytest.raises(ValueError):
        prose.pct(bad)
    with pytest.raises(ValueError):
        prose.signed(bad)


def test_numbers_counts_and_ranges_read_as_written():
    assert prose.num(0.4551) == "0.46" and prose.num(7.0, "d") == "7" and prose.signed(-0.031) == "-0.03"
    assert prose.pct(0.1) == "10%" and prose.pct(0.2345, 1) == "23.4%"
    assert prose.count(1, "fold") == "1 fold" and prose.count(3, "fold") == "3 folds"
    assert prose.count(11141, "shared entry", "shared entries") == "11,141 shared entries"
    assert prose.range_text(0.301, 0.304) == "0.30" and prose.range_text(0.3, 0.45) == "0.30 to 0.45"
    assert prose.cap("the MMLU matrix") == "The MMLU matrix"
    assert prose.bullets(["a.", "", "b."]) == "- a.\n- b."
    assert prose.paragraph("One.", "", " Two. ") == "One. Two."
    with pytest.raises(ValueError, match="whole number"):
        prose.num(2.5, "d")


def test_the_run_line_names_each_skipped_matrix_once_as_not_run():
    line = prose.run_line(["mteb"], described=["mmlu", "mteb", "merged"], details=["3 folds"], quick=True)
    assert line == ("This run: MTEB (3 folds, quick mode); MMLU and Merged were not run (parameter `datasets`).")
    assert prose.run_line(["mmlu", "mteb"], described=["mmlu"]) == "This run: MMLU and MTEB."
    assert "was not run" in prose.run_line(["mmlu"], described=["mmlu", "merged"])


def test_glued_passages_may_not_hold_tex():
    with pytest.raises(ValueError, match="TeX"):
        prose.glue_prose({"x": "mean $R^2$"})
    with pytest.raises(ValueError, match="unknown matrices"):
        prose.glue_prose({}, matrices=["mmlu", "own"])


def test_the_logit_page_states_the_papers_direction_per_matrix_it_ran():
    s = pd.DataFrame([{"dataset": "MMLU", "space": sp, "method": "mi", "k": 5, "r2_mean": v, "r2_sd": 0.01}
                      for sp, v in (("raw", 0.5), ("logit", 0.4))])
    table = logit.table5(s, datasets=["mmlu"], k=5, holdout=0.1, n_folds=10)
    assert table.loc[0, "raw, paper"] == 0.91 == table.loc[0, "logit, paper"]

    class Spec:
        residual = np.array([0.5, 0.3, 0.2, 0.1, 0.05])

        def n_components(self, level):
            return 2

    clip = pd.DataFrame({"Matrix": ["MMLU"], "columns with max ≤ 0": [0], "entries clipped to the floor": [0]})
    page = logit.prose(summary=s, spec_raw={"mmlu": Spec()}, spec_logit={"mmlu": Spec()}, clipping=clip,
                       negative={"mmlu": []}, folds={}, datasets=["mmlu"], methods=["mi"], k_table=5, n_folds=10,
                       holdout=0.1, seed=42, scheme="paper")
    assert "MI R², raw → logit, MMLU" in page["failures_md"]  # lower here (-0.10), equal in the paper
    assert "MTEB" not in page["direction_md"] and "MTEB" not in page["curves_md"]


def test_the_benchpress_page_compares_with_the_paper_only_at_the_papers_k_and_holdout():
    s = pd.DataFrame([{"method": m, "holdout": 0.2, "k": 3, "r2_mean": v, "r2_sd": 0.1, "n_folds": 2,
                       "n_scored": 2}
                      for m, v in (("entropy", 0.1), ("mi", -0.2), ("random", 0.2))])
    table = benchpress.config_table({"early": s}, holdout=0.2, k=3)
    assert table["paper"].isna().all()
    rows = benchpress.claim_rows({"early": s}, {}, holdouts=[0.2], k_max=4, n_folds=2)
    assert [r.verdict for r in rows].count("not run") == len(rows) - 1  # only "random competitive" is checked
    page = benchpress.prose(rows=rows, table=table, spread=benchpress.spread_table({}, holdout=0.2, k=3),
                            configs=["early"], holdout=0.2, holdouts=[0.2], k_table=3, k_max=4, n_folds=2, seed=1,
                            scheme="paper", estimator="auto", n_draws=0)
    assert "not the paper's" in page["failures_md"] and "released" not in page["others_md"]


def test_the_pipeline_page_names_the_scoring_of_every_comparison_it_states():
    peers = pd.DataFrame(dict(matrix="MMLU", k=[5, 5], peer=["mi+knn", "mi"], reference_r2=0.95,
                              peer_r2=[0.94, 0.93], diff=[0.01, 0.02], diff_se=[0.004, 0.004]))
    shared = peers.assign(reference_r2=0.951, peer_r2=[0.958, 0.95], diff=[-0.007, 0.001],
                          diff_se=[0.002, 0.002], n_shared=[11141, 11141])
    text = pipelines.peers_passage(peers, shared=shared)
    assert "in the protocol's R², the recommended pipeline is at or above the other method in 2 of 2" in text
    assert ("It is clearly below `mi+knn` on MMLU at *k* = 5 (0.951 against 0.958, -0.007 ± 0.002, on 11,141 "
            "shared entries) on the same entries.") in text
    assert "In all of these it is ahead in the protocol's R², so its lead there on MMLU comes from" in text
    assert "$" not in text


def test_mardia_on_a_matrix_without_complete_rows_gives_an_empty_table_and_a_note(shared_data_dir):
    import benchsel_lib as bs
    from benchsel_lib.book.pages import normality

    table, notes = normality.mardia_table({"merged": bs.load_matrix("merged")}, alpha=0.05)
    assert table.empty and list(table.columns) == normality.MARDIA_COLUMNS and set(notes) == {"merged"}


def test_figure_8_node_counts_are_reconciled_with_table_3(shared_data_dir):
    from benchsel_lib.data.canonical import overlap_network, table_unmatched
    from benchsel_lib.studies.landscape import node_counts

    nodes, _ = overlap_network()
    t3 = table_unmatched()
    nc = node_counts()
    assert (nc["canonical_models"] == nodes.loc[nc.index, "n_models"]).all()
    assert (nc["rows_in_mirror"] == t3.loc[nc.index, "matched"]).all()
    assert (nc["canonical_models"] >= nc["named_rows"]).all() and (nc["named_rows"] >= nc["rows_in_mirror"]).all()
    assert np.isfinite(nc["canonical_models"]).all()
