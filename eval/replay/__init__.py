"""The retrieval replay over SWE-ContextBench Lite and the analyses that read its output.

`python -m eval.replay` runs `run.main`; `ceiling` and `relevance_cv` read a replay's result
file or kept ingest.
"""
