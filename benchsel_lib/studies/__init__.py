"""The book's studies, built on the method and the protocol.

* :mod:`.diagnostics` -- eigenspectrum and Lemma 1, normality tests, selection stability;
* :mod:`.em` -- EM settings ablation, synthetic recovery, the tolerance's effect on selections;
* :mod:`.bands` -- CV curves under every tie rule and every forced first pick;
* :mod:`.first_pick` -- the first entropy pick under each tie rule and the paper's rounding;
* :mod:`.extrapolation` -- train on the weaker models, predict the strongest;
* :mod:`.landscape` -- Figure 8's node counts against Table 3's matched counts;
* :mod:`.pipelines` -- pipelines compared under the protocol (paired differences, coverage).
"""
