"""A folder of books searched as one: the catalogue, its full-text index, Calibre libraries."""
