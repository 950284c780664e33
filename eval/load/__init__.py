"""Speed and robustness of the running service: sustained load, latency at growing sizes,
restarts, fragments, bulk ingest and the time to a first answer from the CLI and the pages.

`python -m eval.load` runs the sustained-load benchmark (`eval.load.sustained`).
"""
