"""Figure functions of benchsel_lib.plotting on small synthetic inputs."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from benchsel_lib.book import plotting


def _summary(pipelines=("entropy", "mi", "random"), holdouts=(0.1, 0.5), k_max=5) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for m in pipelines:
        for h in holdouts:
            for k in range(1, k_max + 1):
                rows.append(dict(pipeline=m, holdout=h, k=k, r2_mean=1 - 1 / (k + 1), r2_sd=0.05,
                                 residual_fraction_mean=0.5 ** k, residual_fraction_sd=0.01,
                                 logdet_mean=-0.1 * k, logdet_sd=0.02, mi_mean=0.3 * k, mi_sd=rng.uniform(0, .1)))
    return pd.DataFrame(rows)


def _renders(fig: Figure) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue()[:4] == b"\x89PNG"


def test_eigenspectrum_draws_one_line_per_matrix_and_dashed_levels():
    class Spec:  # Eigenspectrum-like
        residual = np.array([0.3, 0.1, 0.02, 0.0])

    fig = plotting.plot_eigenspectrum({"A": Spec(), "B": [0.5, 0.2, 0.05]})
    (ax,) = fig.axes
    assert ax.get_yscale() == "log"
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert len(ax.get_lines()) == 2 + 3 and len(dashed) == 3
    assert sorted(ln.get_ydata()[0] for ln in dashed) == pytest.approx([0.01, 0.05, 0.1])
    _renders(fig)


def test_eigenspectrum_rejects_empty_input():
    with pytest.raises(ValueError, match="non-empty"):
        plotting.plot_eigenspectrum({})


def _legend_is_outside_the_panels(fig: Figure) -> None:
    assert all(ax.get_legend() is None for ax in fig.axes), "a legend sits inside a panel"
    assert len(fig.legends) == 1
    fig.savefig(io.BytesIO(), format="png")  # lays the figure out (a bare Figure's canvas.draw does not)
    box = fig.legends[0].get_window_extent()
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent()), "the legend overlaps a panel"


def test_cv_curves_one_row_per_holdout_solid_greedy_dashed_random():
    df = _summary(pipelines=("entropy", "random"))
    fig = plotting.plot_cv_curves(df, title="MTEB", pipelines=("entropy", "random"), holdouts=(0.1, 0.5))
    assert len(fig.axes) == 6 and fig._suptitle.get_text() == "MTEB"
    assert [ax.get_yscale() for ax in fig.axes] == ["linear", "log", "linear"] * 2
    assert [fig.axes[i].get_ylabel() for i in (0, 3)] == ["10% holdout\n$R^2$", "50% holdout\n$R^2$"]
    for ax in fig.axes:
        styles = [ln.get_linestyle() for ln in ax.get_lines()]
        assert styles.count("-") == 1 and styles.count("--") == 1  # one holdout, two methods per panel
        assert len(ax.collections) == 2  # +-1 sd bands
    _legend_is_outside_the_panels(fig)
    _renders(fig)


def test_figures_use_the_readable_font_sizes():
    fig = plotting.plot_cv_curves(_summary(pipelines=("entropy", "random")), title="MTEB")
    sizes = [t.get_fontsize() for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels()]
    sizes += [t.get_fontsize() for t in fig.legends[0].get_texts()]
    assert min(sizes) >= 9


def test_cv_curves_variant_band_is_drawn_on_r2_panel_of_its_holdout():
    df = _summary(pipelines=("entropy", "random"), holdouts=(0.1, 0.5))
    variants = pd.DataFrame([dict(variant=v, holdout=0.1, k=k, r2_mean=0.5 + 0.1 * v) for v in range(3)
                             for k in range(1, 6)])
    plain = plotting.plot_cv_curves(df)
    fig = plotting.plot_cv_curves(df, variants=variants, variant_label="band")
    assert len(fig.axes[0].collections) == len(plain.axes[0].collections) + 1
    assert len(fig.axes[3].collections) == len(plain.axes[3].collections)  # no band at 50%
    assert "band" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_cv_curves_missing_column_is_named():
    with pytest.raises(ValueError, match="r2_mean"):
        plotting.plot_cv_curves(pd.DataFrame({"pipeline": ["entropy"], "holdout": [0.1], "k": [1]}))


def test_entropy_vs_mi_three_methods_three_panels():
    fig = plotting.plot_entropy_vs_mi(_summary(), title="MMLU")
    assert len(fig.axes) == 3
    assert all(len(ax.get_lines()) == 3 for ax in fig.axes)
    assert "MMLU" in fig._suptitle.get_text() and "10% holdout" in fig._suptitle.get_text()
    random_lines = [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "--"]
    assert len(random_lines) == 1
    with pytest.raises(ValueError, match="holdout"):
        plotting.plot_entropy_vs_mi(_summary(), holdout=0.9)


def test_selection_stability_marks_mean_and_counts_top_folds():
    rows = []
    for fold in range(4):
        order = ["a", "b", "c"] if fold < 3 else ["b", "a", "d"]
        rows += [dict(benchmark=b, fold=fold, position=i + 1) for i, b in enumerate(order)]
    pos = pd.DataFrame(rows)
    fig = plotting.plot_selection_stability(pos, title="entropy", top=2)
    (ax,) = fig.axes
    assert ax.get_title() == "entropy"
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["a", "b"]  # only benchmarks in the top 2 of some fold, sorted by mean position
    texts = sorted(t.get_text() for t in ax.texts)
    assert texts == ["4/4", "4/4"]
    _legend_is_outside_the_panels(fig)
    _renders(fig)


def test_normality_one_panel_per_matrix_with_reject_counts():
    t1 = pd.DataFrame({"W": [0.8, 0.9, 0.97, np.nan], "reject": [True, True, False, False]})
    t2 = pd.DataFrame({"W": [0.95, 0.99], "reject": [False, False]})
    fig = plotting.plot_normality({"MTEB": t1, "Merged": t2})
    assert len(fig.axes) == 2
    assert fig.axes[0].get_title() == "MTEB: 2 of 3 reject"
    assert fig.axes[1].get_title() == "Merged: 0 of 2 reject"


def test_overlap_network_draws_edges_and_labels_large_ones():
    nodes = pd.DataFrame({"label": ["Open LLM", "HELM", "Arena"], "n_models": [80, 40, 10]},
                         index=["open_llm", "helm", "arena_hard"])
    edges = pd.DataFrame({"source": ["open_llm", "open_llm", "helm"], "target": ["helm", "arena_hard", "arena_hard"],
                          "shared": [25, 5, 0]})
    fig = plotting.plot_overlap_network(nodes, edges, min_label=20)
    (ax,) = fig.axes
    assert len(ax.get_lines()) == 2  # zero-weight edge omitted
    texts = [t.get_text() for t in ax.texts]
    assert "25" in texts and "5" not in texts and "Open LLM" in texts and "80" in texts
    with pytest.raises(ValueError, match="not in nodes"):
        plotting.plot_overlap_network(nodes, pd.DataFrame({"source": ["x"], "target": ["helm"], "shared": [3]}))


def test_reliability_panel_per_dataset_with_diagonal():
    rows = [dict(dataset=d, pipeline=m, k=k, nominal=q, coverage=q - 0.05, coverage_cal=q)
            for d in ("MTEB", "Merged") for m in ("entropy", "mi") for k in (5, 10) for q in (0.5, 0.8, 0.9, 0.95)]
    fig = plotting.plot_reliability(pd.DataFrame(rows))
    assert len(fig.axes) == 2
    assert len(fig.axes[0].get_lines()) == 1 + 4 + 4  # diagonal + 4 curves + 4 inflated curves


def test_imputer_comparison_one_panel_per_dataset_and_method_with_one_line_per_imputer():
    parts = [_summary(holdouts=(0.1,)).assign(imputer=imp, dataset=ds)
             for ds in ("MMLU", "MTEB") for imp in ("Gaussian", "SoftImpute", "KNN")]
    fig = plotting.plot_imputer_comparison(pd.concat(parts), title="Figure 15")
    assert len(fig.axes) == 2 * 3
    assert [ax.get_title() for ax in fig.axes[:3]] == ["entropy picks", "MI picks", "random picks"]
    for ax in fig.axes:
        assert len(ax.get_lines()) == 3
        assert len({ln.get_color() for ln in ax.get_lines()}) == 3
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["Gaussian", "SoftImpute", "KNN"]
    _legend_is_outside_the_panels(fig)
    _renders(fig)
    one = plotting.plot_imputer_comparison(parts[0], pipelines=("mi",))
    assert len(one.axes) == 1
    with pytest.raises(ValueError, match="imputer"):
        plotting.plot_imputer_comparison(_summary())
    with pytest.raises(ValueError, match="no rows for pipelines"):
        plotting.plot_imputer_comparison(parts[0], pipelines=("greedy",))


def test_em_convergence_draws_one_tolerance_line_per_fit_when_given_a_mapping():
    from types import SimpleNamespace

    from benchsel_lib.book.plotting import plot_em_convergence

    fits = {name: SimpleNamespace(rel_change=np.array([1e-1, 1e-3, 1e-5]), loglik=np.array([-3.0, -2.0, -1.5]))
            for name in ("a", "b")}
    fig = plot_em_convergence(fits, tol={"a": 5e-4, "b": 1e-6})
    ax = fig.axes[0]
    levels = sorted(line.get_ydata()[0] for line in ax.get_lines() if line.get_linestyle() == "--")
    assert levels == [1e-6, 5e-4]
    _legend_is_outside_the_panels(fig)
    with pytest.raises(ValueError, match="not in results"):
        plot_em_convergence(fits, tol={"c": 1e-3})


def test_variant_band_joins_the_single_legend_under_the_panels():
    fig = plotting.plot_entropy_vs_mi(_summary(holdouts=(0.1,)), title="MMLU")
    variants = pd.DataFrame([dict(variant=v, holdout=0.1, k=k, r2_mean=0.5 + 0.1 * v) for v in range(3)
                             for k in range(1, 6)])
    plotting.add_variant_band(fig, variants, holdout=0.1, label="range over first picks")
    assert [t.get_text() for t in fig.legends[0].get_texts()][-1] == "range over first picks"
    _legend_is_outside_the_panels(fig)
    _renders(fig)


def _pipeline_runs() -> dict[str, pd.DataFrame]:
    rows = []
    for name, shift in (("mteb", 0.0), ("merged", -0.2)):
        for m, base in (("auto", 0.8), ("mi", 0.6), ("lasso+ridge", 0.7), ("mi+knn", 0.65), ("random+blend", 0.5),
                        ("entropy+ridge", 0.75 if name == "merged" else 0.4)):
            for fold in range(3):
                for k in (1, 2, 5):
                    rows.append(dict(matrix=name, pipeline=m, fold=fold, k=k, r2=base + shift + 0.01 * k))
    df = pd.DataFrame(rows)
    return {n: g for n, g in df.groupby("matrix", sort=False)}


def test_pipeline_curves_draw_reference_baseline_and_each_matrixs_top_pairs_with_one_colour_each():
    fig = plotting.plot_pipeline_curves(_pipeline_runs(), n_top=2, labels={"mteb": "MTEB"})
    assert [ax.get_title() for ax in fig.axes] == ["MTEB", "merged"]
    drawn = [[ln.get_label() for ln in ax.get_lines()] for ax in fig.axes]
    assert drawn == [["auto", "mi", "lasso+ridge", "mi+knn"], ["auto", "mi", "entropy+ridge", "lasso+ridge"]]
    colour = [{ln.get_label(): ln.get_color() for ln in ax.get_lines()} for ax in fig.axes]
    assert colour[0]["lasso+ridge"] == colour[1]["lasso+ridge"]
    assert len({colour[0]["mi+knn"], colour[1]["entropy+ridge"], colour[0]["lasso+ridge"]}) == 3
    np.testing.assert_allclose(fig.axes[0].get_lines()[0].get_ydata(), [0.81, 0.82, 0.85])
    fig.savefig(io.BytesIO(), format="png")  # lays the figure out
    for ax, names in zip(fig.axes, drawn):  # a legend under each panel, clear of every panel's data area
        legend = ax.get_legend()
        assert [t.get_text() for t in legend.get_texts()] == names
        box = legend.get_window_extent()
        assert box.y1 < ax.get_window_extent().y0
        assert not any(box.overlaps(other.get_window_extent()) for other in fig.axes)
    _renders(fig)


def test_pipeline_curves_add_the_references_same_entries_curve_where_the_rows_have_it():
    runs = {n: g.assign(r2_common=g["r2"] - 0.1) for n, g in _pipeline_runs().items()}
    runs["merged"] = runs["merged"].drop(columns="r2_common")
    fig = plotting.plot_pipeline_curves(runs, n_top=1)
    first = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    assert list(first) == ["auto", "mi", "lasso+ridge", "auto, same entries"]
    np.testing.assert_allclose(first["auto, same entries"].get_ydata(), [0.71, 0.72, 0.75])
    assert "auto, same entries" not in [ln.get_label() for ln in fig.axes[1].get_lines()]
    plain = plotting.plot_pipeline_curves(runs, n_top=1, common=False)
    assert [ln.get_label() for ln in plain.axes[0].get_lines()] == ["auto", "mi", "lasso+ridge"]
    _renders(fig)


def test_pipeline_curves_name_a_missing_reference_and_empty_input():
    runs = _pipeline_runs()
    with pytest.raises(ValueError, match=r"runs\['mteb'\] has no rows for pipeline\(s\) \['best'\]"):
        plotting.plot_pipeline_curves(runs, reference="best")
    with pytest.raises(ValueError, match="runs is empty"):
        plotting.plot_pipeline_curves({})
    with pytest.raises(ValueError, match="lacks the column"):
        plotting.plot_pipeline_curves({"x": runs["mteb"].drop(columns="r2")})


def test_cv_curves_draw_named_variants_as_lines_of_their_own_on_each_r2_panel():
    df = _summary(pipelines=("entropy", "random"), holdouts=(0.1, 0.5))
    variants = pd.DataFrame([dict(variant=v, holdout=h, k=k, r2_mean=0.5 + 0.1 * i)
                             for i, v in enumerate(("a", "b", "c")) for h in (0.1, 0.5) for k in range(1, 6)])
    fig = plotting.plot_cv_curves(df, variants=variants, variant_lines={"a": "first a", "c": "first c"})
    for ax in (fig.axes[0], fig.axes[3]):  # the R^2 panel of each holdout: two methods, then the two variants
        lines = ax.get_lines()
        assert len(lines) == 4 and len(ax.collections) == 2  # no hatched band
        np.testing.assert_allclose(lines[2].get_ydata(), 0.5)
        np.testing.assert_allclose(lines[3].get_ydata(), 0.7)
        assert np.all(lines[2].get_xdata() < lines[3].get_xdata())  # set side by side along k
    assert [t.get_text() for t in fig.legends[0].get_texts()][-2:] == ["first a", "first c"]
    with pytest.raises(ValueError, match="variant_lines needs variants with a 'variant' column"):
        plotting.plot_cv_curves(df, variants=variants.drop(columns="variant"), variant_lines={"a": "a"})


def test_reliability_without_a_dataset_column_draws_one_panel_titled_by_the_title():
    rows = [dict(pipeline="mi", k=k, nominal=q, coverage=q - 0.02) for k in (5, 10) for q in (0.5, 0.9)]
    fig = plotting.plot_reliability(pd.DataFrame(rows), title="Coverage")
    (ax,) = fig.axes
    assert ax.get_title() == "Coverage" and fig._suptitle is None
    assert [ln.get_marker() for ln in ax.get_lines()[1:]] == ["o", "s"]  # one marker per k
    assert ax.get_xlim() == (0.4, 1.0) and ax.get_ylim() == (0.4, 1.0)


def test_imputer_comparison_sets_series_side_by_side_and_draws_a_single_size_as_a_marker():
    base = _summary(holdouts=(0.1,)).assign(imputer="Gaussian")
    knn = base[base["k"] == 5].assign(imputer="KNN")  # scored at one subset size only
    fig = plotting.plot_imputer_comparison(pd.concat([base, knn]), pipelines=("mi",), offset=0.8,
                                           names={"Gaussian": "G", "KNN": "kNN"})
    (ax,) = fig.axes
    first, single = ax.get_lines()
    np.testing.assert_allclose(first.get_xdata(), [1, 2, 3, 4, 5])  # the first series stays at k
    np.testing.assert_allclose(single.get_xdata(), [5.0])  # offset 0.8 * (1 - 2 / 2)
    assert single.get_linestyle() == "None" and single.get_marker() == "s"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["G", "kNN"]
    assert len(ax.collections) == 1  # the first series' band only


def test_pipeline_curves_clip_leaves_a_far_low_line_below_the_axis_and_names_it():
    runs = {n: g.assign(r2=np.where(g["pipeline"] == "mi", -2.0, g["r2"])) for n, g in _pipeline_runs().items()}
    fig = plotting.plot_pipeline_curves(runs, n_top=2, clip=True)
    for ax in fig.axes:
        assert ax.get_ylim()[0] > -1.0
        (note,) = ax.texts
        assert note.get_text() == "mi: -2.00 to -2.00, below"
    plain = plotting.plot_pipeline_curves(runs, n_top=2)
    assert all(ax.get_ylim()[0] < -2.0 and not ax.texts for ax in plain.axes)
