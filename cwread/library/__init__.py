"""A folder of books searched as one: the catalogue and its full-text index."""

MOST_BOOKS = 3  # candidate books opened and searched for one question over a library
