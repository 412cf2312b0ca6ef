"""The records of a run, each a frozen dataclass declared once: what its stages produce
(`stages`: a model call, the Finder's verdicts, the packet, what was found, the outcome), what
it will do (`plan`), what is asked (`question`) and the whole run's record (`trace`)."""
