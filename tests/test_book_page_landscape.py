"""Chapter 1's page module: its claims follow the tables it is given, its tables show no index or missing value."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book.claims import VERDICTS
from benchsel_lib.book.pages import landscape
from benchsel_lib.data import ScoreMatrix


def _matrix(models, benchmarks, observed=None):
    scores = np.arange(len(models) * len(benchmarks), dtype=float).reshape(len(models), len(benchmarks))
    if observed is not None:
        scores[~np.asarray(observed, dtype=bool)] = np.nan
    return ScoreMatrix(scores=scores, models=list(models), benchmarks=list(benchmarks), source="synthetic")


@pytest.fixture(scope="module")
def inputs(shared_data_dir):
    import benchsel_lib as bs
    from benchsel_lib.data.canonical import (
        build_merged,
        merged_discrepancies,
        overlap_network,
        table_canonical,
        table_datasets,
        table_unmatched,
    )
    from benchsel_lib.studies.landscape import node_counts

    t1, t3 = landscape.compare_tables(table_datasets(), table_unmatched())
    nodes, edges = overlap_network()
    released = bs.load_matrix("merged")
    disc = merged_discrepancies(rebuilt=build_merged())
    matrices = {n: bs.load_matrix(n) for n in ("mmlu", "mteb", "merged", "benchpress")}
    return dict(t1=t1, t2=table_canonical(), t3=t3, nodes=nodes, edges=edges, nodes_vs_table3=node_counts(),
                mmlu=matrices["mmlu"], matrices=matrices, mteb_dropped=5,
                rebuild=landscape.merged_rebuild(released, disc), datasets=list(matrices), min_label=20)


def _claims(inputs, **changes):
    args = {k: v for k, v in {**inputs, **changes}.items()
            if k not in ("nodes_vs_table3", "mmlu", "min_label")}
    return {c.claim: c for c in landscape.claims(**args)}


def test_the_mmlu_rows_are_not_reproduced_and_say_why(inputs):
    rows = _claims(inputs)
    mmlu = rows["MMLU rows"]
    assert mmlu.verdict == "not reproduced" and "not public" in mmlu.why
    assert mmlu.run.startswith(f"{inputs['mmlu'].shape[0]:,}")
    assert rows["Merged rebuilt, other columns"].verdict == "reproduced"
    assert rows["Merged rebuilt, MMLU columns"].verdict in ("partly", "not reproduced")
    assert all(c.verdict in VERDICTS for c in rows.values())


def test_a_table_row_that_no_longer_agrees_turns_the_verdict(inputs):
    t1 = inputs["t1"].copy()
    t1.loc["helm", "M"] = 31
    t1, t3 = landscape.compare_tables(t1, inputs["t3"])
    row = _claims(inputs, t1=t1, t3=t3)["Tables 1, 3 except MMLU"]
    assert row.verdict == "partly" and row.run == "17 of 18 equal"


def test_matrices_left_out_of_the_run_give_not_run_rows(inputs):
    rows = _claims(inputs, datasets=["merged"], matrices={"merged": inputs["matrices"]["merged"]}, mteb_dropped=None)
    assert rows["MTEB matrix"].verdict == "not run" and "MTEB was not among" in rows["MTEB matrix"].why
    assert rows["BenchPress matrix"].verdict == "not run"
    assert rows["Merged matrix"].verdict == "reproduced" and rows["Merged matrix"].why == "rows: Table 2's models"


def test_a_matrix_of_another_shape_is_not_reproduced():
    m = _matrix([f"m{i}" for i in range(10)], [f"b{j}" for j in range(56)])
    row = landscape._matrix_claim("mteb", m)
    assert row.verdict == "not reproduced" and "10 of the paper's 263" in row.why


def test_the_merged_rebuild_is_counted_apart_in_and_outside_the_mmlu_columns():
    released = _matrix(["a", "b", "c"], ["mmlu/x", "mmlu/y", "helm/z"])
    disc = pd.DataFrame({"model": ["a", "a", "b"], "benchmark": ["mmlu/x", "mmlu/y", "mmlu/x"],
                         "collection": ["mmlu"] * 3, "status": ["unreproducible", "unreproducible", "value"],
                         "released": [0.1, 0.2, 0.3], "rebuilt": [np.nan, np.nan, 0.35], "reason": ["r"] * 3})
    r = landscape.merged_rebuild(released, disc)
    assert (r["n_mmlu_obs"], r["n_mmlu_reproduced"]) == (6, 3)
    assert (r["n_other_obs"], r["n_other_reproduced"]) == (3, 3)
    assert (r["n_models_unrep"], r["n_models_value"]) == (1, 1) and r["max_diff"] == pytest.approx(0.05)
    view = landscape.rebuild_view(disc, top=5)
    assert list(view["Model"]) == ["a", "b"] and list(view["entries"]) == [2, 1]
    assert np.isnan(view.loc[0, "largest difference"]) and view.loc[1, "why"] == "other run"


def test_single_benchmark_drops_counts_only_dropped_models_with_one_observation():
    raw = _matrix(["a", "b", "c", "d"], ["x", "y"], observed=[[1, 1], [1, 0], [0, 0], [1, 1]])
    kept = _matrix(["a", "d"], ["x", "y"])
    assert landscape.single_benchmark_drops(raw, kept) == 2
    assert landscape.single_benchmark_drops(raw, _matrix(["a", "b", "d"], ["x", "y"])) == 1


def test_the_shown_tables_have_a_named_first_column_and_no_missing_paper_value(inputs):
    views = [landscape.table1_view(inputs["t1"]), landscape.table2_view(inputs["t2"]),
             landscape.table3_view(inputs["t3"]), landscape.nodes_view(inputs["nodes_vs_table3"], inputs["t3"]),
             landscape.matrices_table(inputs["matrices"]), landscape.sources_view(inputs["mmlu"])]
    for v in views:
        assert v.columns[0] in ("Collection", "Model", "Matrix", "Source file")
    for v in views[:1] + views[2:]:
        assert not v.isna().any().any()
    assert len(views[1]) == len(inputs["t2"]) and set(views[1]["OL2"]) <= {"✓", ""}


def test_the_prose_names_no_parameter_and_explains_the_node_counts(inputs):
    p = landscape.prose(**inputs)
    text = " ".join(p.passages.values())
    assert "$" not in text and "min_label" not in text and "top_models" not in text and "nan" not in text
    assert "| Verdict |" in p["claims"]
    assert "edges of at least 20 shared models" in p["fig8_caption"]
    assert "point to one leaderboard row" in p["network_md"]
    assert p.matrices == ["mmlu", "mteb", "merged", "benchpress"]
