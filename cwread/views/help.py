"""Help as each reader affords it. A terminal gets Typer's Rich panels; a pipe (an assistant
reading the help) a plain, compact form: one line of usage, the command's words, then one entry
an argument or option with its value's name (N, TEXT, or the choices). The options of a
command's second panels (budgets, the Finder, backends, input and output) are declared hidden
(cwread.cli.option_groups.in_panel) and shown by --help-all; -h says how many it leaves out."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from types import MethodType
from typing import Any

HELP_ALL = "--help-all"
# the formats cwread reads, as a help text names them: filled from their registry when a help is
# written (cwread.book.formats.format_names), so a run that writes none loads no format (40 ms)
FORMAT_NAMES = "{format_names}"
# click's own "Show this message and exit." read as what it does here
_HELP_LINE = "This help."


def prepare(command: Any, args: list[str], terminal: Callable[[], bool]) -> list[str]:
    """Set up the help of `command` and its subcommands for this run, Rich's or plain as
    `terminal()` says when a help is written (a run that writes none asks nothing of the
    terminal, nor loads Rich); the arguments to run it with (--help-all becomes --help, every
    option then shown)."""
    options = args[: args.index("--")] if "--" in args else args  # past "--", words are the user's
    show_all = HELP_ALL in options
    for cmd in _commands(command):
        hidden = [p for p in cmd.params if getattr(p, "hidden", False) or p.name in _TYPER_OWN]
        for param in hidden:
            param.hidden = not show_all
        if hidden and not show_all:
            cmd.epilog = f"{len(hidden)} more options ({_panels(hidden)}): {HELP_ALL}."
        for param in cmd.params:  # N, TEXT or the choices, where Typer would write <int>, <str>
            if param.metavar is None and not getattr(param, "is_flag", False):
                param.metavar = _value_name(param)
        cmd.format_help = MethodType(functools.partial(_help_for_reader, cmd.format_help, terminal), cmd)
    if not show_all:
        return args
    at = options.index(HELP_ALL)
    return [*args[:at], "--help", *args[at + 1 :]]


_TYPER_OWN = ("install_completion", "show_completion")  # rarely wanted; --help-all shows them


def _commands(command: Any):
    yield command
    for sub in getattr(command, "commands", {}).values():
        yield from _commands(sub)


def _panels(params) -> str:
    names = dict.fromkeys(getattr(p, "rich_help_panel", None) or "Shell completion" for p in params)
    return ", ".join(names)


def _help_for_reader(rich_help: Callable, terminal: Callable[[], bool], self: Any, ctx: Any, formatter: Any) -> None:
    from cwread.book.formats import format_names

    for item in (*_commands(self), *self.params):
        if FORMAT_NAMES in (item.help or ""):
            item.help = item.help.replace(FORMAT_NAMES, format_names())
    if terminal():
        rich_help(ctx, formatter)
    else:
        _plain_help(self, ctx, formatter)


def _plain_help(self: Any, ctx: Any, formatter: Any) -> None:
    shown = [p for p in self.get_params(ctx) if not getattr(p, "hidden", False)]
    arguments = [p for p in shown if p.param_type_name == "argument"]
    usage = [ctx.command_path, *(_value_name(p) for p in arguments)]
    if hasattr(self, "commands"):
        usage.append("COMMAND")
    formatter.write_text("Usage: " + " ".join(usage) + (" [OPTIONS]" if len(shown) > len(arguments) else ""))
    for paragraph in _paragraphs(self.help or ""):
        formatter.write_paragraph()
        formatter.write_text(paragraph)
    rows = [_row(p) for p in shown]
    if rows:
        formatter.write_paragraph()
        formatter.write_dl(rows, col_max=24)
    if hasattr(self, "commands"):
        formatter.write_paragraph()
        formatter.write_dl(
            [(name, _first_sentence(cmd.help or "")) for name, cmd in self.commands.items() if not cmd.hidden],
            col_max=12,
        )
    if self.epilog:
        formatter.write_paragraph()
        formatter.write_text(self.epilog)


def _paragraphs(text: str) -> list[str]:
    return [" ".join(block.split()) for block in text.split("\n\n") if block.strip()]


def _first_sentence(text: str) -> str:
    first = _paragraphs(text)[0] if text.strip() else ""
    return re.split(r"(?<=[.:;])(?<!e\.g\.)\s+(?=[A-Z`])", first)[0]


def _value_name(param: Any) -> str:
    """What the user writes for `param`'s value: its declared name, else one from its type."""
    if param.metavar:
        return param.metavar
    if param.param_type_name == "argument":
        return (param.name or "").upper()
    described = getattr(getattr(param, "type_descriptor", None), "annotation", None)  # typer 0.29
    kind = getattr(described, "__name__", None) or getattr(getattr(param, "type", None), "name", "")
    return "N" if kind.startswith("int") else "X" if kind.startswith("float") else "TEXT"  # click's "int range"


def _row(param: Any) -> tuple[str, str]:
    help_text = " ".join((getattr(param, "help", None) or "").split())
    if param.param_type_name == "argument":
        return _value_name(param), help_text
    names = ", ".join(sorted([*param.opts, *param.secondary_opts], key=lambda n: n.startswith("--")))
    flag = getattr(param, "is_flag", False) or getattr(param, "count", False)
    if param.name == "help":
        return names, _HELP_LINE
    label = names if flag else f"{names} {_value_name(param)}"
    default = param.default
    if getattr(param, "show_default", None) and not flag and default not in (None, "", ()):
        help_text += f" [default: {default}]"
    return label, help_text
