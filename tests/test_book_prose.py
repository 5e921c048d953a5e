"""benchsel_lib.book.prose and the chapter modules of benchsel_lib.book.pages: text written from results."""
from __future__ import annotations

import math

import numpy as np
import pytest

from benchsel_lib.book import prose


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
