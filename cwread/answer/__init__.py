"""The answer: what is shown and how sure it is (decide), the extractive reader, spans, quotes and the support check."""
