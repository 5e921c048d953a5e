"""One module per chapter of the book: the tables its notebook shows and the claims it checks.

Each module holds the paper's numbers the chapter compares with (fixed, with
the paper's table and figure), functions that turn the run's results into the
tables the page displays, and ``claims(...)``, the rows of the chapter's claims
table (:mod:`benchsel_lib.book.claims`). The chapter's prose is written in the
notebook's Markdown cells; the checks under its sentences
(:func:`benchsel_lib.book.show.holds`) read the same results.

=============================  ===============================================
module                         chapter
=============================  ===============================================
:mod:`.landscape`              1. The benchmark landscape (Appendices D, E)
:mod:`.em`                     2. EM covariance estimation (Appendix G)
:mod:`.spectrum`               3. Eigenspectrum (Section 5.2, Lemma 1)
:mod:`.greedy`                 4. Greedy selection under CV (Section 5.3)
:mod:`.entropy_mi`             5. Entropy versus MI (Section 5.4)
:mod:`.stability`              6. Selection order and stability (Appendix F)
:mod:`.normality`              7. Normality diagnostics (Appendix H)
:mod:`.benchpress`             8. BenchPress (Appendix I)
:mod:`.imputers`               9. Nonlinear imputation (Appendix J)
:mod:`.logit`                  10. Logit-space scores (Appendix K)
:mod:`.own_data`               11. Using benchsel on your own data (Section 6)
:mod:`.pipelines`              12. Which selection, which predictor?
=============================  ===============================================
"""
