"""benchsel_lib.book.prose and the chapter modules of benchsel_lib.book.pages: text written from results."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book import prose
from benchsel_lib.book.pages import benchpress, em, entropy_mi, greedy, logit, pipelines


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


def _summary(holdouts=(0.1, 0.5), ks=(1, 2, 3, 4, 5), r2=None):
    rows = []
    for h in holdouts:
        for meth in ("entropy", "random"):
            for k in ks:
                v = (r2 or {}).get((h, meth, k), 0.5 + 0.05 * k - (0.1 if meth == "random" else 0) - h / 2)
                rows.append({"method": meth, "holdout": h, "k": k, "r2_mean": v, "r2_sd": 0.05,
                             "residual_fraction_mean": 0.3})
    return pd.DataFrame(rows)


def _band(holdout, ks=(1, 2, 3, 4, 5)):
    return pd.DataFrame([{"variant": v, "holdout": holdout, "k": k, "r2_mean": 0.5 + 0.05 * k + d}
                         for v, d in (("auto", 0.0), ("argmax", -0.1)) for k in ks])


def test_the_em_page_calls_a_singular_unfloored_covariance_unbounded_instead_of_quoting_inf():
    finite = em._unfloored_sentence(3.7e-11, 8.7e11)
    assert "3.7e-11" in finite and "8.7e+11" in finite
    singular = em._unfloored_sentence(-3.4e-13, math.inf)
    assert "-3.4e-13" in singular and "singular" in singular and "unbounded" in singular
    assert "inf" not in singular.replace("unbounded", "")


def test_the_tie_break_band_is_compared_with_the_curve_at_its_own_holdout():
    assert greedy.table_holdout([0.2], 0.1) == 0.2 and greedy.table_holdout([0.1, 0.5], 0.4) == 0.5
    summary = {"merged": _summary(holdouts=(0.2,))}
    with pytest.raises(ValueError, match="no rows at holdout 0.2"):
        greedy.r2_table(summary, {"merged": _band(0.1)}, holdout=0.2, k_max=5)
    table = greedy.r2_table(summary, {"merged": _band(0.2)}, holdout=0.2, k_max=5)
    assert table["paper"].isna().all() and list(table["k"]) == [1, 5]


def test_the_holdout_effect_is_computed_not_asserted():
    r2 = {(0.1, "entropy", 5): 0.455, (0.5, "entropy", 5): 0.351}
    ht = greedy.holdout_table({"merged": _summary(r2=r2)}, k=5)
    text = greedy._holdout_sentence(ht, 5)
    assert "Merged 0.455 at 10%, 0.351 at 50% (−23%)" in text


def test_the_greedy_page_speaks_only_of_the_matrices_and_holdout_it_ran():
    summary = {"benchpress": _summary(holdouts=(0.2,))}
    table = greedy.r2_table(summary, {"benchpress": _band(0.2)}, holdout=0.2, k_max=5)
    page = greedy.prose(table=table, holdouts_r2=greedy.holdout_table(summary, k=5), datasets=["benchpress"],
                        holdout=0.2, band_holdout=0.1, holdouts=[0.2], k_max=5, n_folds=2, seed=1, quick=True)
    text = " ".join(page.passages.values())
    assert "MMLU and MTEB and Merged" not in text and "2 folds" in text and "20% holdout" in text
    assert "MMLU" not in page["findings"] and "Merged" not in page["findings"]
    assert "nearest to `band_holdout` = 10%" in page["table_md"]


def test_the_logit_page_states_the_papers_direction_per_matrix_it_ran():
    s = pd.DataFrame([{"method": "mi", "k": 5, "r2_mean": v} for v in (0.5,)])
    table = logit.table5({"mmlu": s}, {"mmlu": s.assign(r2_mean=0.4)}, k=5, holdout=0.1)
    assert table.loc["MMLU", "raw (paper)"] == 0.91 == table.loc["MMLU", "logit (paper)"]

    class Spec:
        def n_components(self, level):
            return 2

    clip = pd.DataFrame({"columns with max <= 0": [0], "columns with negative scores": [0]}, index=["MMLU"])
    page = logit.prose(clipping=clip, spec_raw={"mmlu": Spec()}, spec_logit={"mmlu": Spec()}, table=table,
                       sum_logit={"mmlu": s}, datasets=["mmlu"], methods=["mi"], k=5, k_max=5, n_folds=2,
                       holdout=0.1, seed=0, config="released", quick=True)
    assert "equal on MMLU" in page["findings"] and "every matrix" not in page["findings"]
    assert "MTEB" not in page["findings"]


def test_the_benchpress_page_compares_with_the_paper_only_at_the_papers_k_and_holdout():
    s = pd.DataFrame([{"method": m, "holdout": 0.2, "k": 3, "r2_mean": v, "r2_sd": 0.1, "n_folds": 2,
                       "n_scored": 2}
                      for m, v in (("entropy", 0.1), ("mi", -0.2), ("random", 0.2))])
    table = benchpress.config_table({"early": s}, holdout=0.2, k=3)
    assert table["paper"].isna().all()
    page = benchpress.prose(table=table, spread=benchpress.spread_table({}, holdout=0.2, k=3), configs=["early"],
                            n_models=83, n_benchmarks=49, holdout=0.2, holdouts=[0.2], k_table=3, k_max=4, n_folds=2,
                            seed=1, scheme="paper", estimator="auto", quick=True)
    assert "not compared" in page["vs_paper_md"] and "differ by at most" not in page["findings"]
    assert "41 or 42 validation models" in page["differ"]


def test_the_pipeline_verdicts_are_one_block_list_and_the_conclusion_follows_the_table():
    summary = pd.DataFrame([
        dict(matrix="MMLU", k=5, reference=0.95, baseline=0.91, best_fixed="mi+ridge", best_fixed_r2=0.94, diff=0.01,
             diff_se=0.005, diff_baseline=0.04, diff_baseline_se=0.01, n_cells=10, vs_baseline="better"),
        dict(matrix="Merged", k=5, reference=0.4, baseline=0.41, best_fixed="mi+blend", best_fixed_r2=0.42,
             diff=-0.02, diff_se=0.03, diff_baseline=-0.01, diff_baseline_se=0.03, n_cells=10, vs_baseline="level")])
    cov = pd.DataFrame({"nominal": [0.9], "coverage": [0.88]})
    page = pipelines.prose(summary=summary, coverage=cov, observed={"MMLU": 1.0, "Merged": 0.311},
                           datasets=["mmlu", "merged"], seeds=[42], n_folds=10, ks=[5], k_max=10,
                           strategies=["mi"], predictors=["gaussian"], estimator="auto", quick=False)
    lines = page["verdicts_md"].split("\n")
    assert len(lines) == 2 and all(line.startswith("- **") for line in lines)
    assert "better at every k of the table on MMLU (100% observed)" in page["findings"]
    assert "hard to beat" not in page["findings"] and "$" not in page["findings"]


def test_mardia_on_a_matrix_without_complete_rows_gives_an_empty_table_and_a_note(shared_data_dir):
    import benchsel_lib as bs
    from benchsel_lib.book.pages import normality

    table, notes = normality.mardia_table({"merged": bs.load_matrix("merged")}, alpha=0.05)
    assert table.empty and list(table.columns) == normality.MARDIA_COLUMNS and set(notes) == {"merged"}


def test_figure_8_node_counts_are_reconciled_with_table_3(shared_data_dir):
    import benchsel_lib as bs
    from benchsel_lib.studies.landscape import node_counts

    nodes, _ = bs.overlap_network()
    t3 = bs.table_unmatched()
    nc = node_counts()
    assert (nc["canonical_models"] == nodes.loc[nc.index, "n_models"]).all()
    assert (nc["rows_in_mirror"] == t3.loc[nc.index, "matched"]).all()
    assert (nc["canonical_models"] >= nc["named_rows"]).all() and (nc["named_rows"] >= nc["rows_in_mirror"]).all()
    assert np.isfinite(nc["canonical_models"]).all()


def _objective_summary(method, r2_of_k, resid_of_k, ks=(1, 3, 5, 10)):
    return pd.DataFrame([{"method": method, "k": k, "r2_mean": r2_of_k(k), "residual_fraction_mean": resid_of_k(k)}
                         for k in ks])


def test_the_third_objective_is_credited_only_with_the_rows_it_wins():
    paper = pd.concat([_objective_summary("entropy", lambda k: 0.50 + 0.02 * k, lambda k: 0.50 - 0.03 * k),
                       _objective_summary("mi", lambda k: 0.52 + 0.02 * k, lambda k: 0.52 - 0.03 * k)])
    wins = _objective_summary("trace", lambda k: 0.53 + 0.02 * k, lambda k: 0.49 - 0.03 * k)
    table = entropy_mi.trace_table({"mteb": paper}, {"mteb": wins}, k_max=5)
    assert table["k"].tolist() == [1, 3, 5] and table["R2 trace"].tolist() == pytest.approx([0.55, 0.59, 0.63])
    text = entropy_mi.trace_passage(table)
    assert "highest mean R² of the three objectives in 2 of the 2" in text and "than MI in 2 (by 0.01)" in text
    assert "surrogate gap is then a gap between entropy" in text
    loses = _objective_summary("trace", lambda k: 0.51 + 0.02 * k, lambda k: 0.55 - 0.03 * k)
    text = entropy_mi.trace_passage(entropy_mi.trace_table({"mteb": paper}, {"mteb": loses}, k_max=5))
    assert "in 0 of the 2" in text and "than MI in 0," in text and "lowest training residual variance in 0" in text
    assert "surrogate gap" not in text
    assert "not compared" in entropy_mi.trace_passage(entropy_mi.trace_table({"mteb": paper}, {"mteb": wins},
                                                                              k_max=1))
