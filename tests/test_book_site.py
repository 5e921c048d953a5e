"""The checks of the rendered pages, the claims tables and the table display, on small pages made here."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book import site
from benchsel_lib.book.claims import Claim, claims_table, failures, not_run, verdict
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
    html = _page(f"<p>{LONG}</p><pre>{LONG}</pre><div class='cell_output'><p>{LONG}</p></div>")
    assert site.check_page("p.html", html) == []


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


def test_a_page_over_its_word_limit_is_reported():
    html = _page("<p>" + "word " * 120 + "</p>")
    assert _rules(site.check_page("p.html", html, word_limit=100)) == ["long-page"]
    assert site.check_page("p.html", html, word_limit=200) == []


def test_check_site_reports_a_listed_page_that_was_not_rendered(tmp_path):
    (tmp_path / "a.html").write_text(_page("<p>Fine.</p>"))
    problems = site.check_site(tmp_path, {"a.html": {}, "b.html": {"needs_claims": True}})
    assert [(p.page, p.rule) for p in problems] == [("b.html", "claims-table")]


def test_verdicts_follow_the_tolerances_and_the_direction_of_the_claim():
    assert verdict(0.72, 0.72, tol=0.02) == "reproduced"
    assert verdict(0.69, 0.72, tol=0.02) == "partly"
    assert verdict(0.60, 0.72, tol=0.02) == "not reproduced"
    assert verdict(0.90, 0.72, tol=0.02, direction="at least") == "reproduced"
    assert verdict(0.60, 0.72, tol=0.02, direction="at most") == "reproduced"
    assert verdict(0.65, 0.72, tol=0.02, partly=0.1) == "partly"
    with pytest.raises(ValueError, match="direction"):
        verdict(0.1, 0.2, tol=0.1, direction="up")


def test_a_claims_table_links_each_claim_to_its_section_and_refuses_missing_values():
    rows = [Claim("MI's first pick is a hub", "App. F", "10 of 10", "4 of 10", "not reproduced", "fewer models",
                  "selection-order"), not_run("Merged at k = 15", "Sec. 5.4", "0.55", "Merged was not run")]
    text = claims_table(rows)
    assert text.splitlines()[0] == "| Claim | Where | Paper | This run | Verdict | Why |"
    assert "[App. F](#selection-order)" in text and "| — | **not run** |" in text
    assert failures(rows) == "Not reproduced: MI's first pick is a hub (4 of 10 here against 10 of 10 in the paper)."
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
