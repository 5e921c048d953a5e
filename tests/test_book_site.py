"""The checks of the rendered pages, the claims tables and the table display, on small pages made here."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book import site
from benchsel_lib.book.claims import TOLERANCES, Claim, claims_table, not_run, verdict
from benchsel_lib.book.tables import table

LONG = "Entropy is above random in nine of the twelve rows of the table at ten percent holdout."


def _page(body: str) -> str:
    return f"<html><body><nav><p>{LONG}</p></nav><article>{body}</article></body></html>"


def _rules(problems) -> list[str]:
    return sorted(p.rule for p in problems)


def test_a_long_sentence_said_twice_on_a_page_is_reported_once():
    html = _page(f"<p>{LONG} Short one.</p><ul><li>{LONG}</li></ul><p>Short one.</p>")
    problems = site.check_page("p.html", html)
    assert _rules(problems) == ["repeated-sentence"] and "nine of the twelve" in problems[0].message


def test_sentences_in_code_navigation_and_printed_output_do_not_count():
    printed = (f"<div class='cell_output docutils container'><div class='output text_plain'><p>{LONG}</p></div>"
               f"<div class='output text_html'><p>{LONG}</p></div></div>")
    html = _page(f"<p>{LONG}</p><pre>{LONG}</pre><div class='cell_input'><p>{LONG}</p></div>{printed}")
    assert site.check_page("p.html", html) == []


def test_markdown_outputs_are_prose_the_reader_sees():
    """A note under a sentence (a Markdown output) that repeats the sentence, or names code, is reported."""
    note = f"<div class='cell_output docutils container'><blockquote><div><p>{LONG}</p></div></blockquote></div>"
    assert site.page_prose(_page(note)) == [LONG]
    assert _rules(site.check_page("p.html", _page(f"<p>{LONG}</p>{note}"))) == ["repeated-sentence"]
    number = "<div class='cell_output docutils container'><p>The mean is 0.91 at k_max.</p></div>"
    assert _rules(site.check_page("p.html", _page(number), parameters=["k_max"])) == ["code-name"]


def test_a_parameter_name_in_prose_is_reported_and_inline_code_only_on_paper_chapters():
    bare = _page("<p>We draw ablation_models models.</p>")
    assert _rules(site.check_page("p.html", bare, parameters=["ablation_models"])) == ["code-name"]
    inline = _page("<p>We draw <code>ablation_models</code> models.</p>")
    assert site.check_page("p.html", inline, parameters=["ablation_models"]) == []
    assert _rules(site.check_page("p.html", inline, parameters=["ablation_models"],
                                  teaches_api=False)) == ["code-name"]
    assert site.check_page("p.html", _page("<p>Call <code>cross_validate</code>.</p>"),
                           names=["cross_validate"]) == []
    assert _rules(site.check_page("p.html", _page("<p>Call cross_validate here.</p>"),
                                  names=["cross_validate"])) == ["code-name"]


def test_a_name_inside_a_benchmark_name_or_a_path_is_not_a_code_name():
    html = _page("<p>The subject high_school_k_max_test and notebooks/k_max.ipynb.</p>")
    assert site.check_page("p.html", html, parameters=["k_max"]) == []


def test_cut_tables_raw_indexes_and_missing_values_are_reported():
    cut = _page("<table><tbody><tr><td>1</td></tr><tr><td>...</td></tr></tbody></table><p>64 rows × 9 columns</p>")
    assert _rules(site.check_page("p.html", cut)) == ["truncated-table", "truncated-table"]
    index = _page("<table><tbody><tr><th>mmlu</th><td>1</td></tr></tbody></table>")
    assert _rules(site.check_page("p.html", index)) == ["raw-index"]
    for bad in ("nan", "NaN", "None", "-0.00", "-0.000"):
        page = _page(f"<table><tbody><tr><td>{bad}</td></tr></tbody></table>")
        assert _rules(site.check_page("p.html", page)) == ["missing-value"], bad
    assert site.check_page("p.html", _page("<table><tbody><tr><td>-0.01</td></tr></tbody></table>")) == []


def test_a_paper_chapter_needs_a_claims_table_before_its_first_figure():
    claims = "<table><thead><tr><th>Claim</th><th>Verdict</th></tr></thead><tbody><tr><td>a</td></tr></tbody></table>"
    figure = "<img src='f.png'>"
    assert site.check_page("p.html", _page(claims + figure), needs_claims=True) == []
    late = site.check_page("p.html", _page(figure + claims), needs_claims=True)
    assert _rules(late) == ["claims-table"] and "after the first figure" in late[0].message
    assert _rules(site.check_page("p.html", _page(figure), needs_claims=True)) == ["claims-table"]
    assert site.check_page("p.html", _page(figure)) == []


def test_the_claims_table_is_found_as_the_rendered_markdown_output_of_a_code_cell():
    """As myst-nb renders a ClaimsTable output: a table in the cell's output area, its input hidden."""
    from markdown_it import MarkdownIt

    rows = [Claim("Entropy beats random", "Sec. 5", "0.89", "0.91", "reproduced", "within 0.03", "figures-2-4")]
    rendered = MarkdownIt("commonmark").enable("table").render(claims_table(rows).markdown())
    cell = ("<div class='cell tag_remove-input docutils container'><div class='cell_output docutils container'>"
            f"{rendered}</div></div>")
    figure = "<div class='cell_output docutils container'><img src='../_images/f.png'></div>"
    assert site.check_page("p.html", _page(cell + figure), needs_claims=True) == []
    late = site.check_page("p.html", _page(figure + cell), needs_claims=True)
    assert [p.message for p in late] == ["the claims table comes after the first figure"]
    raw = f"<div class='cell_output docutils container'><p>{claims_table(rows).markdown()}</p></div>"
    (problem,) = site.check_page("p.html", _page(raw + figure), needs_claims=True)
    assert problem.rule == "claims-table" and "raw Markdown" in problem.message


