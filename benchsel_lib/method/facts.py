"""What each selection objective is, declared once: its facts beside its name.

A search plans its work (:mod:`benchsel_lib.method.plan`) and a pipeline
chooses how to select (:mod:`benchsel_lib.method.selection`) from one row of
one table (:data:`OBJECTIVE_FACTS`): nested or not, whether it needs the
training rows, whether it has a budgeted form, what it costs.  The costs are
estimated operations read off timings on one core (about 2e9 a second); they
order the work, they do not promise seconds.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ObjectiveFacts", "OBJECTIVE_FACTS"]


@dataclass(frozen=True)
class ObjectiveFacts:
    """The facts of one selection objective.

    Attributes
    ----------
    nested : bool
        Whether its selection of ``k`` benchmarks is the first ``k`` of any
        larger one (a set of ``k`` medoids depends on ``k``, and so does the
        strength that leaves ``k`` non-zero coefficients: a pipeline selects
        those once per subset size).
    needs_train : bool
        Whether it selects on the training rows themselves, not only on their
        correlation (``train=`` of :func:`~benchsel_lib.method.selection.select`).
    cost_aware : bool
        Whether it has a budgeted, cost-aware form (gain per unit cost).
    cost : callable (N, k, m) -> float
        Estimated operations of one selection of ``k`` among ``N`` benchmarks
        from ``m`` training rows, the factorization of the ``N x N``
        correlation that every selection ends with (its diagnostics,
        ``N^3 / 3``) included.
    """

    cost: Callable[[float, float, float], float]
    nested: bool = True
    needs_train: bool = False
    cost_aware: bool = False


#: the objectives by name, with their facts (the costs: the terms of each objective's complexity in
#: :func:`~benchsel_lib.method.selection.select`, with the constants of the implementation)
OBJECTIVE_FACTS: dict[str, ObjectiveFacts] = {
    "entropy": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + k * k * N, cost_aware=True),
    "mi": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + (k + 1.0) * 2.0 * N**3 / 3.0, cost_aware=True),
    "random": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + k * k * N, cost_aware=True),
    "lasso": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + k * (200.0 * k * k * N + 2.0 * k * N * N)),
    "greedy": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + 20.0 * k**3 * m * N, needs_train=True, cost_aware=True),
    "anchors": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + (k + 1.0) * k * N * N, nested=False),
    "sparse": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + 6.0 * 20.0 * 60.0 * 2.0 * N**3
                             + 5.0 * (2.0 * m * N * N + 18.0 * N**3), needs_train=True),
    "mean-lasso": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + 9.0 * N**3 + 400.0 * 3.0 * N * N),
    "imputed-lasso": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + 2.0 * m * N * N + 600.0 * 3.0 * (k * k + k * N),
                                    nested=False, needs_train=True),
    "trace": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + 3.0 * k * N * N),
    "imputed-trace": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + 2.0 * m * N * N + 3.0 * k * N * N, needs_train=True),
}
