"""The settings file: set once with `cwread config`, read by every command where no flag or
environment variable says otherwise, and a key in it never printed. Through the real CLI."""

from __future__ import annotations

import json
import stat
import tomllib

import pytest

from cwread.environment import SETTINGS_FILE_KEYS
from tests.conftest import run

KEY = "sk-test-secret-9876"


@pytest.fixture
def settings_file(tmp_path, monkeypatch):
    """A settings file of the test's own, and every variable it stands for unset (restored after:
    the file's values are put in the environment)."""
    path = tmp_path / "config" / "cwread" / "config.toml"
    monkeypatch.setenv("CWREAD_CONFIG", str(path))
    for name in SETTINGS_FILE_KEYS.values():
        monkeypatch.setenv(name, "")
    return path


def test_config_sets_shows_and_unsets_a_setting_a_key_never_printed(capsys, settings_file, cache_dir):
    code, _, err = run(capsys, "config", "set", "backend", "ollama")
    assert code == 0 and f"backend = ollama in {settings_file}" in err
    code, _, err = run(capsys, "config", "set", "api_key", KEY)
    assert code == 0 and KEY not in err and "api_key = (set)" in err
    assert tomllib.loads(settings_file.read_text(encoding="utf-8")) == {"backend": "ollama", "api_key": KEY}
    assert stat.S_IMODE(settings_file.stat().st_mode) == 0o600  # it holds a key: its owner's alone
    code, out, _ = run(capsys, "config", "show", "--json")
    assert code == 0 and json.loads(out)["settings"] == {"backend": "ollama", "api_key": "(set)"}
    code, out, err = run(capsys, "doctor", "--json")
    assert KEY not in out + err
    assert json.loads(out)["settings"] == {"path": str(settings_file), "values": {"backend": "ollama", "api_key": "(set)"}}
    code, _, _ = run(capsys, "config", "unset", "backend")
    assert code == 0 and tomllib.loads(settings_file.read_text(encoding="utf-8")) == {"api_key": KEY}
    code, _, err = run(capsys, "config", "set", "colour", "red")
    assert code == 2 and "unknown setting 'colour'" in err and len(err.strip().splitlines()) == 1


def test_flags_and_the_environment_win_over_the_file(capsys, settings_file, cache_dir, story, monkeypatch):
    run(capsys, "config", "set", "width", "40")
    asked = ("show", str(story), "1-24")
    code, out, _ = run(capsys, *asked)
    widths = [len(line) for line in out.splitlines()]
    assert code == 0 and max(widths) <= 40 and max(widths) > 30  # the file's width
    monkeypatch.setenv("CWREAD_WIDTH", "60")
    code, out, _ = run(capsys, *asked)
    assert code == 0 and 40 < max(len(line) for line in out.splitlines()) <= 60  # the environment's
    code, out, _ = run(capsys, *asked, "--width", "80")
    assert code == 0 and 60 < max(len(line) for line in out.splitlines()) <= 80  # the flag's


def test_a_key_in_the_file_is_hidden_in_every_message(capsys, settings_file, cache_dir, story):
    run(capsys, "config", "set", "backend", "openai")
    run(capsys, "config", "set", "api_key", KEY)
    run(capsys, "config", "set", "base_url", f"http://127.0.0.1:9/{KEY}/v1")  # a URL that carries it
    code, out, err = run(capsys, "ask", str(story), "Who kept the lighthouse?", "--json")
    assert code == 3 and "no OpenAI-compatible server answers" in err
    assert KEY not in out + err and "http://127.0.0.1:9/***/v1" in err


