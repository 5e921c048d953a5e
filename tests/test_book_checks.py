"""benchsel_lib.book.checks on small hand-made executed notebooks: each rule passes a clean page and fails a bad one."""
from __future__ import annotations

import json

import pytest

from benchsel_lib.book import checks
from benchsel_lib.book.claims import METADATA_KEY, Claim, claims_table
from benchsel_lib.book.show import NOTE_KEY

HIDDEN = {"tags": ["remove-input"], "jupyter": {"source_hidden": True}}
FIGURE = {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"},
          "metadata": {}}


def _md(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(*outputs: dict, metadata: dict | None = None) -> dict:
    return {"cell_type": "code", "metadata": dict(metadata or {}), "source": "x", "outputs": list(outputs),
            "execution_count": 1}


def _markdown_output(text: str, metadata: dict | None = None) -> dict:
    return {"output_type": "display_data", "data": {"text/markdown": text, "text/plain": text},
            "metadata": dict(metadata or {})}


def _claims(**changes: str) -> dict:
    data, metadata = claims_table([Claim("Entropy beats random", "Sec. 5", "0.89", "0.91", "reproduced",
                                         "within 0.03")])._repr_mimebundle_()
    metadata[METADATA_KEY][0].update(changes)
    return {"output_type": "execute_result", "data": data, "metadata": metadata, "execution_count": 1}


def _notebook(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {}}


def _rules(nb: dict, **options) -> list[str]:
    return [p.rule for p in checks.check_notebook(nb, **options)]


def _chapter() -> dict:
    """A clean paper chapter: prose, a hidden claims table, a number, a note, a figure."""
    note = _markdown_output("> **Not in this run.** MI ties at k = 3.", {NOTE_KEY: "MI ties at k = 3."})
    return _notebook(_md("# 4. Greedy selection\n\nThe first pick is `{glue}` free; $R^2$ is *high*."),
                     _code(_claims(), metadata=HIDDEN),
                     _md("## Figures 2-4\n\nThe mean $R^2$ at $k = 5$ is"),
                     _code(_markdown_output("**0.91** (`tol=None` in code)"), note, metadata=HIDDEN),
                     _code(FIGURE, {"output_type": "stream", "name": "stdout", "text": "progress\n"}))


def test_a_clean_chapter_has_no_problems():
    assert checks.check_notebook(_chapter(), paper_chapter=True) == []


def test_an_error_output_is_reported():
    nb = _notebook(_code({"output_type": "error", "ename": "KeyError", "evalue": "'matrix'", "traceback": []}))
    (p,) = checks.check_notebook(nb)
    assert p.rule == "error" and "KeyError" in p.message and p.cell == 0


def test_a_failed_papermill_run_without_error_output_is_reported():
    nb = _notebook(_code())
    nb["metadata"]["papermill"] = {"exception": True}
    assert _rules(nb) == ["error"]


def test_a_warning_written_to_stderr_is_reported():
    nb = _notebook(_code({"output_type": "stream", "name": "stderr", "text": ["RuntimeWarning: ", "invalid value\n"]}))
    (p,) = checks.check_notebook(nb)
    assert p.rule == "stderr" and "RuntimeWarning" in p.message


@pytest.mark.parametrize("text, shown", [
    ("R² is {glue:text}`r2:.2f` here.", "{glue:text}`r2:.2f`"),
    ("```{glue:md} claims\n:format: myst\n```\n", "```{glue:md} claims"),
    ("See {numref}`fig-spectrum`.", "{numref}`fig-spectrum`"),
    ("```{note}\nA note.\n```\n", "```{note}"),
    (":::{admonition} At a glance\n:class: tip\nText.\n:::\n", ":::{admonition} At a glance"),
    ("~~~{figure} f.png\n~~~\n", "~~~{figure} f.png"),
])
def test_a_myst_role_or_directive_in_markdown_is_reported(text, shown):
    (p,) = checks.check_notebook(_notebook(_md(text)))
    assert p.rule == "placeholder" and p.cell == 0 and repr(shown) in p.message


def test_roles_and_directives_in_code_are_not_placeholders():
    text = ("Write `{glue:md}` or ``{numref}`x` `` in code.\n\n```markdown\n```{note}\n{glue:md}`k`\n```\n\n"
            "Math $\\mathrm{x}_{i}$ and a dict `{'a': 1}`.")
    assert checks.placeholders(text) == []
    assert checks.placeholders("Both {glue:md}`a` and `{glue}` and {eval}`b`") == ["{glue:md}`a`", "{eval}`b`"]


def test_a_paper_chapter_needs_its_claims_table_before_its_first_figure():
    nb = _chapter()
    nb["cells"][1], nb["cells"][4] = nb["cells"][4], nb["cells"][1]
    (p,) = checks.check_notebook(nb, paper_chapter=True)
    assert p.rule == "claims" and p.cell == 1 and "before the claims table" in p.message
    del nb["cells"][4]
    (p,) = checks.check_notebook(nb, paper_chapter=True)
    assert p.rule == "claims" and p.cell is None and METADATA_KEY in p.message
    assert checks.check_notebook(nb, paper_chapter=False) == []


def test_the_chapter_number_in_the_file_name_decides_whether_claims_are_needed(tmp_path):
    nb = _notebook(_md("# Own data"), _code(FIGURE))
    for name, rules in (("04_greedy_cv.ipynb", ["claims"]), ("10_logit.ipynb", ["claims"]),
                        ("11_own_data.ipynb", []), ("12_best_predictor.ipynb", [])):
        (tmp_path / name).write_text(json.dumps(nb))
        assert [p.rule for p in checks.check_notebook(tmp_path / name)] == rules, name
    assert checks.check_notebook(nb) == []  # from memory: no file name, no chapter number


@pytest.mark.parametrize("tags", [["remove-input"], ["remove-cell"], ["hide-output", "remove-input"]])
def test_a_cell_hidden_on_the_site_but_shown_in_jupyterlab_is_reported(tags):
    nb = _notebook(_code(metadata={"tags": tags}), _md("text") | {"metadata": {"tags": tags}})
    problems = checks.check_notebook(nb)
    assert [(p.rule, p.cell) for p in problems] == [("hidden", 0), ("hidden", 1)]
    assert tags[-1] in problems[0].message
    hidden = {"tags": tags, "jupyter": {"source_hidden": True}}
    assert checks.check_notebook(_notebook(_code(metadata=hidden), _code(metadata={"tags": ["hide-input"]}))) == []
    injected = {"tags": ["injected-parameters", "remove-cell"]}  # papermill's "# Parameters" cell in a build
    assert checks.check_notebook(_notebook(_code(metadata=injected))) == []


@pytest.mark.parametrize("text", ["The mean $R^2$ is nan.", "MMLU: entropy NaN, MI 0.3", "the value is None here"])
def test_a_missing_value_in_a_markdown_output_or_a_note_is_reported(text):
    assert _rules(_notebook(_code(_markdown_output(text)))) == ["nan"]
    assert _rules(_notebook(_code(_markdown_output(f"> {text}", {NOTE_KEY: text})))) == ["nan"]


def test_words_that_merely_contain_nan_or_none_of_are_not_missing_values():
    nb = _notebook(_code(_markdown_output("None of the Nanbeige models; `tol=None` in code; finance.")),
                   _code({"output_type": "stream", "name": "stdout", "text": "nan\n"}))
    assert checks.check_notebook(nb) == []


@pytest.mark.parametrize("field", ["run", "paper", "why"])
def test_a_claims_row_that_reads_a_missing_value_is_reported(field):
    nb = _notebook(_code(_claims(**{field: "nan"})))
    (p,) = checks.check_notebook(nb)
    assert p.rule == "nan" and f"'{field}': 'nan'" in p.message
    assert checks.check_notebook(_notebook(_code(_claims()))) == []  # section and key are None there


def test_problems_are_listed_rule_by_rule():
    nb = _notebook(_code(_markdown_output("nan"), metadata={"tags": ["remove-cell"]}), _md("{glue}`x`"),
                   _code({"output_type": "stream", "name": "stderr", "text": "warn\n"}), _code(FIGURE))
    assert _rules(nb, paper_chapter=True) == ["stderr", "placeholder", "claims", "hidden", "nan"]


def test_notebooks_are_checked_from_their_files_and_reported_together(tmp_path):
    good, bad = tmp_path / "11_a.ipynb", tmp_path / "12_b.ipynb"
    good.write_text(json.dumps(_notebook(_md("ok"))))
    bad.write_text(json.dumps(_notebook(_code(_markdown_output("nan")))))
    found = checks.check_notebooks([good, bad])
    assert list(found) == ["12_b.ipynb"] and found["12_b.ipynb"][0].notebook == "12_b.ipynb"
    report = checks.format_problems(found)
    assert report.startswith("12_b.ipynb:") and "[nan]" in report
    assert str(found["12_b.ipynb"][0]).startswith("12_b.ipynb cell 0 [nan]")
    assert checks.format_problems({}) == ""


def test_the_command_line_check_exits_nonzero_on_problems(tmp_path, capsys):
    good, bad = tmp_path / "11_a.ipynb", tmp_path / "01_b.ipynb"
    good.write_text(json.dumps(_notebook(_md("ok"))))
    bad.write_text(json.dumps(_chapter()))
    assert checks.main([str(good), str(bad)]) == 0 and "2 notebook(s): no problems" in capsys.readouterr().out
    bad.write_text(json.dumps(_notebook(_md("{glue:md}`x`"))))
    assert checks.main([str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "[placeholder]" in out and "[claims]" in out
