"""TabImpute V2 as a predictor (Appendix J), an optional backend.

It needs the ``[tabimpute]`` extra (torch, tabimpute) and the
``tabimputev2.ckpt`` weights, which it never downloads: give them with
``checkpoint_path=`` or ``BENCHSEL_TABIMPUTE_CKPT``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .._checks import check_int
from .._random import check_seed
from .base import BasePredictor, pass_through

__all__ = [
    "TabImputeV2Imputer",
    "MissingWeightsError",
    "find_tabimpute_checkpoint",
    "TABIMPUTE_REPO",
    "TABIMPUTE_FILENAME",
    "TABIMPUTE_ENV",
]


TABIMPUTE_REPO = "Tabimpute/TabImpute"
TABIMPUTE_FILENAME = "tabimputev2.ckpt"
TABIMPUTE_ENV = "BENCHSEL_TABIMPUTE_CKPT"
#: the repository's folder in a Hugging Face hub cache
_REPO_DIR = "models--" + TABIMPUTE_REPO.replace("/", "--")


class MissingWeightsError(FileNotFoundError, ValueError):
    """The TabImpute V2 checkpoint could not be found (it is never downloaded)."""


def _hub_cache_dirs() -> list[Path]:
    """The Hugging Face hub caches to search, in order, each once."""
    dirs = [Path(os.environ[v]) for v in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE") if os.environ.get(v)]
    if os.environ.get("HF_HOME"):
        dirs.append(Path(os.environ["HF_HOME"]) / "hub")
    dirs.append(Path.home() / ".cache" / "huggingface" / "hub")
    return list(dict.fromkeys(dirs))


def _missing_weights_message(detail: str) -> str:
    dirs = ", ".join(str(d / _REPO_DIR / "snapshots" / "*" / TABIMPUTE_FILENAME) for d in _hub_cache_dirs())
    return (
        f"TabImpute V2 weights not found: {detail}. The file needed is '{TABIMPUTE_FILENAME}' from the Hugging Face "
        f"repository '{TABIMPUTE_REPO}' (benchsel never downloads it). Provide it in one of three ways: "
        f"(1) TabImputeV2Imputer(checkpoint_path='/path/to/{TABIMPUTE_FILENAME}'); "
        f"(2) export {TABIMPUTE_ENV}=/path/to/{TABIMPUTE_FILENAME}; "
        f"(3) on a machine with network access run "
        f"`huggingface-cli download {TABIMPUTE_REPO} {TABIMPUTE_FILENAME}` (or "
        f"`python -c \"from huggingface_hub import hf_hub_download; hf_hub_download('{TABIMPUTE_REPO}', "
        f"'{TABIMPUTE_FILENAME}')\"`) so that it lands in the hub cache (searched: {dirs})."
    )


def find_tabimpute_checkpoint(checkpoint_path: str | os.PathLike[str] | None = None) -> Path:
    """Locate the TabImpute V2 checkpoint without downloading anything.

    Search order: ``checkpoint_path``; ``$BENCHSEL_TABIMPUTE_CKPT``; the
    Hugging Face hub caches (``refs/main`` snapshot first, then the newest).

    Parameters
    ----------
    checkpoint_path : str or path-like, optional
        The checkpoint file itself (``~`` is expanded). When given, nothing
        else is searched.

    Returns
    -------
    pathlib.Path
        Path to an existing file.

    Raises
    ------
    MissingWeightsError
        When the given path or variable points nowhere, or nothing is found.

    Notes
    -----
    Complexity O(C + S log S) file-system look-ups for ``C`` caches and ``S`` snapshots.
    """
    env = os.environ.get(TABIMPUTE_ENV)
    if checkpoint_path is not None or env:
        p = Path(checkpoint_path if checkpoint_path is not None else env).expanduser()
        if not p.is_file():
            given = f"checkpoint_path '{p}'" if checkpoint_path is not None else f"{TABIMPUTE_ENV}='{env}'"
            raise MissingWeightsError(_missing_weights_message(f"{given} is not a file"))
        return p
    for cache in _hub_cache_dirs():
        root = cache / _REPO_DIR  # absent: neither its ref nor any snapshot is found
        ref = root / "refs" / "main"
        if ref.is_file():
            p = root / "snapshots" / ref.read_text().strip() / TABIMPUTE_FILENAME
            if p.is_file():
                return p
        newest = min((q for q in (root / "snapshots").glob(f"*/{TABIMPUTE_FILENAME}") if q.is_file()),
                     key=lambda q: (-q.stat().st_mtime, str(q)), default=None)
        if newest is not None:
            return newest
    raise MissingWeightsError(_missing_weights_message("no checkpoint path given, $" + TABIMPUTE_ENV
                                                       + " unset, and no hub cache entry"))


class TabImputeV2Imputer(BasePredictor):
    """Zero-shot TabImpute V2 as an imputation backend (Appendix J; optional ``[tabimpute]`` extra).

    Each batch of query rows is imputed as ``[context; batch]``; the context
    is the training rows, subsampled (seeded) to ``max_context_rows``
    (Appendix J: 3,800 context rows, batches of 200).

    Parameters
    ----------
    checkpoint_path : str or PathLike, optional
        Weights file; otherwise ``$BENCHSEL_TABIMPUTE_CKPT`` or the hub cache
        (see :func:`find_tabimpute_checkpoint`).  Never downloaded.
    device : str, optional
        ``"cuda"`` when available, else ``"cpu"``.
    max_context_rows : int, default 3800
        Context subsample size.
    batch_size : int, default 200
        Query rows imputed together (rows of one batch see each other as context;
        ``batch_size=1`` imputes each model alone).
    seed : int, default 0
        Seed of the context subsample.

    Raises
    ------
    MissingWeightsError
        At construction when no checkpoint can be found.
    ImportError
        At the first ``predict`` when torch / tabimpute are not installed.
    ValueError
        When the checkpoint does not contain the V2 weights.

    Notes
    -----
    Cost: one transformer pass per batch over a (context + batch) x N matrix,
    attention O((R + N) R N) per layer for R rows.
    """

    def __init__(
        self,
        checkpoint_path: str | os.PathLike[str] | None = None,
        *,
        device: str | None = None,
        max_context_rows: int = 3800,
        batch_size: int = 200,
        seed: int = 0,
    ):
        self.checkpoint_path = find_tabimpute_checkpoint(checkpoint_path)
        self.device = device
        self.max_context_rows = check_int(max_context_rows, "max_context_rows")
        self.batch_size = check_int(batch_size, "batch_size")
        self.seed = check_seed(seed)
        self.name = "tabimpute-v2"
        self._model: Any = None

    def __repr__(self) -> str:
        return (
            f"TabImputeV2Imputer(checkpoint_path='{self.checkpoint_path}', device={self.device!r}, "
            f"max_context_rows={self.max_context_rows}, batch_size={self.batch_size}, seed={self.seed})"
        )

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        try:
            import torch
            from tabimpute.tabimpute_v2 import TabImputeV2
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "TabImputeV2Imputer needs the optional dependencies torch and tabimpute: "
                "pip install 'benchsel[tabimpute]' (torch==2.13.0, tabimpute==0.0.4)"
            ) from exc
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            ckpt = torch.load(str(self.checkpoint_path), map_location="cpu", weights_only=True, mmap=True)
        except Exception:  # older, non-zip checkpoint formats cannot be memory-mapped
            ckpt = torch.load(str(self.checkpoint_path), map_location="cpu", weights_only=True)
        if not isinstance(ckpt, dict) or not isinstance(ckpt.get("model"), dict):
            raise ValueError(
                f"{self.checkpoint_path} is not a TabImpute V2 checkpoint: expected a dict with a 'model' state dict"
            )
        model = TabImputeV2(device=device, checkpoint_path=str(self.checkpoint_path))
        expected = model.model.state_dict()
        missing = [k for k in expected if k not in ckpt["model"]]
        bad_shape = [k for k in expected if k in ckpt["model"] and tuple(ckpt["model"][k].shape) != tuple(expected[k].shape)]
        if missing or bad_shape:
            raise ValueError(
                f"{self.checkpoint_path} does not hold the TabImpute V2 weights: {len(missing)} of {len(expected)} "
                f"parameters missing, {len(bad_shape)} with the wrong shape (e.g. {(missing + bad_shape)[:3]}); "
                "refusing to run with random weights"
            )
        del ckpt
        self.device = device
        self._model = model
        return model

    def context_rows(self, n_train: int) -> np.ndarray:
        """Indices of the training rows used as context (sorted; seeded subsample when too many).

        O(n_train), plus O(R log R) to sort a subsample of ``R = max_context_rows`` rows.
        """
        if n_train <= self.max_context_rows:
            return np.arange(n_train)
        return np.sort(np.random.default_rng(self.seed).choice(n_train, size=self.max_context_rows, replace=False))

    def _predict(self, train: np.ndarray, query: np.ndarray, cov: np.ndarray | None) -> np.ndarray:
        """Predict every entry of ``query`` (v, N) in standardized space; ``cov`` is ignored."""
        model = self._load()
        context = train[self.context_rows(train.shape[0])]
        out = np.empty_like(query)
        for start in range(0, query.shape[0], self.batch_size):
            batch = query[start:start + self.batch_size]
            stacked = np.ascontiguousarray(np.vstack([context, batch]), dtype=np.float64)
            imputed = np.asarray(model.impute(stacked.copy()), dtype=float)
            out[start:start + batch.shape[0]] = imputed[context.shape[0]:]
        if not np.isfinite(out).all():
            raise ValueError("TabImpute returned non-finite predictions")
        return pass_through(out, query)
