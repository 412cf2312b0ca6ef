"""Structured (JSON) replies turned back into the `<reason>/<answer>` text the parser reads.

Servers that constrain output with a JSON schema (Ollama's `format`, OpenAI-style
`response_format`) reply `{"quotes": [{"id", "quote"}], "answer"}`; the quotes become the
reason, and each is checked against the book after parsing like any other quote.
"""

from __future__ import annotations

import json


def json_schema_format(schema: dict) -> dict:
    """An OpenAI-style `response_format` for cwread's reply schema."""
    return {"type": "json_schema", "json_schema": {"name": "cwread_reply", "schema": schema}}


def json_reply_to_tags(text: str) -> str:
    """`{"quotes": [...], "answer": ...}` (or `{"reason", "answer"}`) →
    `<reason>...</reason>\\n<answer>...</answer>`; text that is not such JSON is returned
    unchanged for the parser to judge."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text
    if not isinstance(data, dict) or not ({"answer", "quotes"} & data.keys()):
        return text
    quotes = data.get("quotes")
    if isinstance(quotes, list) and quotes:
        items = [f'[{q.get("id")}] "{q.get("quote", "")}"' for q in quotes if isinstance(q, dict)]
        reason = " ".join(items)
    else:
        reason = str(data.get("reason", ""))
    if "answer" not in data:  # a clue asked after the decision: quotes only
        return f"<reason>{reason}</reason>"
    return f"<reason>{reason}</reason>\n<answer>{data['answer']}</answer>"
