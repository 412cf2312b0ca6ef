"""What the user sees: the Rich view, the JSON trace, text made safe for a terminal.

The bounds a reader's text keeps to by default, declared here so that the CLI's options can
name them without importing the views."""

READER_CHARS = 15_000  # of plain text for a reader, by default (find, cast, MCP's tools): the best passages, not all
TERMINAL_LINES = 60  # of `find` on a terminal, by default: a screenful or two
CAST_LISTED = 30  # members `cast` lists with no name asked
