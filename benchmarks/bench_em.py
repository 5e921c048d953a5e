"""Speed and agreement of ``benchsel_lib.method.em.em_covariance`` against a plain EM.

Run on demand (not a test)::

    python benchmarks/bench_em.py            # MTEB and Merged, paper settings
    python benchmarks/bench_em.py --quick    # fewer repetitions

The script contains a deliberately straightforward EM written the way
Appendix G describes it: a Python loop over the M models, one Cholesky
factorization of each model's observed block (``scipy.linalg.cho_factor``),
a dense N x N conditional-covariance matrix per model added to the
correction sum, and a full eigendecomposition for the PSD projection after
every M-step. Both implementations run in the same process on the same
standardized matrices (the CV standardization, ``std_floor="relative"``,
applied to the full matrix), and the script prints

(a) agreement: both run from the same start for the same number of
    iterations (to ``tol = 1e-9`` or until ``--agree-iter`` iterations), and
    the maximum absolute difference of the covariance and the mean;
(b) speed at the paper's settings for a full-matrix estimate
    (``em_settings(..., config="released")``: tolerance ``1e-6`` in the light
    regime, ``5e-4`` in the heavy one): wall time per fit, iterations, time per iteration and
    the ratio, for the library's plain iteration and for its default
    (SQUAREM in the light regime, see ``em_settings``);
(c) that the default leaves the paper's CV unchanged: selections and mean
    R^2 at 10% holdout with the default settings and with plain EM in every
    fit (``--no-cv`` skips it);
(d) the time per iteration spent inside the two LAPACK kernels every EM
    iteration needs (the pattern inverses and the PSD floor's
    eigendecomposition) next to the per-iteration budget of a ``--target``
    (default 30) times speed-up over the plain EM.

BLAS is limited to one thread (set before NumPy is imported) so that the
numbers do not depend on how busy the other cores are; pass ``--threads``
to change that.
"""
from __future__ import annotations

import argparse
import os
import sys


def _parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="mteb,merged", help="comma-separated: mteb, merged, benchpress")
    ap.add_argument("--repeats", type=int, default=3, help="timed fits per implementation (best is reported)")
    ap.add_argument("--agree-iter", type=int, default=2000, help="iteration cap of the agreement run (a)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads")
    ap.add_argument("--quick", action="store_true", help="one repetition, agreement run capped at 300 iterations")
    ap.add_argument("--data-dir", default=None, help="directory with <name>.matrix.npz (fallback loader)")
    ap.add_argument("--no-cv", action="store_true", help="skip (c), the CV comparison of default and plain EM")
    ap.add_argument("--target", type=float, default=30.0, help="speed-up target used for the budget in (d)")
    ap.add_argument("--json", default=None, metavar="PATH",
                    help="also write the printed figures to PATH (benchmarks/results/bench-em.json: the book "
                         "quotes it)")
    return ap.parse_args()


ARGS = _parse() if __name__ == "__main__" else None
if ARGS is not None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy.linalg as sla  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import result_file  # noqa: E402  (the result files the book quotes)
from benchsel_lib.method.covariance import pairwise_covariance  # noqa: E402
from benchsel_lib.method.em import em_covariance, em_settings  # noqa: E402
from benchsel_lib.method.scaling import fit_standardizer  # noqa: E402

# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------


def load_scores(name: str, data_dir: str | None = None) -> np.ndarray:
    """Scores with NaN for missing: ``benchsel_lib.data.load_matrix`` when it exists, else the npz."""
    try:
        from benchsel_lib.data import load_matrix  # type: ignore[attr-defined]

        return np.asarray(load_matrix(name, **({"data_dir": data_dir} if data_dir else {})).scores, dtype=float)
    except (ImportError, AttributeError):
        pass
    candidates = [Path(data_dir)] if data_dir else []
    if os.environ.get("BENCHSEL_DATA_DIR"):
        candidates.append(Path(os.environ["BENCHSEL_DATA_DIR"]))
    root = Path(__file__).resolve().parents[1]
    candidates += [root / "data", root.parent / "shared" / "data"]
    for d in candidates:
        f = d / f"{name}.matrix.npz"
        if f.exists():
            with np.load(f, allow_pickle=False) as z:
                return np.where(z["O"] > 0, z["B"], np.nan)
    raise FileNotFoundError(f"{name}.matrix.npz not found in {[str(c) for c in candidates]}")


# ---------------------------------------------------------------------------
# the plain EM (Appendix G, written as directly as possible)
# ---------------------------------------------------------------------------


