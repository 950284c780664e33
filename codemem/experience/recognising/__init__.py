"""Recognising: what raw transcript text holds, read without any session state.

`message.recognise_events` turns one message's text into typed events (`events.py`) whatever
agent rendered it (JSON blocks, line markers, XML-ish markup, shell-style transcripts); the
other modules read facts out of one text: test outcomes (`testruns.py`), errors in command
output (`output_errors.py`), the sentences of the agent's reasoning that explain a bug or its
fix (`reasoning.py`). Nothing here imports `codemem.experience.building`.
"""