def test_a_page_over_its_word_limit_is_reported():
    html = _page("<p>" + "word " * 120 + "</p>")
    assert _rules(site.check_page("p.html", html, word_limit=100)) == ["long-page"]
    assert site.check_page("p.html", html, word_limit=200) == []


def test_check_site_reports_a_listed_page_that_was_not_rendered(tmp_path):
    (tmp_path / "a.html").write_text(_page("<p>Fine.</p>"))
    problems = site.check_site(tmp_path, {"a.html": {}, "b.html": {"needs_claims": True}})
    assert [(p.page, p.rule) for p in problems] == [("b.html", "claims-table")]


def test_verdicts_follow_the_direction_of_the_claim():
    assert verdict(0.72, 0.72, kind="r2") == "reproduced"
    assert verdict(0.90, 0.72, kind="r2", direction="at least") == "reproduced"
    assert verdict(0.60, 0.72, kind="r2", direction="at most") == "reproduced"
    assert verdict(0.60, 0.72, kind="r2", direction="at least") == "not reproduced"
    assert verdict(0.90, 0.72, kind="r2", direction="at most") == "not reproduced"
    with pytest.raises(ValueError, match="direction"):
        verdict(0.1, 0.2, kind="r2", direction="up")
    with pytest.raises(ValueError, match="unknown kind of quantity 'r2_score'"):
        verdict(0.1, 0.2, kind="r2_score")


#: For each kind of quantity: the paper's number, then a run's number that reproduces it, one that partly
#: does and one that does not (none on a boundary), above and below the paper's.
TOLERANCE_CASES = {
    "r2": (0.72, [0.745, 0.70], [0.79, 0.66], [0.81, 0.63]),
    "share": (0.5, [0.58, 0.42], [0.75, 0.25], [0.85, 0.15]),
    "count": (8, [8], [9, 7], [10, 6]),
    "statistic": (0.90, [0.915, 0.885], [0.94, 0.86], [0.96, 0.84]),
    "relative": (10.0, [10.4, 9.6], [11.5, 8.5], [12.5, 7.5]),
    "position": (3.0, [3.4, 2.6], [4.2, 1.8], [5.0, 1.0]),
    "percent": (12.0, [12.05, 11.95], [12.8, 11.2], [13.5, 10.5]),
}


def test_every_kind_of_quantity_has_its_tolerance_tested():
    assert set(TOLERANCE_CASES) == set(TOLERANCES)
    assert all(t.meaning for t in TOLERANCES.values())


@pytest.mark.parametrize("kind", list(TOLERANCE_CASES))
def test_verdicts_follow_the_tolerance_of_each_kind_of_quantity(kind):
    paper, reproduced, partly, not_reproduced = TOLERANCE_CASES[kind]
    for expected, values in (("reproduced", reproduced), ("partly", partly), ("not reproduced", not_reproduced)):
        for value in values:
            assert verdict(value, paper, kind=kind) == expected, (kind, value, paper)


def test_relative_tolerances_grow_with_the_number():
    assert verdict(54, 50, kind="count") == "partly"  # within 10 % of a large count
    assert verdict(56, 50, kind="count") == "not reproduced"
    assert verdict(104.0, 100.0, kind="relative") == "reproduced"
    assert verdict(1.04, 1.0, kind="relative") == "reproduced"
    assert verdict(1.3, 1.0, kind="relative") == "not reproduced"


def test_a_claims_table_links_each_claim_to_its_section_and_refuses_missing_values():
    rows = [Claim("MI's first pick is a hub", "App. F", "10 of 10", "4 of 10", "not reproduced", "fewer models",
                  "selection-order"), not_run("Merged at k = 15", "Sec. 5.4", "0.55", "Merged was not run")]
    table = claims_table(rows)
    text = table.markdown()
    assert text.splitlines()[0] == "| Claim | Where | Paper | This run | Verdict | Why |"
    assert "[App. F](#selection-order)" in text and "| — | **not run** |" in text
    data, metadata = table._repr_mimebundle_()
    assert data["text/markdown"] == text and [r["verdict"] for r in metadata["benchsel_claims"]] == [
        "not reproduced", "not run"]
    for bad in ({"run": "nan"}, {"verdict": "maybe"}, {"why": "a | b"}, {"section": "Figures 2-4"},
                {"paper": "$R^2$"}):
        fields = dict(claim="c", where="w", paper="1", run="2", verdict="partly", why="y") | bad
        with pytest.raises(ValueError):
            Claim(**fields)


def test_tables_show_every_row_without_index_nan_or_negative_zero():
    df = pd.DataFrame({"r2": [0.5, -0.0001, np.nan] * 30, "name": ["a", None, "c"] * 30},
                      index=[f"i{i}" for i in range(90)])
    html = table(df, missing="not run").to_html()
    assert html.count("<tr>") == 91 and "i0" not in html
    assert "-0.000" not in html and "nan" not in html.lower() and "None" not in html
    assert html.count("not run") == 60 and "0.500" in html
    assert "0.5" in table(df, digits={"r2": 1}).to_html()
    with pytest.raises(ValueError, match="digits names columns"):
        table(df, digits={"nope": 2})
