"""The method: one :class:`Pipeline` -- scaling, correlation estimate, selection, prediction, calibration.

* :mod:`.pipeline`, :mod:`.fitting` -- the :class:`Pipeline` contract
  (``Pipeline.paper``, ``Pipeline.auto``, ``fit``, ``selected``, ``predict``)
  and the fit and predict that a pipeline and its search share;
* :mod:`.scaling` -- the one standardizer and the logit transform (Appendix K);
* :mod:`.covariance`, :mod:`.em`, :mod:`.correlation` -- the pairwise and EM
  estimates (Section 3, Appendix G) and a pipeline's correlation step;
* :mod:`.objectives` -- entropy and mutual information (Algorithms 1-2,
  Appendix C): their gains over one pivoted Cholesky, their values along an
  order;
* :mod:`.selection`, :mod:`.selectors`, :mod:`.medoids`, :mod:`.sparse` -- the
  one selection entry point (the greedy that maximizes an objective, with
  budgets, mandatory benchmarks and ties, Appendix B; random; lasso path;
  predictive greedy; anchor points by k-medoids; the Lasso selections), the
  facts of each objective (nested or not, what it needs, what it costs) and a
  pipeline's selection step;
* :mod:`.base`, :mod:`.gaussian`, :mod:`.regression`, :mod:`.completion`,
  :mod:`.tabimpute`, :mod:`.predictors` -- the predictor protocol and the
  predictors (Gaussian conditional mean, ridge, soft-impute, kNN, BenchPress
  blend, TabImpute, their stack);
* :mod:`.calibration` -- Gaussian (optionally inflated) and conformal intervals;
* :mod:`.candidates`, :mod:`.choice`, :mod:`.inner_search`, :mod:`.oof`,
  :mod:`.plan` -- the inner cross-validation that chooses a pipeline's
  selection and predictor among candidates: the candidate space, the choice
  rule, the search, its out-of-fold predictions and its cost plan;
* :mod:`.given`, :mod:`.folds`, :mod:`.lowrank` -- checks of a new model's
  given scores, the inner folds, and low-rank correlations of wide matrices.
"""
from __future__ import annotations

from .calibration import Conformal, GaussianIntervals
from .correlation import Correlation
from .pipeline import Pipeline, clone
from .scaling import Scaling
from .selectors import SELECTORS, Selector

__all__ = ["Pipeline", "clone", "Scaling", "Correlation", "Selector", "SELECTORS", "GaussianIntervals", "Conformal"]
