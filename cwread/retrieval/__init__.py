"""Retrieval: the lexical and dense indexes, their fusion into anchors, and the segments read."""
