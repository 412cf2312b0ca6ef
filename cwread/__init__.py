"""cwread: a reading assistant for long plain-text narratives that cites numbered paragraphs."""

__version__ = "0.1.0"
