"""Option groups: options declared once, as (annotation, default) pairs, put into a command's
signature by a decorator that builds one record of their values (cwread.cli.options and
cwread.cli.settings_groups declare them)."""

from __future__ import annotations

import copy
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any

import typer


def listed(names) -> str:
    names = list(names)
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)


def opt(kind: Any, help: str, *names: str, **settings: Any) -> Any:
    """An option's annotation: its value's type (`kind`), its help, its names and settings."""
    if kind is bool:  # a flag takes no value: no "<bool>" beside it in the help
        settings.setdefault("metavar", "")
    return Annotated[kind, typer.Option(*names, help=help, **settings)]


def arg(help: str, kind: Any = str, **settings: Any) -> Any:
    """An argument's annotation: its help, its value's type (`kind`), no default shown."""
    return Annotated[kind, typer.Argument(help=help, show_default=False, **settings)]


def option(kind: Any, help: str, default: Any = None, *names: str, **settings: Any) -> tuple[Any, Any]:
    """One entry of an option group: its annotation (as `opt`) and its default."""
    return opt(kind, help, *names, **settings), default


def second_panel(panel: str) -> dict[str, Any]:
    """An option's settings that list it under `panel`, a second panel shown by --help-all, not
    -h (cwread.views.help): what a reader does not use every day."""
    return {"hidden": True, "rich_help_panel": panel}


def in_panel(panel: str, options: dict[str, tuple[Any, Any]]) -> dict[str, tuple[Any, Any]]:
    """`options` in their own `second_panel`: each option's typer info copied, so an annotation
    shared elsewhere keeps its own."""
    out = {}
    for key, (annotation, default) in options.items():
        kind, *extras = typing.get_args(annotation)
        extras = [copy.copy(e) if isinstance(e, typer.models.OptionInfo) else e for e in extras]
        for extra in extras:
            if isinstance(extra, typer.models.OptionInfo):
                for setting, value in second_panel(panel).items():
                    setattr(extra, setting, value)
        out[key] = (Annotated[(kind, *extras)], default)
    return out


def option_group(name: str, options: dict[str, tuple[Any, Any]], build: Callable[..., Any]):
    """A decorator that puts `options` (parameter → (annotation, default)) in a command's
    signature where its `name` parameter stands, and passes `build(**their values)` as `name`:
    an option group declared once and shared by every command that takes it."""

    def decorate(func):
        params: list[inspect.Parameter] = []
        for p in inspect.signature(func).parameters.values():
            if p.name == name:
                params += [
                    inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default)
                    for key, (ann, default) in options.items()
                ]
            else:
                annotation = (
                    eval(p.annotation, func.__globals__) if isinstance(p.annotation, str) else p.annotation
                )
                params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=annotation))

        @functools.wraps(func)
        def wrapper(**kwargs):
            values = {key: kwargs.pop(key) for key in options}
            return func(**kwargs, **{name: build(**values)})

        wrapper.__signature__ = inspect.Signature(params)
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate
