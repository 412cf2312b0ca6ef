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


YES = ("1", "true", "yes", "on")
NO = ("0", "false", "no", "off")


def env_switch(name: str) -> bool | None:
    """The yes or no in environment variable `name` (YES, NO, any case); None if unset;
    InputError if it is neither."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    if raw.lower() in YES:
        return True
    if raw.lower() in NO:
        return False
    raise InputError(f"{name} must be one of {', '.join(YES)} or {', '.join(NO)}, not {raw!r}")


def install_extra(name: str) -> str:
    """How to install cwread's extra `name`, as pip takes it wherever cwread was installed from
    (a clone has no 'cwread[mcp]' on an index): its requirements, else `cwread[name]`."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        wanted = [r.split(";")[0].strip() for r in requires("cwread") or () if f'extra == "{name}"' in r]
    except PackageNotFoundError:
        wanted = []
    return f"pip install '{' '.join(wanted) or f'cwread[{name}]'}'"
