"""benchsel_lib.book.checks on small synthetic executed notebooks: each rule passes a clean page and fails a bad one."""
from __future__ import annotations

import json

import pytest

from benchsel_lib.book import checks
from benchsel_lib.book.prose import RUN_KEY


def _glued(name: str, plain: str | None = None, markdown: str | None = None) -> dict:
    prefix = "application/papermill.record/"
    data = {}
    if plain is not None:
        data[prefix + "text/plain"] = plain
    if markdown is not None:
        data[prefix + "text/markdown"] = markdown
    return {"output_type": "display_data", "data": data,
            "metadata": {"scrapbook": {"name": name, "mime_prefix": prefix}}}


def _notebook(markdown: list[str], outputs: list[dict], *, ran: list[str] | None = ("mmlu",)) -> dict:
    glue = list(outputs) + ([_glued(RUN_KEY, repr(list(ran)))] if ran is not None else [])
    cells = [{"cell_type": "markdown", "metadata": {}, "source": md} for md in markdown]
    cells.append({"cell_type": "code", "metadata": {}, "source": "glue(...)", "outputs": glue,
                  "execution_count": 1})
    return {"cells": cells, "metadata": {}}


GLANCE = (":::{admonition} At a glance\n:class: tip\n**The paper** finds MMLU, MTEB and Merged redundant.\n\n"
          "**This book** {glue:md}`this_book`\n:::\n")
FOUND = "## What we found\n\n```{glue:md} findings\n```\n"


def _rules(nb: dict) -> list[str]:
    return [p.rule for p in checks.check_notebook(nb)]


def test_a_clean_page_has_no_problems():
    nb = _notebook([GLANCE, "R² is {glue:text}`r2:.2f` here.", FOUND],
                   [_glued("this_book", markdown="This run: MMLU; MTEB was not run (parameter `datasets`)."),
                    _glued("r2", "0.9123"), _glued("findings", markdown="- **MMLU** needs 1 component.\n- Fine.")])
    assert checks.check_notebook(nb) == []


def test_an_error_output_is_reported():
    nb = _notebook([], [])
    nb["cells"][0]["outputs"].append({"output_type": "error", "ename": "KeyError", "evalue": "'matrix'",
                                      "traceback": []})
    (p,) = checks.check_notebook(nb)
    assert p.rule == "error" and "KeyError" in p.message and p.cell == 0


def test_a_failed_papermill_run_without_error_output_is_reported():
    nb = _notebook([], [])
    nb["metadata"]["papermill"] = {"exception": True}
    assert _rules(nb) == ["error"]


def test_a_warning_written_to_stderr_is_reported_and_stdout_is_not():
    nb = _notebook([], [{"output_type": "stream", "name": "stdout", "text": "progress\n"}])
    assert checks.check_notebook(nb) == []
    nb["cells"][0]["outputs"].append({"output_type": "stream", "name": "stderr",
                                      "text": ["RuntimeWarning: ", "invalid value\n"]})
    (p,) = checks.check_notebook(nb)
    assert p.rule == "stderr" and "RuntimeWarning" in p.message


def test_a_glue_key_the_run_did_not_produce_is_reported():
    nb = _notebook(["Value {glue:text}`k90_merged` and {glue:md}`other.ipynb::x`.", FOUND], [])
    rules = checks.check_notebook(nb)
    assert [p.rule for p in rules] == ["missing-glue", "missing-glue"]
    assert "'k90_merged'" in rules[0].message and "'findings'" in rules[1].message


@pytest.mark.parametrize("plain, markdown", [("nan", None), (None, "MMLU: entropy nan, MI 0.3"),
                                              (None, "the value is None here"), ("NaN", None)])
def test_a_missing_value_pasted_into_the_text_is_reported(plain, markdown):
    ref = "{glue:text}`v:.2f`" if plain is not None else "{glue:md}`v`"
    nb = _notebook([f"Here {ref}."], [_glued("v", plain, markdown)])
    assert _rules(nb) == ["nan"]


def test_words_that_merely_contain_nan_or_none_of_are_not_missing_values():
    nb = _notebook(["{glue:md}`v`"], [_glued("v", markdown="None of the Nanbeige models; `tol=None` in code.")])
    assert checks.check_notebook(nb) == []


def test_tables_and_figures_pasted_into_the_text_are_not_read_as_prose():
    table = _glued("t", "   a\n0  NaN")
    table["data"]["application/papermill.record/text/html"] = "<table></table>"
    nb = _notebook(["{glue:}`t`"], [table])
    assert checks.check_notebook(nb) == []