@pytest.mark.parametrize("key", ["base_url", "finder_base_url", "ollama_host"])
@pytest.mark.parametrize(("password", "host"), [("PASSW0RD-7", "127.0.0.1:9"), ("p@ssW0RD", "127.0.0.1:9"), ("sEcr3t", "[::1:9")])
def test_a_servers_password_is_never_printed(capsys, settings_file, cache_dir, key, password, host):
    """A server's address may carry a password (http://user:PASSWORD@host): config, doctor and
    their JSON show *** in its place, as for a key; one holding "@" (the host follows the last)
    and a mistyped address (an IPv6 host unclosed) too: the messages showed "***@ss@host" and
    config show the password whole."""
    url = f"http://reader:{password}@{host}/v1"
    code, _, err = run(capsys, "config", "set", key, url)
    assert code == 0 and password not in err and "reader:***@" in err
    for args in (("config", "show"), ("config", "show", "--json"), ("doctor",), ("doctor", "--json")):
        _, out, err = run(capsys, *args)
        assert password not in out + err and password.split("@")[-1] not in out + err, args
    _, out, _ = run(capsys, "config", "show")
    assert f"{key} = http://reader:***@{host}/v1" in out


def test_a_common_word_for_a_password_leaves_the_book_alone(capsys, settings_file, cache_dir, story):
    """The URL's ":PASSWORD@" is hidden, not every place its letters stand: a password "lamp"
    turned the book's lamp into *** in every quote."""
    run(capsys, "config", "set", "ollama_host", "http://keeper:lamp@127.0.0.1:9")
    code, out, _ = run(capsys, "ask", str(story), "What did she never let go dark?", "--json")
    assert "What did she never let go dark?" in out and "lamp" in out and "***" not in out, code
    _, out, err = run(capsys, "doctor", "--json")
    assert ":lamp@" not in out + err


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [("width", "abc", "width must be a whole number"), ("width", "5", "0 (never wrap) or 20 or more"), ("timeout", "inf", "timeout must be a number of seconds"),
     ("timeout", "nan", "above 0"), ("num_ctx", "0", "num_ctx must be")],
)  # fmt: skip
def test_a_value_no_command_could_take_is_refused_when_set(capsys, settings_file, cache_dir, story, key, value, said):
    """Written, such a value made every later command fail, naming an environment variable the
    user never set (CWREAD_WIDTH)."""
    code, _, err = run(capsys, "config", "set", key, value)
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1
    assert not settings_file.exists() or key not in tomllib.loads(settings_file.read_text(encoding="utf-8"))
    code, _, _ = run(capsys, "show", str(story), "1")
    assert code == 0


def test_a_broken_settings_file_is_one_line_and_exit_2(capsys, settings_file, cache_dir, story):
    settings_file.parent.mkdir(parents=True)
    settings_file.write_text('backend = "ollama\n', encoding="utf-8")
    code, _, err = run(capsys, "show", str(story), "1")
    assert code == 2 and "not a TOML settings file" in err and len(err.strip().splitlines()) == 1
    settings_file.write_text('backend = "ollama"\nfavourite = 3\n', encoding="utf-8")
    code, _, err = run(capsys, "show", str(story), "1")
    assert code == 2 and "unknown setting 'favourite'" in err


def test_a_stages_settings_come_from_the_file_then_set_then_a_shortcut(capsys, settings_file, cache_dir, story, scripted):
    """A stage's setting is set once in the file (checked before it is written), --set wins over
    it, a shortcut flag (--answer is answer.mode) over --set; each reaches the run's plan."""
    asked = ("ask", str(story), "Where did Martha keep the medal?", "--backend", "scripted", "--json")
    code, _, err = run(capsys, "config", "set", "budget.b_c", "900")
    assert code == 0 and "budget.b_c = 900" in err
    code, _, _ = run(capsys, "config", "set", "answer.mode", "extractive")
    assert tomllib.loads(settings_file.read_text(encoding="utf-8")) == {"budget": {"b_c": "900"}, "answer": {"mode": "extractive"}}
    code, out, _ = run(capsys, *asked)
    plan = json.loads(out)["plan"]
    assert code == 0 and plan["budget"]["b_c"] == 900 and plan["answer_mode"] == "extractive"
    code, out, _ = run(capsys, *asked, "--set", "budget.b_c=1200", "--set", "answer.mode=generative", "--answer", "extractive")
    plan = json.loads(out)["plan"]
    assert code == 0 and plan["budget"]["b_c"] == 1200 and plan["answer_mode"] == "extractive"
    code, out, _ = run(capsys, "find", str(story), "medal", "--json")  # find reads the budget's
    assert code == 0 and json.loads(out)["budget"]["b_c"] == 900
    for bad, message in (("budget.b_c", "budget.b_c must be a number"), ("finder.reed", "unknown setting 'finder.reed'")):
        code, _, err = run(capsys, "config", "set", bad, "lots")
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    settings_file.write_text('[finder]\nreply = "poem"\n', encoding="utf-8")  # written by hand
    code, out, err = run(capsys, *asked)
    assert code == 2 and json.loads(out)["error"]["kind"] == "input"  # --json: the error as JSON too
    assert f"{settings_file}: finder.reply must be one of" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("width", [("--width", "1"), ("--width", "19"), ("--width", "-1")])
