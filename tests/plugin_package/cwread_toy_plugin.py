"""A third party's plug-in for cwread's tests: a format (.toy files, paragraphs are the lines that
start with "~"), a backend ("echo", which answers with the words of its one setting) and a
question kind ("yes-no"), each found by its entry point (pyproject.toml), none in cwread."""

from __future__ import annotations

from dataclasses import dataclass

from cwread.backends.provider import BackendSettings, Built, ModelRef, Provider
from cwread.backends.scripted import ScriptedBackend
from cwread.book.formats.base import BookFormat, Reading, part_from_text
from cwread.errors import InputError
from cwread.records.question import AnswerForm


def _read_toy(data: bytes, name: str, encoding: str | None, max_bytes: int) -> Reading:
    lines = [line[1:].strip() for line in data.decode("utf-8").splitlines() if line.startswith("~")]
    return Reading((part_from_text("", name, "\n\n".join(lines)),), "utf-8")


FORMAT = BookFormat(
    "toy",
    lambda data, name: name.endswith(".toy"),
    _read_toy,
    cached_from=None,
    suffixes=("toy",),
    label="Toy",
)


@dataclass(frozen=True)
class EchoSettings:
    """The echo backend's own settings: the words it answers with."""

    words: str = ""

    def resolved(self) -> EchoSettings:
        return self

    def refuse(self, backend: str) -> None:
        if self.words and backend != "echo":
            raise InputError("echo.words applies to --backend echo")


def _build_echo(settings: BackendSettings, wanted: dict[str, ModelRef]) -> Built:
    words = settings.section(EchoSettings).words
    reply = f'<reason>[1] "The keeper lit the lamp"</reason><answer>{words or "nothing"}</answer>'
    return Built({role: ScriptedBackend(model="echo", default=reply) for role in wanted}, "echo, a plug-in")


PROVIDER = Provider("echo", "a plug-in that answers with its words", _build_echo, EchoSettings)

FORM = AnswerForm(
    "yes-no",
    block=lambda question: f"Yes-or-no question: {question.text}",
    hint="YES or NO",
    labels=lambda question: ["YES", "NO"],
    spellings=lambda labels: ["YES", "NO", "Yes", "No", "yes", "no"],
    normalise=lambda raw, labels: {"yes": "YES", "no": "NO"}.get(raw.strip(" .").lower()),
    answer_words=lambda question, answer: f"Answer: {answer}",
    verdict=True,
    false_label="NO",
    title="Yes or no",
)
