"""The Typer application every command module registers on, and what they share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from cwread import __version__
from cwread.cli.options import Output
from cwread.views.help import FORMAT_NAMES

app = typer.Typer(
    name="cwread",
    help=(
        f"Read long narratives ({FORMAT_NAMES}) with numbered paragraphs: show them, find the "
        "passages a question needs, and (with a model) answer with [N] citations.\n\n"
        "Exit codes: 0 ok, 1 claim FALSE, 2 usage or input error, 3 model, backend or cache failure, "
        "4 no answer, 70 internal error, 130 interrupted."
    ),
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},  # every command's too: click contexts inherit it
    add_completion=True,
    rich_markup_mode="markdown",  # on a terminal; a pipe gets plain help (cwread.cli.core.main)
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"cwread {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.", metavar=""),
    ] = None,
) -> None:
    """cwread: cited answers from long narratives."""


def open_document(book: str, output: Output):
    """The book as `output` says to read it and wrap it, what is to be noted of it on stderr."""
    from cwread import api
    from cwread.views import console, wording

    console.set_width(output.width)
    document = api.open_document(book, output.encoding)
    for line in wording.opened_notes(document):
        console.notice(line)
    return document


def emit(json_out: bool, data: Callable[[], dict], view: Callable[[], None]) -> None:
    """A command's result printed: its JSON document (`data`) with --json, else its view."""
    from cwread.views import console

    if json_out:
        console.print_json(data())
    else:
        view()
