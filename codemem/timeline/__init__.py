"""Time in a memory of dialogue: dated turns, relative dates resolved against the session's
own date, statements that later ones supersede, and answers built turn by turn.

Coding sessions and commits are ranked as experiences (`codemem/ranking/`); a memory whose
best sessions are people talking (no code work) is answered from its turns instead, each
dated, since there the answer to a question is one statement and its date.
"""
