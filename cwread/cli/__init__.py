"""The `cwread` command line (`core`: the commands, `main` and the exit codes). `--version` is
answered before anything else is imported; the rest of the CLI is imported when first used."""

from __future__ import annotations

import sys

from cwread import __version__


def entry() -> None:
    """The `cwread` command (cwread.cli.core.entry), `--version` answered at once."""
    if sys.argv[1:] == ["--version"]:
        print(f"cwread {__version__}")
        return
    from cwread.cli.core import entry as run

    run()


def __getattr__(name: str):
    """`main` (cwread.cli.core.main), imported when first asked for."""
    if name == "main":
        from cwread.cli.core import main

        return main
    raise AttributeError(f"module 'cwread.cli' has no attribute {name!r}")
