"""`cwread chat`: questions about one book, on one reading session, until Ctrl-D.

Each question is answered as `ask` answers it (the same view, quotes and trust rules; a
failure is the same one line, and the session goes on). At a terminal, lines are edited and
kept in a history (readline); Ctrl-C cancels the answer in progress, not the session. With
`--json` (for scripts), each line read is a question and each answer one JSON trace a line.
"""

from __future__ import annotations

import json
import sys
from contextlib import suppress
from dataclasses import dataclass, field

from cwread import api
from cwread.backends.transport import INTERRUPTED
from cwread.cache import cache_root
from cwread.errors import CwreadError, InputError, error_exit
from cwread.run.session import Conversation, Session
from cwread.settings import RunSettings
from cwread.text.words import counted
from cwread.views import answer_view, console, json_output, reading, render, trace_json, wording
from cwread.views.output_files import append_output_file, check_output_path, write_output_file
from cwread.views.terminal import one_line

HELP = """Ask a question about the book, or:
  /verify CLAIM   judge a claim TRUE or FALSE
  /show SPEC      paragraphs: 12, 10-14 or 3,7,10-12
  /find QUESTION  the passages a question needs, ranked
  /json           the last answer's JSON trace
  /save FILE      this session's traces, one JSON document a line
  /help           this list
  /quit           end (or Ctrl-D)"""
HISTORY_LINES = 1000


@dataclass
class Chat:
    """One chat over `session`, printing JSON Lines or the view (each JSON trace appended to
    `trace`) and answering as `asking` does."""

    session: Session
    json_lines: bool
    trace: str | None
    asking: RunSettings
    traces: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.conversation = Conversation(self.session)

    def main(self, interactive: bool) -> int:
        """Read questions until the end of input: 0, or, reading a script, the exit code of its
        last line's failure (the one exit table, cwread.errors; at a prompt an error is said
        there, and leaving is no error). An answer's own exit (`ask`'s) is in its trace."""
        if self.trace is not None:  # checked before any work: every trace is appended there
            check_output_path(self.trace, "--trace", self.session.document.path)
        last = 0
        if interactive:
            history = _start_history()
            console.notice(
                f"{self.session.document.path}: {counted(len(self.session.document), 'paragraph')}. /help for commands."
            )
        try:
            for line in _lines(interactive):
                text = line.strip()
                if not text:
                    continue
                if text in ("/quit", "/exit"):
                    break
                try:  # piped in, a script reads the last answer's exit; at a terminal, leaving is 0
                    code = self.command(text) if text.startswith("/") else self.answer(api.make_question(text))
                    last = 0 if interactive else code
                except KeyboardInterrupt:  # the answer in progress, not the session
                    INTERRUPTED.clear()  # the next question's calls are waited for again
                    console.notice("interrupted; ask again, or Ctrl-D to end")
                except CwreadError as exc:
                    self._error(exc)
                    if not interactive:
                        last = error_exit(exc)
        finally:
            if interactive:
                _save_history(history)
        return last

    def answer(self, question) -> int:
        with console.progress(self.json_lines) as progress:
            trace = self.conversation.ask(
                question,
                self.asking,
                progress=progress,
                notice=None if self.json_lines else console.notice,
            )
        data = trace_json.ask_json(trace, wording.CHAT)
        code = trace.exit_code
        self.traces.append(data)
        if self.trace is not None:  # appended as each answer comes: nothing is lost to Ctrl-D
            append_output_file(self.trace, json.dumps(data, ensure_ascii=False) + "\n", "--trace")
        if self.json_lines:
            self._line({**data, "exit": code})
        else:
            if trace.follows is not None:
                console.notice(
                    f"a follow-up of question {trace.follows.number}: {one_line(trace.follows.question)}"
                )
            answer_view.answer_view(trace)
            failure = wording.failure(trace, wording.CHAT)  # a chat starts with the flag
            if failure is not None:
                console.notice(one_line(failure))
        return code

    def command(self, text: str) -> int:
        name, _, rest = text.partition(" ")
        rest = rest.strip()
        document = self.session.document
        # in JSON Lines mode every line in gives one JSON line out, a command's too
        version = {"version": json_output.TRACE_VERSION}
        if name == "/help":
            self._line({**version, "help": HELP}) if self.json_lines else console.help_view(HELP)
        elif name == "/verify":
            return self.answer(api.make_question(rest, claim=True))
        elif name == "/show":
            shown = api.show(document, rest)
            self._line(json_output.show_json(document, shown)) if self.json_lines else render.show_view(document, shown)
        elif name == "/find":
            found = self.session.find(api.make_question(rest), self.asking.budget, self.asking.retrieval)
            shown = len(found.anchor_segments)
            passages = found.printed(shown)
            if self.json_lines:
                self._line(json_output.find_json(found, shown, passages))
            elif console.stdout().is_terminal:
                render.find_view(found, passages, shown)
            else:  # a reader in a pipe: bounded plain text, as find's
                render.find_text_view(found, passages, shown, reading.FIND_CHARS)
        elif name == "/json":
            if not self.traces:
                raise InputError("no answer yet: ask a question first")
            self._line(self.traces[-1]) if self.json_lines else console.print_json(self.traces[-1])
        elif name == "/save":
            if not rest:
                raise InputError("/save needs a file name")
            check_output_path(rest, "/save", self.session.document.path)
            body = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in self.traces)
            write_output_file(rest, body, "/save")
            if self.json_lines:
                self._line({**version, "saved": len(self.traces), "path": rest})
            else:
                console.notice(f"saved {counted(len(self.traces), 'trace')} to {rest}")
        else:
            raise InputError(f"unknown command {name}; /help lists them")
        return 0

    def _line(self, data: dict) -> None:
        """One JSON document on one line of stdout (the JSON Lines mode)."""
        console.print_json(data, one_line=True)

    def _error(self, exc: CwreadError) -> None:
        if self.json_lines:
            self._line(json_output.error_json(error_exit(exc), exc.kind, str(exc)))
        else:
            console.notice(f"error: {one_line(str(exc))}")


def _lines(interactive: bool):
    """The questions: typed at a prompt (Ctrl-C there clears the line), else read line by line."""
    if not interactive:
        yield from sys.stdin
        return
    while True:
        try:
            yield input("cwread> ")
        except KeyboardInterrupt:
            print(file=sys.stderr)
            continue
        except EOFError:
            print(file=sys.stderr)
            return


def _start_history():
    """readline's line editing, with the history of earlier chats (None where unavailable)."""
    try:
        import readline
    except ImportError:  # no line editing on this Python: plain input() still works
        return None
    path = cache_root() / "chat-history"
    with suppress(OSError):
        readline.read_history_file(path)
    readline.set_history_length(HISTORY_LINES)
    return path


def _save_history(path) -> None:
    if path is None:
        return
    import readline

    with suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        readline.write_history_file(path)
