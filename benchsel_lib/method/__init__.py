"""The method: scaling -> correlation estimate -> selection -> predictor -> calibration.

* :mod:`.scaling` -- the one standardizer, the logit transform (Appendix K);
* :mod:`.covariance`, :mod:`.em`, :mod:`.correlation` -- pairwise and EM
  estimates (Section 3, Appendix G) and the correlation a pipeline uses;
* :mod:`.selection`, :mod:`.strategies` -- greedy entropy / MI / random
  (Algorithms 1-2, Appendices B-C) and the prediction-aimed selections;
* :mod:`.base`, :mod:`.gaussian`, :mod:`.regression`, :mod:`.completion`,
  :mod:`.tabimpute`, :mod:`.predictors` -- predictors of the unrevealed scores;
* :mod:`.calibration` -- predictive intervals;
* :mod:`.search` -- the recommended pipeline, chosen by inner cross-validation;
* :mod:`.predict` -- predictions for a new model in the original units.
"""
