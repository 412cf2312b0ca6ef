"""A folder of books searched as one: the catalogue and its full-text index."""
