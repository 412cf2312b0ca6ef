"""Every member of each book's cast, one line each (name | kind | paragraphs | forms), to diff
before and after a change to the cast's rules and to hand-check (benchmarks/README.md, "The cast,
second round").

    python benchmarks/cast_members.py BOOK... > members.txt
"""

from __future__ import annotations

import sys

from cwread.book import load_document
from cwread.retrieval.cast_build import build_cast


def main(books: list[str]) -> None:
    for path in books:
        document = load_document(path)
        cast = build_cast([p.text for p in document.paragraphs], document.unread)
        print(f"## {path} {len(cast.members)}")
        for member in cast.members:
            print(f"  {member.name} | {member.kind} | {len(member.mentions)} | {', '.join(member.forms[:8])}")


if __name__ == "__main__":
    main(sys.argv[1:])
