"""Plug-ins from outside: a format, a backend or a question kind that another package adds,
found by its Python entry points, as pip installs them. A package declares, in its
pyproject.toml:

    [project.entry-points."cwread.formats"]
    toy = "cwread_toy:FORMAT"          # a cwread.book.formats.BookFormat

    [project.entry-points."cwread.backends"]
    toy = "cwread_toy:PROVIDER"        # a cwread.backends.provider.Provider

    [project.entry-points."cwread.kinds"]
    toy = "cwread_toy:FORM"            # a cwread.records.question.AnswerForm

and each is registered as cwread's own are (`register` of its registry), before the CLI builds its
help and before `cwread.api` answers anything, so a plug-in's format is read everywhere a book is,
its backend is chosen by `--backend`, and its kind is asked with `--kind`. A plug-in that cannot be
loaded, or is not what its group holds, is left out with one line on stderr; cwread goes on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

GROUPS = ("cwread.formats", "cwread.backends", "cwread.kinds")
_loaded: list[str] | None = None


def _say(message: str) -> None:
    print(f"cwread: {message}", file=sys.stderr)


def _may_be_installed() -> bool:
    """Whether a package on the path may declare a plug-in: an entry_points.txt naming a group
    of cwread's, in a dist-info or egg-info folder or an egg's EGG-INFO (where importlib.metadata
    looks, names in any case). A look at the path's folders, a millisecond, where
    importlib.metadata, which then finds and loads them, takes 20 to start (and every run of
    cwread would pay it); a path entry that is no folder (a zip), or a finder of distributions
    other than the path's, may hold one."""
    from importlib.machinery import PathFinder

    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        return True
    for entry in sys.path:
        folder = entry or "."
        try:
            with os.scandir(folder) as items:
                infos = [item.path for item in items if item.name.lower().endswith((".dist-info", ".egg-info"))]
        except NotADirectoryError:
            return True
        except OSError:  # gone or unreadable: importlib.metadata finds nothing there either
            continue
        if folder.lower().endswith(".egg"):
            infos.append(os.path.join(folder, "EGG-INFO"))
        for info in infos:
            try:
                with open(os.path.join(info, "entry_points.txt"), "rb") as declared:
                    if b"[cwread." in declared.read():
                        return True
            except OSError:
                continue
    return False


def load_plugins(notice: Callable[[str], None] = _say) -> list[str]:
    """Register every installed plug-in (once a process); the names loaded, "group:name"."""
    global _loaded
    if _loaded is not None:
        return list(_loaded)
    if not _may_be_installed():
        _loaded = []
        return []
    from importlib.metadata import entry_points

    from cwread.backends import provider
    from cwread.book import formats
    from cwread.records import question

    registries = {
        "cwread.formats": (formats.register, formats.BookFormat),
        "cwread.backends": (provider.register, provider.Provider),
        "cwread.kinds": (question.register, question.AnswerForm),
    }
    _loaded = []
    installed = entry_points()  # one scan of the installed packages for the three groups
    for group, (register, kind) in registries.items():
        for point in installed.select(group=group):
            try:
                found = point.load()
            except Exception as exc:  # a broken plug-in must not stop cwread
                notice(
                    f"plug-in {point.name} ({point.value}) could not be loaded: {type(exc).__name__}: {exc}"
                )
                continue
            if not isinstance(found, kind):
                notice(f"plug-in {point.name} ({point.value}) is no {kind.__name__}; left out")
                continue
            register(found)
            _loaded.append(f"{group}:{point.name}")
    return list(_loaded)
