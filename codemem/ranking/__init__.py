"""Ranking strategies: small pure functions over plain candidate lists, and the answer
they shape (`answer.py`: ranked experiences as hits within a budget)."""