def test_tex_in_glued_text_is_reported_but_a_dollar_in_code_is_not():
    nb = _notebook(["{glue:md}`v`"], [_glued("v", markdown="mean $R^2$ at $k = 5$")])
    (p,) = checks.check_notebook(nb)
    assert p.rule == "tex"
    ok = _notebook(["{glue:md}`v`"], [_glued("v", markdown="set `$BENCHSEL_TABIMPUTE_CKPT` first; R² = 0.9")])
    assert checks.check_notebook(ok) == []


def test_a_page_that_does_not_record_its_matrices_is_reported():
    nb = _notebook(["text"], [], ran=None)
    assert _rules(nb) == ["run-record"]


def test_a_finding_that_names_a_matrix_the_run_did_not_include_is_reported():
    nb = _notebook([GLANCE, FOUND],
                   [_glued("this_book", markdown="MMLU needs 1 component. Merged needs 8, against the paper's 8."),
                    _glued("findings", markdown="- **MMLU** fine.\n- The paper's Merged value lies in the band.")])
    found = checks.check_notebook(nb)
    assert [p.rule for p in found] == ["unrun-matrix", "unrun-matrix"]
    assert all("Merged" in p.message for p in found)


def test_naming_a_matrix_as_not_run_or_in_a_method_name_is_allowed():
    nb = _notebook([GLANCE, FOUND],
                   [_glued("this_book", markdown="This run: MMLU; MTEB and Merged were not run (parameter "
                                                 "`datasets`)."),
                    _glued("findings", markdown="- The BenchPress-style blend and `mmlu/marketing` are fine.")])
    assert checks.check_notebook(nb) == []


def test_the_papers_own_claims_and_sections_after_the_findings_are_not_findings():
    nb = _notebook([GLANCE, FOUND + "\n## References\n\nBenchPress: Appendix I of the paper.\n"],
                   [_glued("this_book", markdown="MMLU only."), _glued("findings", markdown="- MMLU only.")])
    assert checks.check_notebook(nb) == []
    sentences = [s for _, s in checks.findings_sentences(nb)]
    assert sentences == ["**This book** MMLU only.", "MMLU only."]


def test_findings_written_directly_in_the_markdown_are_checked_too():
    nb = _notebook(["## What we found\n\n* MTEB needs {glue:text}`k:d` components.\n"], [_glued("k", "6")])
    (p,) = checks.check_notebook(nb)
    assert p.rule == "unrun-matrix" and "MTEB needs 6 components" in p.message


def test_notebooks_are_checked_from_their_files_and_reported_together(tmp_path):
    good, bad = tmp_path / "01_a.ipynb", tmp_path / "02_b.ipynb"
    good.write_text(json.dumps(_notebook(["ok"], [])))
    bad.write_text(json.dumps(_notebook(["{glue:text}`x`"], [_glued("x", "nan")])))
    found = checks.check_notebooks([good, bad])
    assert list(found) == ["02_b.ipynb"] and found["02_b.ipynb"][0].notebook == "02_b.ipynb"
    report = checks.format_problems(found)
    assert report.startswith("02_b.ipynb:") and "[nan]" in report
    assert checks.format_problems({}) == ""


def test_glued_text_is_formatted_as_the_page_shows_it():
    values = {"s": {"text/plain": "'MMLU'"}, "f": {"text/plain": "0.91234"}, "i": {"text/plain": "7"}}
    text, pasted, missing = checks.render_markdown("{glue:text}`s` {glue:text}`f:.2f` {glue:}`i` {glue:text}`z`",
                                                   values)
    assert text == "MMLU 0.91 7 {glue:text}`z`" and missing == ["z"]
    assert [p.key for p in pasted] == ["s", "f", "i"]


def test_the_command_line_check_exits_nonzero_on_problems(tmp_path, capsys):
    good, bad = tmp_path / "01_a.ipynb", tmp_path / "02_b.ipynb"
    good.write_text(json.dumps(_notebook(["ok"], [])))
    bad.write_text(json.dumps(_notebook(["{glue:text}`x`"], [])))
    assert checks.main([str(good)]) == 0 and "no problems" in capsys.readouterr().out
    assert checks.main([str(good), str(bad)]) == 1 and "[missing-glue]" in capsys.readouterr().out
