"""Building: a session's recognised events become its experience (card, steps, terms).

`builder.build_experience` feeds each message's events to the `Tracker` (`tracker.py`), which
follows the session once: tool calls as actions (`actions.py`, `patches.py`), what it has
seen of each file (`fileviews.py`), the symbols an edit touched (`edited_symbols.py`), paths
and scratch work (`checkout_paths.py`, `scratch.py`); the builder then writes the card
(`render.py`, `diff_text.py`) and its step records (`steps.py`).
"""
