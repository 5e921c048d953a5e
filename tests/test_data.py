"""Tests of the data layer: manifest, directory resolution, download, digests, loaders, CSV input."""
from __future__ import annotations

import functools
import hashlib
import http.server
import pickle
import shutil
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.data import ScoreMatrix
from benchsel_lib.data import loaders as L
from benchsel_lib.data import sources as D

SMALL = "mt_bench.npz"  # a small manifest file used for download tests


# ------------------------------------------------------------------ manifest
def test_manifest_matches_sha256sums_of_the_mirror(shared_data_dir):
    sums = {}
    for line in (shared_data_dir / "SHA256SUMS").read_text().splitlines():
        sha, name = line.split()
        sums[name] = sha
    assert set(D.MANIFEST) == set(sums)
    for name, entry in D.MANIFEST.items():
        assert entry["sha256"] == sums[name], name
        assert entry["size"] == (shared_data_dir / name).stat().st_size, name


def test_manifest_urls_are_pinned_public_raw_github_urls():
    for name, entry in D.MANIFEST.items():
        url = entry["url"]
        assert url.startswith("https://raw.githubusercontent.com/"), name
        # every URL pins a 40-hex commit
        parts = url.split("/")
        assert any(len(p) == 40 and all(c in "0123456789abcdef" for c in p) for p in parts), url
        if not name.startswith("mmlu_sources/"):
            assert url.endswith("/data/" + name)


def test_every_loader_file_is_in_the_manifest():
    for file in list(L.SOURCES.values()) + [f for k, f in L.DATASETS.items() if k != "mmlu"]:
        assert file in D.MANIFEST
    for name in ("benchpress.json", "canonical_mapping.json"):
        assert name in D.MANIFEST
    assert sum(n.startswith("mmlu_sources/") for n in D.MANIFEST) == 3


# ------------------------------------------------------------- resolution
@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """Fake project cache and shared mirror; no env override."""
    cache, shared = tmp_path / "cache", tmp_path / "shared"
    cache.mkdir()
    shared.mkdir()
    monkeypatch.setattr(D, "CACHE_DIR", cache)
    monkeypatch.setattr(D, "SHARED_DIR", shared)
    monkeypatch.delenv(D.ENV_DATA_DIR, raising=False)
    monkeypatch.delenv(D.ENV_DATA_URL, raising=False)
    return cache, shared


def test_resolution_order_explicit_then_env_then_cache_then_shared(dirs, tmp_path, monkeypatch):
    cache, shared = dirs
    (shared / SMALL).write_bytes(b"x")
    assert D.resolve_data_dir(name=SMALL) == shared
    (cache / SMALL).write_bytes(b"x")
    assert D.resolve_data_dir(name=SMALL) == cache
    env = tmp_path / "env"
    monkeypatch.setenv(D.ENV_DATA_DIR, str(env))
    assert D.resolve_data_dir(name=SMALL) == env
    explicit = tmp_path / "explicit"
    assert D.resolve_data_dir(explicit, name=SMALL) == explicit


def test_resolution_falls_back_to_cache_when_file_is_nowhere(dirs):
    cache, _ = dirs
    assert D.resolve_data_dir(name=SMALL) == cache


def test_data_path_uses_shared_mirror_and_verifies(dirs, shared_data_dir):
    _, shared = dirs
    shutil.copy(shared_data_dir / SMALL, shared / SMALL)
    assert D.data_path(SMALL) == shared / SMALL


def test_default_resolution_finds_the_real_mirror(shared_data_dir):
    p = D.data_path("merged.matrix.npz")
    assert p.is_file()


# ------------------------------------------------------------- digests
def test_digest_mismatch_names_file_and_both_digests(tmp_path, shared_data_dir):
    raw = bytearray((shared_data_dir / SMALL).read_bytes())
    raw[-1] ^= 0xFF
    (tmp_path / SMALL).write_bytes(bytes(raw))
    actual = hashlib.sha256(bytes(raw)).hexdigest()
    with pytest.raises(ValueError) as exc:
        D.data_path(SMALL, data_dir=tmp_path)
    msg = str(exc.value)
    assert SMALL in msg and D.MANIFEST[SMALL]["sha256"] in msg and actual in msg


