"""The retrieval replay over SWE-ContextBench Lite and the analyses that read its output.

`python -m eval.replay` runs `run.main`; `ceiling` reads a replay's result file; `fusion` is the
retired hand-set fusion, a baseline the replay scores beside codemem.
"""