def test_a_width_too_narrow_to_read_is_refused(capsys, cache_dir, story, width):
    """One column wrote a paragraph's id a character a line ("[", "5", "]"): under 20 columns is
    a usage error, one line; 0 (never wrap) and 20 are taken."""
    code, out, err = run(capsys, "show", str(story), "5", *width)
    assert code == 2 and out == "" and err.strip().splitlines() == [
        f"cwread: error: --width (CWREAD_WIDTH) must be 0 (never wrap) or at least 20 columns, not {width[1]}"
    ]
    for taken in ("0", "20"):
        code, out, _ = run(capsys, "show", str(story), "5", "--width", taken)
        assert code == 0 and out.startswith("[5] ")


def test_a_number_written_wrong_in_the_file_names_the_file(capsys, settings_file, cache_dir, story):
    """A width of 5 written by hand (or before widths under 20 were refused) was said to be
    --width's or CWREAD_WIDTH's, which the user never gave: the file is named, and how to mend it;
    config still mends it."""
    settings_file.parent.mkdir(parents=True)
    settings_file.write_text("width = 5\n", encoding="utf-8")
    code, out, err = run(capsys, "show", str(story), "1")
    assert code == 2 and out == "" and err.strip().splitlines() == [
        f"cwread: error: {settings_file}: width must be a whole number of columns, 0 (never wrap) or 20 or more, "
        "not '5'; mend it: cwread config set width VALUE, or cwread config unset width"
    ]
    code, _, _ = run(capsys, "config", "unset", "width")
    assert code == 0
    code, out, _ = run(capsys, "show", str(story), "1")
    assert code == 0 and out.startswith("[1] ")


@pytest.mark.parametrize("command", [("find", "giant"), ("ask", "giant"), ("index",)])
def test_a_narrow_width_is_refused_before_a_shelf_is_read(capsys, cache_dir, story, tmp_path, command):
    """On a folder of books the shelf's note came before the width's error, and `index` built the
    shelf's library index at any width: refused first now, one line, nothing built."""
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    for name in ("one.txt", "two.txt"):
        (shelf / name).write_text(story.read_text(encoding="utf-8"), encoding="utf-8")
    before = sorted(p.name for p in cache_dir.rglob("*"))
    code, out, err = run(capsys, command[0], str(shelf), *command[1:], "--width", "5")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "--width" in err
    assert sorted(p.name for p in cache_dir.rglob("*")) == before


def test_an_ollama_hosts_password_without_a_scheme_is_never_printed(capsys, settings_file, cache_dir):
    """OLLAMA_HOST may be given as user:PASSWORD@host:port, no scheme: config show, doctor and
    their JSON printed it whole."""
    code, _, err = run(capsys, "config", "set", "ollama_host", "reader:Pw-0llama@127.0.0.1:9")
    assert code == 0 and "Pw-0llama" not in err
    for args in (("config", "show"), ("config", "show", "--json"), ("doctor",), ("doctor", "--json")):
        _, out, err = run(capsys, *args)
        assert "Pw-0llama" not in out + err, args
    _, out, _ = run(capsys, "config", "show")
    assert "ollama_host = reader:***@127.0.0.1:9" in out


