"""Settings read from the environment (`CWREAD_*`), validated once, in one way; and the settings
file, whose values stand in for the environment's where it holds none."""

from __future__ import annotations

import fcntl
import math
import os
from collections.abc import Callable
from pathlib import Path

from cwread.errors import CwreadError, InputError, keep_secret, url_hidden


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


def require_extra(module: str, extra: str, needs: str):
    """Module `module` imported, or an InputError that says what `needs` ("cwread mcp needs
    the MCP SDK"), what is missing and how to install cwread's `extra`."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise InputError(f"{needs} ({exc.name} is missing): {install_extra(extra)}") from None


# The settings file: what a user sets once (`cwread config set KEY VALUE`), each key the
# environment variable it stands for. Flags win over the environment, the environment over
# the file: the file's values are put in the environment, at the faces, where it holds none.
# A stage's setting ("finder.read_tokens", a dotted key: cwread.settings.knob_names) stands for
# no variable: the faces read it (`settings_file_knobs`) before a run's own.
SETTINGS_FILE_KEYS = {
    "backend": "CWREAD_BACKEND",
    "finder_model": "CWREAD_FINDER_MODEL",
    "interpreter_model": "CWREAD_INTERPRETER_MODEL",
    "base_url": "OPENAI_BASE_URL",
    "finder_base_url": "CWREAD_FINDER_BASE_URL",
    "api_key": "OPENAI_API_KEY",
    "ollama_host": "OLLAMA_HOST",
    "gguf": "CWREAD_GGUF",
    "finder_lora": "CWREAD_FINDER_LORA",
    "num_ctx": "CWREAD_NUM_CTX",
    "timeout": "CWREAD_TIMEOUT",
    "constraint": "CWREAD_CONSTRAINT",
    "embedder": "CWREAD_EMBEDDER",
    "width": "CWREAD_WIDTH",
    "library_url": "CWREAD_LIBRARY_URL",
}
SECRET_KEYS = frozenset({"api_key"})  # never printed: shown as "(set)"


def settings_path() -> Path:
    """The settings file: CWREAD_CONFIG, else config.toml in the user's config folder
    ($XDG_CONFIG_HOME/cwread, else ~/.config/cwread)."""
    explicit = os.environ.get("CWREAD_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")  # a relative one ignored, as for the cache
    base = xdg if xdg and os.path.isabs(xdg) else str(Path.home() / ".config")
    return Path(base) / "cwread" / "config.toml"


def read_settings_file(path: Path | None = None) -> dict[str, str]:
    """The settings the file holds, each a string ({} where there is no file); InputError, one
    line, for a file that is not TOML or holds a key cwread does not take."""
    path = path or settings_path()
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):  # HOME=/dev/null: no settings file either
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the settings file ({getattr(exc, 'strerror', None) or exc})") from None
    import tomllib  # here: where there is no settings file, no run loads the parser

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not a TOML settings file ({exc}); mend it or remove it") from None
    data = {**{k: v for k, v in data.items() if not isinstance(v, dict)}, **_dotted(data)}
    unknown = sorted(key for key in data if key not in SETTINGS_FILE_KEYS and not is_stage_key(key))
    if unknown:
        raise InputError(f"{path}: unknown setting {unknown[0]!r}; it takes: {', '.join(SETTINGS_FILE_KEYS)}")
    bad = next((k for k, v in data.items() if not isinstance(v, str | int | float) or isinstance(v, bool)), None)
    if bad is not None:
        raise InputError(f"{path}: {bad} must be a string or a number")
    return {key: str(value) for key, value in data.items()}


def _dotted(data: dict) -> dict[str, object]:
    """A table's entries as dotted keys: `finder.read_tokens = 2000` is TOML's table "finder"."""
    return {f"{table}.{key}": value for table, entries in data.items() if isinstance(entries, dict) for key, value in entries.items()}


def is_stage_key(key: str) -> bool:
    """Whether `key` is written as a stage's setting is, "stage.field" (which are: cwread.settings)."""
    stage, dot, name = key.partition(".")
    return bool(dot and stage.isidentifier() and name.isidentifier())


# Stages' settings the environment may give (below the flags, above the settings file): a folder
# for the judge and another answer reader, as `python -m training` exports them.
STAGE_VARIABLES = {"CWREAD_JUDGE": "finder.judge_folder", "CWREAD_READER": "answer.reader_folder"}


def environment_knobs() -> dict[str, str]:
    """The stages' settings the environment gives (STAGE_VARIABLES), read at the faces."""
    return {key: os.environ[name] for name, key in STAGE_VARIABLES.items() if os.environ.get(name)}


