"""The evaluation protocol of Section 5.1: splits, cross-validation, sweeps, the estimate cache, summaries."""
