"""Plug-ins from outside (cwread.plugins): a package installed beside cwread adds a format, a
backend and a question kind by its entry points alone, and the real CLI, in a process of its own,
reads, runs and shows them; a broken plug-in is one line and cwread goes on.

The package is tests/plugin_package; it is installed as pip would install it, by a dist-info
folder (its METADATA and entry_points.txt) on the path of the process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = Path(__file__).parent / "plugin_package"
ENTRY_POINTS = """[cwread.formats]
toy = cwread_toy_plugin:FORMAT

[cwread.backends]
echo = cwread_toy_plugin:PROVIDER

[cwread.kinds]
yes-no = cwread_toy_plugin:FORM
"""


def install(site: Path, entry_points: str = ENTRY_POINTS) -> None:
    """The plug-in in `site` as pip leaves an installed package: its module and its dist-info."""
    site.mkdir(parents=True, exist_ok=True)
    shutil.copy(PACKAGE / "cwread_toy_plugin.py", site)
    info = site / "cwread_toy_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: cwread-toy-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")


def cwread(site: Path, cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]),
        "CWREAD_CACHE_DIR": str(cache),
    }
    env.pop("CWREAD_BACKEND", None)
    return subprocess.run(
        [sys.executable, "-m", "cwread", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def installed(tmp_path) -> Path:
    install(tmp_path / "site")
    return tmp_path / "site"


def test_a_plugin_adds_a_format_a_backend_and_a_kind_through_the_real_cli(tmp_path, installed):
    cache = tmp_path / "cache"
    book = tmp_path / "log.toy"
    book.write_text(
        "header\n~The keeper lit the lamp.\nnoise\n~The ship came in at dawn.\n", encoding="utf-8"
    )

    done = cwread(installed, cache, "show", str(book), "2")
    assert done.returncode == 0 and done.stdout.startswith("[2] The ship came in at dawn.")
    help_text = " ".join(cwread(installed, cache, "ask", "--help-all").stdout.split())
    assert "Toy" in help_text and "echo" in help_text  # the help reads the registries after the plug-in

    asked = [
        "ask",
        str(book),
        "Who lit the lamp?",
        "--backend",
        "echo",
        "--answer",
        "generative",
        "--no-cache",
    ]
    done = cwread(installed, cache, *asked, "--backend-option", "echo.words=The keeper", "--json")
    trace = json.loads(done.stdout)
    assert done.returncode == 0 and trace["model_answer"] == "The keeper"
    assert trace["models"]["interpreter"].endswith(":echo")

    # the kind, with its verdict's exit and its title in the terminal view
    yes_no = ["ask", str(book), "Did the keeper light the lamp?", "--kind", "yes-no", "--backend", "echo"]
    done = cwread(
        installed,
        cache,
        *yes_no,
        "--backend-option",
        "echo.words=yes",
        "--answer",
        "generative",
        "--finder",
        "off",
        "--no-cache",
    )
    assert done.returncode == 0 and "Yes or no" in done.stdout and "YES" in done.stdout
    done = cwread(
        installed,
        cache,
        *yes_no,
        "--backend-option",
        "echo.words=no",
        "--answer",
        "generative",
        "--finder",
        "off",
        "--no-cache",
        "--json",
    )
    assert done.returncode == 1 and json.loads(done.stdout)["verdict"] == "NO"

    doctor = cwread(installed, cache, "doctor", "--json")
    assert "cwread.formats:toy" in " ".join(json.loads(doctor.stdout)["backend"]["notes"])

    without = cwread(tmp_path / "empty", cache, "show", str(book), "1")  # not installed: read as text
    assert without.returncode == 0 and "header" in without.stdout


def test_a_broken_plugin_is_one_line_and_cwread_goes_on(tmp_path):
    site = tmp_path / "site"
    install(
        site,
        "[cwread.formats]\nbroken = cwread_no_such_module:FORMAT\n\n[cwread.kinds]\nwrong = cwread_toy_plugin:FORMAT\n",
    )
    story = tmp_path / "story.txt"
    story.write_text("The keeper lit the lamp.\n", encoding="utf-8")
    done = cwread(site, tmp_path / "cache", "show", str(story), "1")
    assert done.returncode == 0 and done.stdout.startswith("[1] The keeper lit the lamp.")
    lines = done.stderr.strip().splitlines()
    assert any(
        "plug-in broken (cwread_no_such_module:FORMAT) could not be loaded: ModuleNotFoundError" in line
        for line in lines
    )
    assert any(
        "plug-in wrong (cwread_toy_plugin:FORMAT) is no AnswerForm; left out" in line for line in lines
    )
    assert "Traceback" not in done.stderr


def test_the_path_is_looked_at_before_any_package_is_scanned(tmp_path, monkeypatch):
    """importlib.metadata (20 ms a run) is started only where a package on the path declares a
    group of cwread's: a dist-info or egg-info folder's entry_points.txt, or a zip on the path."""
    from cwread.plugins import _may_be_installed

    site = tmp_path / "site"
    (site / "other-1.0.dist-info").mkdir(parents=True)
    (site / "other-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    (site / "bare-2.0.dist-info").mkdir()  # no entry points at all
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "gone")])
    assert not _may_be_installed()
    (site / "toy.egg-info").mkdir()
    (site / "toy.egg-info" / "entry_points.txt").write_text(ENTRY_POINTS)
    assert _may_be_installed()
    (site / "toy.egg-info" / "entry_points.txt").unlink()
    (site / "toy-0.1.DIST-INFO").mkdir()  # importlib.metadata reads names in any case
    (site / "toy-0.1.DIST-INFO" / "entry_points.txt").write_text(ENTRY_POINTS)
    assert _may_be_installed()
    egg = tmp_path / "toy-0.1-py3.11.egg"  # an unzipped egg on the path: its EGG-INFO
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.setattr(sys, "path", [str(egg)])
    assert _may_be_installed()
    archive = tmp_path / "packages.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))
    monkeypatch.setattr(sys, "path", [str(tmp_path / "gone"), str(archive)])
    assert _may_be_installed()
    monkeypatch.setattr(sys, "path", [str(tmp_path / "gone")])
    assert not _may_be_installed()

    class Distributions:  # a finder of distributions other than the path's: it may hold one
        @staticmethod
        def find_distributions(context=None):
            return iter(())

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Distributions()])
    assert _may_be_installed()
