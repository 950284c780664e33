"""Ranking strategies: small pure functions over plain candidate lists."""
