"""What the user sees: the Rich view, the JSON trace, text made safe for a terminal.

The bounds a reader's text keeps to by default, declared here so that the CLI's options can
name them without importing the views."""

READER_CHARS = 15_000  # of plain text for a reader, by default (show, cast, search, MCP's tools)
# of `find`, by default: the best passages whole, the next a line each (cwread.views.reading.
# passages_within); on the dev novels' first find, as many gold paragraphs reached as by 15,000
# characters of whole passages, in half the characters (benchmarks/README.md, "The first find
# in half the characters")
FIND_CHARS = 7_000
TERMINAL_LINES = 60  # of `find` on a terminal, by default: a screenful or two
CAST_LISTED = 30  # members `cast` lists with no name asked
# lines of find --map (and MCP find's compact lines): about 1,400 characters to pick from. Readers
# of three unseen novels paid 5,908 characters a question with 15 lines, 5,238 with MCP's 8, gold
# cited alike (benchmarks/README.md, "The fourth reading benchmark"); on the dev novels a gold
# paragraph is in the first 8 for 44 of 70 questions, the first 15 for 51, at 74% more characters
MAP_CANDIDATES = 8
