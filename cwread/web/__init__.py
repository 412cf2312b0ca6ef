"""`cwread serve`: the reading room, a local web reader over the books given (`app`: the pages;
`templates/` and `static/`: their HTML, CSS and script, shipped in cwread, nothing fetched)."""
