"""`ptprof try` and `ptprof record --apply`: a finding's fix applied at run time, measured against the run.

fixes.py (which findings have a runtime switch), measure.py (step samples of two runs and the comparison),
store.py (tried.json in the before bundle, read back by analyze / report / the GUI), session.py (the
re-runs of a bundle's recorded command). The switches themselves: core/runner/switches.py (child side).
"""
