"""The book's studies: diagnostics, EM studies, tie and first-pick bands, extrapolation, pipeline comparisons."""