def test_verified_digests_are_cached_per_process(tmp_path, shared_data_dir, monkeypatch):
    shutil.copy(shared_data_dir / SMALL, tmp_path / SMALL)
    calls = []
    real = D._sha256
    monkeypatch.setattr(D, "_sha256", lambda p: calls.append(p) or real(p))
    D.data_path(SMALL, data_dir=tmp_path)
    D.data_path(SMALL, data_dir=tmp_path)
    assert len(calls) == 1


def test_unknown_manifest_name_is_rejected():
    with pytest.raises(ValueError, match="not a data file in the manifest"):
        D.data_path("nope.npz")


# ------------------------------------------------------------- download
@pytest.fixture
def http_mirror(shared_data_dir):
    """Serve the mirror directory on 127.0.0.1 from a background thread."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(shared_data_dir))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_missing_file_is_downloaded_from_local_http_server_and_verified(tmp_path, http_mirror):
    p = D.data_path("mmlu_sources/sloth_data_v2.csv", data_dir=tmp_path, base_url=http_mirror)
    assert p == tmp_path / "mmlu_sources" / "sloth_data_v2.csv"
    assert hashlib.sha256(p.read_bytes()).hexdigest() == D.MANIFEST["mmlu_sources/sloth_data_v2.csv"]["sha256"]
    assert not list(p.parent.glob(".part-*"))


def test_download_goes_to_project_cache_by_default(dirs, http_mirror, monkeypatch):
    cache, _ = dirs
    monkeypatch.setenv(D.ENV_DATA_URL, http_mirror)
    p = D.data_path(SMALL)
    assert p == cache / SMALL
    assert L.load_source("mt_bench", data_dir=None).shape == (5, 8)


def test_download_from_file_url(tmp_path, shared_data_dir):
    p = D.data_path(SMALL, data_dir=tmp_path / "dl", base_url=shared_data_dir.as_uri())
    assert p.read_bytes() == (shared_data_dir / SMALL).read_bytes()


def test_tampered_download_raises_and_leaves_no_file(tmp_path, shared_data_dir):
    src = tmp_path / "mirror"
    src.mkdir()
    (src / SMALL).write_bytes(b"not the real file")
    dest = tmp_path / "dl"
    with pytest.raises(ValueError, match=D.MANIFEST[SMALL]["sha256"]):
        D.data_path(SMALL, data_dir=dest, base_url=src.as_uri())
    assert not (dest / SMALL).exists()
    assert not list(dest.glob(".part-*"))


def test_missing_file_without_network_gives_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="could not be downloaded"):
        D.data_path(SMALL, data_dir=tmp_path, base_url="http://127.0.0.1:9", timeout=2)


def test_a_failed_download_into_a_mistyped_directory_leaves_no_directory_behind(tmp_path):
    typo = tmp_path / "typo" / "sub"
    with pytest.raises(FileNotFoundError, match="could not be downloaded"):
        D.data_path(SMALL, data_dir=typo, base_url=(tmp_path / "no-mirror").as_uri())
    assert list(tmp_path.iterdir()) == []


def test_missing_file_with_download_disabled(tmp_path):
    with pytest.raises(FileNotFoundError, match="download disabled"):
        D.data_path(SMALL, data_dir=tmp_path, download=False)


def test_cli_verify_reports_ok_and_failures(tmp_path, shared_data_dir, capsys):
    assert D.main(["verify", "--data-dir", str(shared_data_dir)]) == 0
    assert f"{len(D.MANIFEST)}/{len(D.MANIFEST)} data files verified" in capsys.readouterr().out
    assert D.main(["verify", "--data-dir", str(tmp_path)]) == 1


def test_cli_fetch_downloads_every_manifest_file(tmp_path, shared_data_dir):
    dest = tmp_path / "fetched"
    assert D.main(["fetch", "--data-dir", str(dest), "--base-url", shared_data_dir.as_uri()]) == 0
    assert all((dest / n).is_file() for n in D.MANIFEST)
    assert set(D.verify_all(data_dir=dest).values()) == {"ok"}


# ------------------------------------------------------------- npz loading
def test_npz_mask_zero_becomes_nan(tmp_path):
    path = tmp_path / "m.npz"
    np.savez(path, B=np.array([[1.0, 0.0], [0.0, 4.0]]), O=np.array([[1.0, 0.0], [1.0, 1.0]]),
             model_names=np.array(["a", "b"]), benchmark_names=np.array(["x", "y"]))
    m = L.load_npz(path)
    np.testing.assert_array_equal(m.scores, [[1.0, np.nan], [0.0, 4.0]])


def test_npz_with_pickled_objects_is_refused(tmp_path):
    path = tmp_path / "m.npz"
    np.savez(path, B=np.ones((1, 1)), O=np.ones((1, 1)), model_names=np.array(["a"], dtype=object),
             benchmark_names=np.array(["x"]))
    with pytest.raises(ValueError, match="allow_pickle"):
        L.load_npz(path)


@pytest.mark.parametrize(
    ("name", "shape", "observed"),
    [("mteb", (263, 56), 0.773), ("merged", (118, 114), 0.311), ("benchpress", (83, 49), 0.338)],
)
def test_released_experiment_matrices_have_paper_shapes(shared_data_dir, name, shape, observed):
    m = L.load_matrix(name, data_dir=shared_data_dir)
    assert isinstance(m, ScoreMatrix)
    assert m.shape == shape
    assert m.observed_fraction == pytest.approx(observed, abs=5e-4)
    m.require_observed()


def test_unknown_dataset_and_source_list_known_names():
    with pytest.raises(ValueError, match="known: mteb, merged, benchpress, mmlu"):
        L.load_matrix("mmlu2")
    with pytest.raises(ValueError, match="open_llm"):
        L.load_source("hellaswag")


# Table 1 dimensions after dropping auxiliary columns (plus the sources the paper omits)
SOURCE_SHAPES = {
    "open_llm": (4507, 6), "helm": (30, 11), "alpaca_eval": (223, 3), "arena_hard": (60, 1),
    "livebench": (195, 3), "wildbench": (63, 11), "mt_bench": (5, 8), "bigcode": (155, 14),
    "bigbench": (55, 24), "mteb_raw": (268, 56),
}


@pytest.mark.parametrize("name", sorted(SOURCE_SHAPES))
def test_every_source_loads_with_auxiliary_columns_dropped(shared_data_dir, name):
    m = L.load_source(name, data_dir=shared_data_dir)
    assert m.shape == SOURCE_SHAPES[name]
    full = L.load_source(name, data_dir=shared_data_dir, include_auxiliary=True)
    aux = L.AUXILIARY_COLUMNS.get(name, ())
    assert set(full.benchmarks) - set(m.benchmarks) == set(aux)
    assert full.shape[1] == m.shape[1] + len(aux)


def test_auxiliary_columns_are_counts_uncertainties_and_lengths():
    assert set(L.AUXILIARY_COLUMNS) == {"alpaca_eval", "arena_hard"}
    assert "length_controlled_winrate" not in L.AUXILIARY_COLUMNS["alpaca_eval"]
    assert {"standard_error", "n_total", "avg_length"} <= set(L.AUXILIARY_COLUMNS["alpaca_eval"])
    assert set(L.AUXILIARY_COLUMNS["arena_hard"]) == {"rating_q025", "rating_q975", "avg_tokens"}


def test_benchpress_json_agrees_with_release_matrix(shared_data_dir):
    js = L.load_benchpress_json(data_dir=shared_data_dir)
    npz = L.load_matrix("benchpress", data_dir=shared_data_dir)
    assert js.models == npz.models and js.benchmarks == npz.benchmarks
    np.testing.assert_array_equal(js.observed, npz.observed)
    np.testing.assert_array_equal(js.scores, npz.scores)
    assert {"id", "provider"} <= set(js.row_info.columns)


@pytest.mark.parametrize("name", sorted(n for n in D.MANIFEST if n.endswith(".csv") and "/" not in n))
def test_csv_mirrors_equal_the_npz_tables(shared_data_dir, name):
    csv_m = L.load_csv(shared_data_dir / name)
    npz_m = L.load_npz(shared_data_dir / name.replace(".csv", ".npz"))
    assert csv_m.models == npz_m.models and csv_m.benchmarks == npz_m.benchmarks
    np.testing.assert_allclose(csv_m.scores, npz_m.scores, rtol=1e-12, equal_nan=True)


# ------------------------------------------------------------- user CSV / DataFrame
def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "scores.csv"
    p.write_text(text)
    return p


def test_csv_missing_markers_become_nan(tmp_path):
    m = L.load_csv(_write(tmp_path, "model,a,b,c\nm1,1,,NA\nm2,nan,2.5,3\nm3, NaN ,1,N/A\n"))
    assert m.models == ("m1", "m2", "m3") and m.benchmarks == ("a", "b", "c")
    np.testing.assert_array_equal(m.scores, [[1, np.nan, np.nan], [np.nan, 2.5, 3], [np.nan, 1, np.nan]])


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("model,a,b\nm1,1,x\n", r"non-numeric value 'x' in row 'm1', column 'b'"),
        ("model,a,a\nm1,1,2\n", "duplicate benchmark name.*'a'"),
        ("model,a,b\nm1,1,2\nm1,3,4\n", "duplicate model name.*'m1'"),
        ("model,a,b\n", "empty"),
        ("", "empty"),
        ("model\nm1\n", "empty"),
        ("model,a,b\nm1,1,\nm2,2,NA\n", "column.*no observed score.*'b'"),
        ("model,a,b\nm1,1,2\nm2,,\n", "row.*no observed score.*'m2'"),
        ("model,a,b\nm1,1,2\nm2,3\n", "line 3 has 2 fields, expected 3"),
        ("model,a,b\nm1,1,2,5\n", "line 2 has 4 fields"),
        ("model,a\nm1,inf\n", "infinite"),
    ],
)
def test_bad_csv_raises_clear_value_error(tmp_path, text, pattern):
    with pytest.raises(ValueError, match=pattern):
        L.load_csv(_write(tmp_path, text))


@pytest.mark.parametrize("sep", [",", ";", "\t"])
def test_csv_delimiter_is_detected_from_the_header(tmp_path, sep):
    m = L.load_csv(_write(tmp_path, sep.join(["model", "a", "b"]) + "\n" + sep.join(["m1", "1", "2"]) + "\n"
                          + sep.join(["m2", "", "3.5"]) + "\n"))
    assert m.models == ("m1", "m2") and m.benchmarks == ("a", "b")
    np.testing.assert_array_equal(m.scores, [[1, 2], [np.nan, 3.5]])


@pytest.mark.parametrize(
    ("text", "benchmarks"),
    [
        ("model;MMLU, 5-shot;GSM8K\nm1;0.5;0.6\nm2;0.4;0.7\n", ("MMLU, 5-shot", "GSM8K")),
        ('model,"a;b",c\nm1,1,2\n', ("a;b", "c")),
        ("model\tMMLU, 5-shot\nm1\t0.5\n", ("MMLU, 5-shot",)),
    ],
)
def test_csv_delimiter_detection_is_not_fooled_by_separators_inside_names(tmp_path, text, benchmarks):
    assert L.load_csv(_write(tmp_path, text)).benchmarks == benchmarks


def test_csv_delimiter_can_be_forced(tmp_path):
    path = _write(tmp_path, "model;a;b\nm1;1;2\n")
    assert L.load_csv(path, delimiter=";").benchmarks == ("a", "b")
    with pytest.raises(ValueError, match=r"header row 'model;a;b' is a single column with the comma delimiter"):
        L.load_csv(path, delimiter=",")
    with pytest.raises(ValueError, match="single character"):
        L.load_csv(path, delimiter=";;")


def test_csv_header_of_one_column_names_the_undetected_delimiter(tmp_path):
    path = _write(tmp_path, "model|a|b\n" + "".join(f"m{i}|0.{i}|0.{i + 1}\n" for i in range(8)))
    with pytest.raises(ValueError) as info:
        L.load_csv(path)
    msg = str(info.value)
    assert msg == (f"{path}: the header row 'model|a|b' is a single column: no comma, semicolon or tab separates "
                   "its fields (the delimiter could not be detected)")
    assert "score matrix is empty" not in msg


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (pickle.dumps(pd.DataFrame({"a": [1.0]})), "it looks like a Python pickle"),
        (b"PK\x03\x04" + bytes(40), "it looks like a zip archive"),
        (b"model,a\nm1,\x001\n", "it contains NUL bytes"),
        ("model,caf\u00e9\nm1,1\n".encode("latin-1"), "byte 0xe9 at offset 9 is not UTF-8"),
        (b"\xff\xd8\xff\xe0 jpeg", "byte 0xff at offset 0 is not UTF-8"),
    ],
)
def test_binary_or_pickled_file_is_not_a_text_csv(tmp_path, content, reason):
    path = tmp_path / "scores.csv"
    path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        L.load_csv(path)
    assert str(info.value).startswith(f"{path} is not a text CSV file (") and reason in str(info.value)
    assert "codec" not in str(info.value)


def test_real_npz_given_as_csv_is_not_a_text_csv(tmp_path):
    path = tmp_path / "m.npz"
    np.savez(path, B=np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"m\.npz is not a text CSV file \(it looks like a zip archive"):
        L.load_csv(path)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_csv_with_a_byte_order_mark_is_read(tmp_path, encoding):
    path = tmp_path / "scores.csv"
    path.write_bytes("model\ta\tb\nm1\t1\t2\n".encode(encoding))
    m = L.load_csv(path)
    assert m.benchmarks == ("a", "b") and m.models == ("m1",)


def test_read_csv_rows_reports_the_delimiter_it_used(tmp_path):
    rows, used = L.read_csv_rows(_write(tmp_path, "benchmark;score\nGSM8K;0.5\n"))
    assert used == ";" and rows == [["benchmark", "score"], ["GSM8K", "0.5"]]


def test_from_frame_uses_first_string_column_as_model_names():
    df = pd.DataFrame({"model": ["m1", "m2"], "a": [1.0, None], "b": ["NA", 3]})
    m = L.from_frame(df)
    assert m.models == ("m1", "m2") and m.benchmarks == ("a", "b")
    np.testing.assert_array_equal(m.scores, [[1, np.nan], [np.nan, 3]])


@pytest.mark.parametrize("flag", ["no", 0, None, "False"])
def test_allow_empty_takes_only_true_or_false(tmp_path, flag):
    path = _write(tmp_path, "model,a,b\nm1,1.0,\nm2,,\n")  # m2 observes nothing
    with pytest.raises(ValueError, match=r"allow_empty must be True or False, got"):
        L.load_csv(path, allow_empty=flag)
    df = pd.DataFrame({"model": ["m1", "m2"], "a": [1.0, None], "b": [None, None]})
    with pytest.raises(ValueError, match=r"allow_empty must be True or False, got"):
        L.from_frame(df, allow_empty=flag)
    assert L.load_csv(path, allow_empty=True).shape == (2, 2)
    with pytest.raises(ValueError):
        L.load_csv(path, allow_empty=False)


def test_from_frame_round_trips_to_frame(shared_data_dir):
    m = L.load_source("helm", data_dir=shared_data_dir)
    back = L.from_frame(m.to_frame())
    assert back.models == m.models and back.benchmarks == m.benchmarks
    np.testing.assert_array_equal(back.scores, m.scores)


@pytest.mark.parametrize(
    ("df", "pattern"),
    [
        (pd.DataFrame({"a": [1, "x"]}, index=["m1", "m2"]), "non-numeric value 'x' in row 'm2', column 'a'"),
        (pd.DataFrame([[1, 2]], index=["m1"], columns=["a", "a"]), "duplicate benchmark"),
        (pd.DataFrame({"a": [1, 2]}, index=["m1", "m1"]), "duplicate model"),
        (pd.DataFrame(), "empty"),
        (pd.DataFrame({"a": [1, 2], "b": [None, None]}, index=["m1", "m2"]), "no observed score"),
        ([[1, 2]], "DataFrame"),
    ],
)
def test_bad_frame_raises_clear_value_error(df, pattern):
    with pytest.raises(ValueError, match=pattern):
        L.from_frame(df)
