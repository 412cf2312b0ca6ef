"""Text as the method sees it: tokens, words and sentences."""
