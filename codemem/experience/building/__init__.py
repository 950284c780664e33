"""Building: a session's recognised events become its experience (card, steps, terms).

`builder.build_experience` feeds each message's events to the `Tracker` (`tracker.py`), which
follows the session once: tool calls as actions (`actions.py`, `patches.py`), what it has seen
of each file (`fileviews.py`), the symbols an edit touched (`symbols.py`), paths and scratch
work (`paths.py`, `scratch.py`); the builder then writes the card (`render.py`, `diffs.py`)
and its step records (`steps.py`).
"""