def test_a_message_hides_the_password_of_every_url_it_quotes():
    """One reader of a URL's password for settings and messages: a message quoting two URLs (a
    password holding "@", a library's ?password=) shows neither password."""
    from cwread.views.terminal import one_line

    said = one_line("cannot reach http://me:p@ss@host:80/v1\nnor postgresql://u@h/db?password=zz&sslmode=require")
    assert said == "cannot reach http://me:***@host:80/v1 nor postgresql://u@h/db?password=***&sslmode=require"
    # joined with no space between (one match ran to the next space, its second password shown)
    assert one_line("http://a:P1@h1,http://b:P2@h2/v1?PASSWORD=z") == "http://a:***@h1,http://b:***@h2/v1?PASSWORD=***"


def test_config_set_run_at_once_keeps_every_setting(settings_file):
    """Six `config set` at once each said "X = Y in ..." with exit 0, and the file kept 2-4 of
    them (each read it before another wrote): one writer at a time now."""
    import os
    import subprocess
    import sys

    pairs = [("backend", "ollama"), ("width", "40"), ("timeout", "30"), ("num_ctx", "4096"),
             ("embedder", "minilm-static"), ("finder_model", "m1")]  # fmt: skip
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "stdin": subprocess.DEVNULL}
    runs = [
        subprocess.Popen([sys.executable, "-m", "cwread", "config", "set", key, value], env=os.environ.copy(), **quiet)
        for key, value in pairs
    ]
    assert [p.wait(timeout=120) for p in runs] == [0] * len(pairs)
    assert tomllib.loads(settings_file.read_text()) == dict(pairs)


def test_a_home_that_is_no_folder_and_relative_xdg_folders_are_no_settings_and_no_cache(capsys, tmp_path, monkeypatch):
    """HOME=/dev/null stopped every command ("cannot read the settings file (Not a directory)")
    where there is no settings file at all; a relative XDG_CACHE_HOME or XDG_CONFIG_HOME made
    folders wherever cwread ran (the XDG spec says to ignore them)."""
    book = tmp_path / "book.txt"
    book.write_text("The lamp was lit.\n", encoding="utf-8")
    for name in ("CWREAD_CONFIG", "CWREAD_CACHE_DIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", "/dev/null")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert run(capsys, "show", str(book), "1")[:2] == (0, "[1] The lamp was lit.\n\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/config")
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "show", str(book), "1")[0] == 0 and run(capsys, "config", "set", "width", "0")[0] == 0
    assert not (tmp_path / "relative").exists() and (tmp_path / "home" / ".config" / "cwread" / "config.toml").exists()


def test_config_checks_names_and_negative_numbers_and_unsets_only_what_it_holds(capsys, settings_file):
    """`config set backend bogus` was written (every later ask failed on it); `config set
    timeout -5` was read as an option ("No such option: -5"); `config unset width` with no
    file said "width removed" and made the file."""
    code, _, err = run(capsys, "config", "set", "backend", "bogus")
    assert code == 2 and "unknown backend 'bogus'; choose one of: auto, " in err and not settings_file.exists()
    code, _, err = run(capsys, "config", "set", "constraint", "zz")
    assert code == 2 and "unknown constraint 'zz'" in err
    code, _, err = run(capsys, "config", "set", "embedder", "x")
    assert code == 2 and "--embedder x: not a shipped embedder" in err
    code, _, err = run(capsys, "config", "set", "backend", "OLLAMA")  # a run takes it as written
    assert code == 2 and "unknown backend 'OLLAMA'" in err
    assert run(capsys, "config", "set", "constraint", "JSON")[0] == 0  # a run takes it in any case
    code, _, err = run(capsys, "config", "set", "timeout", "-5")
    assert code == 2 and "timeout must be a number of seconds above 0, not '-5'" in err
    code, _, err = run(capsys, "config", "unset", "width")
    assert code == 0 and "width is not set in " in err
    assert run(capsys, "config", "set", "backend", "ollama")[0] == 0
    code, _, err = run(capsys, "config", "unset", "width")
    assert code == 0 and "nothing changed" in err
    assert tomllib.loads(settings_file.read_text()) == {"constraint": "JSON", "backend": "ollama"}