def settings_file_knobs() -> dict[str, str]:
    """The stages' settings the settings file holds, "stage.field" → its text."""
    return {key: value for key, value in read_settings_file().items() if is_stage_key(key)}


def apply_settings_file() -> dict[str, str]:
    """The settings file's values put in the environment where it holds none (flags and the
    environment win); the keys applied, with their values."""
    applied = {}
    path = settings_path()
    for key, value in read_settings_file(path).items():
        if key not in SETTINGS_FILE_KEYS:
            continue  # a stage's setting: read by the faces, not through the environment
        name = SETTINGS_FILE_KEYS[key]
        if not os.environ.get(name):
            try:  # written by hand (config set checks it): said of the file, not of CWREAD_WIDTH
                _check_value(key, value)
            except InputError as exc:
                raise InputError(f"{path}: {exc}; mend it: cwread config set {key} VALUE, or cwread config unset {key}") from None
            os.environ[name] = applied[key] = value
        if key in SECRET_KEYS:
            keep_secret(value)
    return applied


def write_setting(key: str, value: str | None) -> tuple[Path, bool]:
    """Set `key` to `value` in the settings file (None: remove it), written whole through a
    temporary file, readable by its owner alone (it may hold a key); the file, and whether it
    changed (a key removed that it did not hold: not written, nor made). InputError for an
    unknown key."""
    from cwread.cache import write_file_atomic

    if key not in SETTINGS_FILE_KEYS and not is_stage_key(key):
        raise InputError(
            f"unknown setting {key!r}; cwread config takes: {', '.join(SETTINGS_FILE_KEYS)}, and a stage's (finder.read_tokens)"
        )
    if value is not None:
        _check_value(key, value)
    path = settings_path()
    if value is None and not path.exists():  # nothing to remove: no folder or lock made for it
        return path, False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.with_name(f".{path.name}.lock"), "a")  # noqa: SIM115  (closed below)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the settings file ({exc.strerror or exc})") from None
    with lock:
        # one writer at a time: two `config set` at once each read the file before the other
        # wrote, and the later write lost the earlier's key
        fcntl.flock(lock, fcntl.LOCK_EX)
        settings = read_settings_file(path)
        if value is None and key not in settings:
            return path, False
        if value is None:
            del settings[key]
        else:
            settings[key] = value
        text = "# cwread's settings: `cwread config set KEY VALUE`; flags and CWREAD_* variables win\n" + "".join(
            f"{k} = {_toml_string(v)}\n" for k, v in settings.items()
        )
        write_file_atomic(path, text, mode=0o600)
    return path, True


MIN_WIDTH = 20  # columns a wrapped view needs at least: narrower, a paragraph's id "[1209]" is cut


def check_width(width: int | None) -> None:
    """A usage error (one line, exit 2) for a width no view is readable at."""
    if width is not None and not (width == 0 or width >= MIN_WIDTH):
        raise CwreadError(f"--width (CWREAD_WIDTH) must be 0 (never wrap) or at least {MIN_WIDTH} columns, not {width}")


# the settings whose value is a number: what it must be (written wrong, every later command
# would fail on it, and name the environment variable it stands in for)
_NUMBERS = {
    "width": (
        int, f"a whole number of columns, 0 (never wrap) or {MIN_WIDTH} or more", lambda n: n == 0 or n >= MIN_WIDTH
    ),
    "num_ctx": (int, "a whole number of tokens above 0", lambda n: n > 0),
    "timeout": (float, "a number of seconds above 0", lambda n: 0 < n < float("inf")),
}


def _check_value(key: str, value: str) -> None:
    """InputError where `value` cannot be `key`'s number (other settings are checked where they
    are read, in their own words: "unknown constraint 'x'; choose one of ...")."""
    if key in _NUMBERS:
        kind, what, holds = _NUMBERS[key]
        try:
            ok = holds(kind(value))
        except ValueError:
            ok = False
        if not ok:
            raise InputError(f"{key} must be {what}, not {value!r}")


def _toml_string(value: str) -> str:
    """`value` as a TOML basic string: JSON's escapes, and DEL escaped too (TOML forbids it bare)."""
    import json

    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def shown_setting(key: str, value: str) -> str:
    """A setting's value as it may be printed: a secret's never, nor the password of a URL (a
    server's or a library's: scheme://user:***@host, ?password=***)."""
    return "(set)" if key in SECRET_KEYS else url_hidden(value)
