"""The README and the docs pages it links: every link resolves, and every option they name is
one that a command takes (the README's main job and Python block run in test_embedded and
test_session)."""

import re

import pytest
import typer.main

from cwread.cli.core import app
from tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _options() -> set[str]:
    """Every option name of every command (and the app's own)."""
    names: set[str] = set()
    group = typer.main.get_command(app)
    commands = [group, *group.commands.values()]
    for command in commands:
        for param in command.params:
            names.update(o for o in [*param.opts, *param.secondary_opts] if o.startswith("--"))
    return names


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_link_resolves(page):
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
        if not target.startswith(("http://", "https://")):
            assert (page.parent / target).exists(), f"{page.name} links {target}, which is not there"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_option_named_is_one_a_command_takes(page):
    known = _options() | {"--help", "--help-all"}  # --help-all: cwread.views.help
    text = page.read_text(encoding="utf-8")
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    # cwread's commands: code spans and lines of code blocks, not those of other programs
    spans = re.findall(r"`([^`]+)`", prose) + [line for block in fenced for line in block.splitlines()]
    named = set()
    for span in spans:
        words = span.split()
        if not words or words[0] in ("pip", "llama-server", "ollama", "python3", "python"):
            continue
        named.update(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", span))
    assert named - known == set(), f"{page.name} names options no command takes"


def test_the_readme_stays_short():
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 160
