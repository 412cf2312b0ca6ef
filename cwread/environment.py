"""Settings read from the environment (`CWREAD_*`), validated once, in one way."""

from __future__ import annotations

import math
import os
from collections.abc import Callable

from cwread.errors import InputError


def env_positive(name: str, kind: Callable[[str], int | float]) -> int | float | None:
    """The positive, finite number in environment variable `name`; None if unset; InputError
    if bad (nan and inf included: a timeout of inf would never time out)."""
    raw = os.environ.get(name)
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value <= 0:
        raise InputError(f"{name} must be a positive number, not {raw!r}")
    return value