def plain_em(X, *, max_iter, tol, eps_psd, shrinkage_alpha, init=None):
    """Per-model loop EM with a dense N x N correction per model.

    Returns ``(mean, cov, n_iter, converged)``.
    """
    M, N = X.shape
    obs = ~np.isnan(X)
    if init is None:
        mu = np.nanmean(X, axis=0)
        S = pairwise_covariance(X, mean=mu)
        floor = eps_psd if eps_psd is not None else 1e-6 * np.trace(S) / N
        w, V = np.linalg.eigh(S)
        S = (V * np.maximum(w, floor)) @ V.T
        if shrinkage_alpha > 0:
            S = (1 - shrinkage_alpha) * S + shrinkage_alpha * np.trace(S) / N * np.eye(N)
    else:
        mu, S = init[0].copy(), init[1].copy()
    converged = False
    n_iter = 0
    for _ in range(max_iter):
        Xc = X.copy()
        Csum = np.zeros((N, N))
        for i in range(M):
            o = np.flatnonzero(obs[i])
            m = np.flatnonzero(~obs[i])
            if m.size == 0:
                continue
            cf = sla.cho_factor(S[np.ix_(o, o)])
            Xc[i, m] = mu[m] + S[np.ix_(m, o)] @ sla.cho_solve(cf, X[i, o] - mu[o])
            C = np.zeros((N, N))
            C[np.ix_(m, m)] = S[np.ix_(m, m)] - S[np.ix_(m, o)] @ sla.cho_solve(cf, S[np.ix_(o, m)])
            Csum += C
        mu_new = Xc.mean(axis=0)
        R = Xc - mu_new
        S_new = (R.T @ R + Csum) / M
        S_new = (S_new + S_new.T) / 2
        if eps_psd is not None:
            w, V = np.linalg.eigh(S_new)
            S_new = (V * np.maximum(w, eps_psd)) @ V.T
            S_new = (S_new + S_new.T) / 2
        rel = np.linalg.norm(S_new - S) / np.linalg.norm(S)
        mu, S = mu_new, S_new
        n_iter += 1
        if rel < tol:
            converged = True
            break
    if shrinkage_alpha > 0:
        S = (1 - shrinkage_alpha) * S + shrinkage_alpha * np.trace(S) / N * np.eye(N)
    return mu, S, n_iter, converged


# ---------------------------------------------------------------------------


#: The printed figures, as printed, for ``--json`` (keys ``<dataset>_<figure>``).
VALUES: dict[str, str] = {}


def _keep(*parts, text) -> None:
    VALUES[result_file.key(*parts)] = str(text)


