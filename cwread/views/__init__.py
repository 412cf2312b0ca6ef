"""What the user sees: the Rich view, the JSON trace, text made safe for a terminal."""
