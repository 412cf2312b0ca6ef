"""The progress callback the core reports through: (stage, done, total), e.g. ("finder", 3, 8).

Declared once, at the bottom, so retrieval, the pipeline, the eval harness and the CLI's
progress bars agree on it; None wherever a caller wants no reports.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]
