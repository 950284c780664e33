"""Training of the experience reranker that codemem.ranking.rerank runs (see README.md)."""
