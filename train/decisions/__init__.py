
# The decision reader's labelled sentences in this folder (README.md), read by the trainer and `make train`.
DATA_FILES = ("sentences.jsonl", "real_labelled.jsonl", "written.jsonl", "written2.jsonl", "written3.jsonl")