def main() -> int:
    args = ARGS
    load_start = os.getloadavg()
    repeats = 1 if args.quick else max(1, args.repeats)
    agree_iter = 300 if args.quick else args.agree_iter
    print(f"BLAS threads: {args.threads}; numpy {np.__version__}")
    for name in [s.strip() for s in args.datasets.split(",") if s.strip()]:
        X = load_scores(name, args.data_dir)
        Z = fit_standardizer(X, std_floor="relative").transform(X)
        M, N = Z.shape
        frac = float((~np.isnan(Z)).mean())
        st = em_settings(M, N, frac, config="released")
        alpha = float(st["shrinkage"] or 0.0)
        print(f"\n== {name}: {M} x {N}, {100 * frac:.1f}% observed; settings {st}")
        _keep(name, "shape", text=f"{M} x {N}")
        _keep(name, "observed_pct", text=f"{100 * frac:.1f}")
        _keep(name, "tol", text=f"{st['tol']:g}")
        _keep(name, "accelerate", text=st["accelerate"] or "none")

        agreement(name, Z, st, alpha, agree_iter)

        # (b) speed at the paper's settings
        def run_plain():
            return plain_em(Z, max_iter=st["max_iter"], tol=st["tol"], eps_psd=st["eps_psd"], shrinkage_alpha=alpha)

        def run_lib_plain():
            return em_covariance(Z, **{**st, "accelerate": None})

        def run_lib():
            return em_covariance(Z, **st)

        t_plain, t_libp, t_lib = [], [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            out_p = run_plain()
            t_plain.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            out_lp = run_lib_plain()
            t_libp.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            out_l = run_lib()
            t_lib.append(time.perf_counter() - t0)
        tp, tlp, tl = min(t_plain), min(t_libp), min(t_lib)
        it_p, it_lp, it_l = out_p[2], out_lp.n_iter, out_l.n_iter
        print(
            f"(b) paper settings, tol={st['tol']:g}:\n"
            f"    plain EM          {tp:8.3f} s/fit, {it_p:4d} it, {1e3 * tp / it_p:6.2f} ms/it\n"
            f"    library, plain    {tlp:8.3f} s/fit, {it_lp:4d} it, {1e3 * tlp / it_lp:6.2f} ms/it  "
            f"ratio {tp / tlp:5.1f}x  max|cov diff| vs plain EM = {np.abs(out_lp.cov - out_p[1]).max():.2e}\n"
            f"    library, default  {tl:8.3f} s/fit, {it_l:4d} it, {1e3 * tl / it_l:6.2f} ms/it  "
            f"ratio {tp / tl:5.1f}x  (accelerate={st['accelerate']}, converged={out_l.converged})  "
            f"max|cov diff| vs plain EM = {np.abs(out_l.cov - out_p[1]).max():.2e}"
        )
        for label, t, it, cov in (("plain", tp, it_p, None), ("libplain", tlp, it_lp, out_lp.cov),
                                  ("lib", tl, it_l, out_l.cov)):
            _keep(name, label, "s", text=f"{t:.3f}")
            _keep(name, label, "it", text=it)
            _keep(name, label, "ms_it", text=f"{1e3 * t / it:.2f}")
            if cov is not None:
                _keep(name, label, "ratio", text=f"{tp / t:.1f}")
                _keep(name, label, "target", text="met" if tp / t >= args.target else "not met")
                _keep(name, label, "cov_diff", text=f"{np.abs(cov - out_p[1]).max():.2e}")
        if not args.no_cv:
            cv_check(name, args.data_dir)
        kernel_floor(Z, st, tp, args.target, name=name)
    _keep("target", text=f"{args.target:g}")
    _keep("repeats", text=repeats)
    if args.json:
        result_file.write(args.json, VALUES, load_start=load_start)
    return 0


def agreement(name: str, Z: np.ndarray, st: dict, alpha: float, agree_iter: int) -> None:
    """(a) Agreement of the library's iterates with the plain EM, to tol 1e-9 (and of its accelerated default)."""
    t0 = time.perf_counter()
    mu_p, S_p, it_p, conv_p = plain_em(
        Z, max_iter=agree_iter, tol=1e-9, eps_psd=st["eps_psd"], shrinkage_alpha=alpha
    )
    t_plain_a = time.perf_counter() - t0
    r = em_covariance(
        Z, max_iter=agree_iter, tol=1e-9, eps_psd=st["eps_psd"], shrinkage=st["shrinkage"], accelerate=None
    )
    print(
        f"(a) tol=1e-9 (cap {agree_iter}): plain {it_p} it (converged={conv_p}, {t_plain_a:.1f} s), "
        f"library {r.n_iter} it (converged={r.converged}); "
        f"max|cov diff| = {np.abs(r.cov - S_p).max():.2e}, max|mean diff| = {np.abs(r.mean - mu_p).max():.2e}"
    )
    _keep(name, "agree_plain_it", text=it_p)
    _keep(name, "agree_lib_it", text=r.n_iter)
    _keep(name, "agree_cov_diff", text=f"{np.abs(r.cov - S_p).max():.2e}")
    _keep(name, "agree_mean_diff", text=f"{np.abs(r.mean - mu_p).max():.2e}")
    if st["accelerate"]:
        ra = em_covariance(Z, **{**st, "tol": 1e-9, "max_iter": max(agree_iter, st["max_iter"])})
        diff = (f"max|cov diff| vs the plain EM fixpoint above = {np.abs(ra.cov - S_p).max():.2e}" if conv_p
                else "plain EM did not converge within the cap: no fixpoint to compare (raise --agree-iter)")
        print(f"    library default ({st['accelerate']}) to tol=1e-9: {ra.n_iter} it (converged={ra.converged}); "
              + diff)
        _keep(name, "agree_accel_it", text=ra.n_iter)
        if conv_p:
            _keep(name, "agree_accel_cov_diff", text=f"{np.abs(ra.cov - S_p).max():.2e}")


def kernel_floor(Z: np.ndarray, st: dict, t_plain: float, target: float, name: str = "") -> None:
    """(d) Time inside the two LAPACK kernels that every EM iteration needs.

    Runs the library's plain iteration once more with timers around its
    batched pattern inverses (``potrf`` + ``potri`` per missingness pattern)
    and the eigendecomposition of the PSD floor, and prints both per
    iteration next to the per-iteration budget that ``target`` times less
    wall time than the plain EM (``t_plain`` per fit) allows at the same
    iteration count. When the two kernels alone exceed the budget, no
    rearrangement of the remaining NumPy code can meet the target.
    """
    from benchsel_lib.method import em as estimation

    spent = {"inverses": 0.0, "eigh": 0.0}

    def timed(fn, key):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[key] += time.perf_counter() - t0

        return wrapper

    class _TimedLinalg:
        """``scipy.linalg`` with a timed ``eigh`` (only inside ``estimation``)."""

        eigh = staticmethod(timed(sla.eigh, "eigh"))

        def __getattr__(self, name):
            return getattr(sla, name)

    real_inv, real_sla = estimation._batched_inv_logdet, estimation._sla
    estimation._batched_inv_logdet = timed(real_inv, "inverses")
    estimation._sla = _TimedLinalg()
    try:
        t0 = time.perf_counter()
        r = em_covariance(Z, **{**st, "accelerate": None})
        total = time.perf_counter() - t0
    finally:
        estimation._batched_inv_logdet, estimation._sla = real_inv, real_sla
    n = r.n_iter
    inv_ms, eig_ms = 1e3 * spent["inverses"] / n, 1e3 * spent["eigh"] / n
    budget = 1e3 * t_plain / target / n
    verdict = "below" if inv_ms + eig_ms < budget else "ABOVE"
    print(
        f"(d) kernels per iteration ({n} it, {1e3 * total / n:.2f} ms/it in all): pattern inverses {inv_ms:.2f} ms "
        f"+ PSD-floor eigendecomposition {eig_ms:.2f} ms = {inv_ms + eig_ms:.2f} ms, {verdict} the "
        f"{target:g}x budget of {budget:.2f} ms/it"
    )
    _keep(name, "kernel_it", text=n)
    _keep(name, "kernel_ms_it", text=f"{1e3 * total / n:.2f}")
    _keep(name, "kernel_inv_ms", text=f"{inv_ms:.2f}")
    _keep(name, "kernel_eig_ms", text=f"{eig_ms:.2f}")
    _keep(name, "kernel_sum_ms", text=f"{inv_ms + eig_ms:.2f}")
    _keep(name, "kernel_budget_ms", text=f"{budget:.2f}")
    _keep(name, "kernel_verdict", text=verdict.lower())


def cv_check(name: str, data_dir: str | None) -> None:
    """(c) The paper's CV at 10% holdout with the default settings vs plain EM everywhere.

    Prints the share of (pipeline, fold) runs whose 15 selections are identical
    and the largest change of the mean R^2 over k, next to the fold noise
    (the standard error sd / sqrt(K) of the mean across folds).
    """
    import functools

    from benchsel_lib.data import load_matrix
    from benchsel_lib.method import correlation as estimation
    from benchsel_lib.method.pipeline import Pipeline
    from benchsel_lib.protocol.cv import cross_validate

    m = load_matrix(name, **({"data_dir": data_dir} if data_dir else {}))
    kw = dict(pipelines=[Pipeline.paper(objective=o) for o in ("entropy", "mi", "random")], holdouts=(0.1,), k_max=15,
              n_folds=10, seed=0, n_jobs=1, progress=False)
    t0 = time.perf_counter()
    default = cross_validate(m, **kw)
    t_default = time.perf_counter() - t0
    real = estimation.em_settings
    estimation.em_settings = functools.partial(real, accelerate=None)
    try:
        t0 = time.perf_counter()
        plain = cross_validate(m, **kw)
        t_plain = time.perf_counter() - t0
    finally:
        estimation.em_settings = real
    key = ["pipeline", "fold", "k"]
    j = default.merge(plain, on=key, suffixes=("", "_plain"))
    last = j[j.k == j.k.max()]
    same = float((last.selected.astype(str) == last.selected_plain.astype(str)).mean())
    worst = 0.0
    noise = np.inf
    for _, g in j.groupby("pipeline"):
        d = g.groupby("k").r2.mean() - g.groupby("k").r2_plain.mean()
        worst = max(worst, float(d.abs().max()))
        noise = min(noise, float((g.groupby("k").r2_plain.std() / np.sqrt(10)).min()))
    print(
        f"(c) CV, 10% holdout, entropy/MI/random, k=1..15, 10 folds: default {t_default:.1f} s, plain EM "
        f"{t_plain:.1f} s; identical selections in {100 * same:.0f}% of (pipeline, fold) runs; "
        f"max |change of mean R^2| = {worst:.4f} (smallest fold standard error {noise:.3f})"
    )
    _keep(name, "cv_default_s", text=f"{t_default:.1f}")
    _keep(name, "cv_plain_s", text=f"{t_plain:.1f}")
    _keep(name, "cv_same_pct", text=f"{100 * same:.0f}")
    _keep(name, "cv_max_change", text=f"{worst:.4f}")
    _keep(name, "cv_noise", text=f"{noise:.3f}")


if __name__ == "__main__":
    raise SystemExit(main())
