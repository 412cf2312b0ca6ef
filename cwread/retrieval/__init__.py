"""Retrieval: the lexical and dense indexes, their fusion into anchors, and the segments read.

The choices the CLI names, declared here so that it can name them without loading the indexes."""

METHODS = ("fused", "bm25", "dense")  # how paragraphs are ranked (cwread.retrieval.fusion)
DEFAULT_EMBEDDER = "minilm-static"  # the dense model (cwread.retrieval.embedders)
