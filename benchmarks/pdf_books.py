"""Texts made into PDFs by real tools, for the PDF reader's tests and its benchmark.

    python benchmarks/pdf_books.py libreoffice BOOK.txt OUT.pdf [--title T] [--columns N]
    python benchmarks/pdf_books.py enscript BOOK.txt OUT.pdf

- libreoffice: each paragraph of the text (as cwread numbers it) set by LibreOffice Writer
  (headless) in justified, hyphenated, first-line-indented type on A5 pages, the title as a
  running header and the page number as a footer; `--columns 2` sets two columns.
- enscript: the text as it is, lines over 80 characters hard-wrapped at 72 as a plain-text
  book is, blank lines kept, in Courier by GNU
  enscript with its page header (file name, date, "Page N/M"), made a PDF by Ghostscript's
  ps2pdf.

Needs the Debian packages libreoffice-writer-nogui, enscript and ghostscript; the tests
read the PDFs committed in tests/data and need none of them.
"""

from __future__ import annotations

import argparse
import html
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cwread.book import load_document

STYLES = """<office:styles>
<style:style style:name="P" style:family="paragraph"><style:paragraph-properties fo:text-align="justify"
 fo:text-indent="0.5cm" fo:margin-bottom="0cm" style:auto-text-indent="false"/><style:text-properties
 fo:font-size="11pt" fo:hyphenate="true" fo:language="en" fo:country="GB" style:font-name="DejaVu Serif"/></style:style>
<style:style style:name="H" style:family="paragraph"><style:paragraph-properties fo:margin-top="0.4cm"
 fo:margin-bottom="0.2cm"/><style:text-properties fo:font-size="13pt" fo:font-weight="bold"/></style:style>
<style:style style:name="F" style:family="paragraph"><style:paragraph-properties fo:text-align="center"/>
<style:text-properties fo:font-size="9pt"/></style:style>
</office:styles>"""


def is_heading(text: str) -> bool:
    return text.startswith("Chapter ") or (text.isupper() and len(text) < 80)


def flat_odt(book: Path, title: str, columns: int) -> str:
    paragraphs = "\n".join(
        f'<text:p text:style-name="{"H" if is_heading(p.text) else "P"}">{html.escape(p.text)}</text:p>'
        for p in load_document(str(book)).paragraphs
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
 office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.text">
{STYLES}
<office:automatic-styles><style:page-layout style:name="pm1"><style:page-layout-properties
 fo:page-width="14.8cm" fo:page-height="21cm" fo:margin-top="1.5cm" fo:margin-bottom="1.5cm"
 fo:margin-left="1.8cm" fo:margin-right="1.8cm"><style:columns fo:column-count="{columns}"
 fo:column-gap="0.6cm"/></style:page-layout-properties>
<style:header-style><style:header-footer-properties fo:min-height="0.6cm" fo:margin-bottom="0.3cm"/></style:header-style>
<style:footer-style><style:header-footer-properties fo:min-height="0.6cm" fo:margin-top="0.3cm"/></style:footer-style>
</style:page-layout></office:automatic-styles>
<office:master-styles><style:master-page style:name="Standard" style:page-layout-name="pm1">
<style:header><text:p text:style-name="F">{html.escape(title)}</text:p></style:header>
<style:footer><text:p text:style-name="F"><text:page-number text:select-page="current"/></text:p></style:footer>
</style:master-page></office:master-styles>
<office:body><office:text>
{paragraphs}
</office:text></office:body></office:document>"""


def libreoffice(book: Path, out: Path, title: str, columns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / f"{out.stem}.fodt"
        source.write_text(flat_odt(book, title, columns), encoding="utf-8")
        subprocess.run(
            ["soffice", f"-env:UserInstallation=file://{tmp}/profile", "--headless", "--convert-to", "pdf",
             "--outdir", tmp, str(source)],
            check=True, capture_output=True,
        )  # fmt: skip
        shutil.move(Path(tmp) / f"{out.stem}.pdf", out)


def enscript(book: Path, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        latin = Path(tmp) / book.name  # enscript reads Latin-1
        text = "\n".join(  # a long line hard-wrapped, as a plain-text book is
            textwrap.fill(line, 72) if len(line) > 80 else line
            for line in book.read_text(encoding="utf-8-sig").splitlines()
        )
        latin.write_bytes(text.translate(str.maketrans("“”‘’—", "\"\"''-")).encode("latin-1", "replace"))
        postscript = Path(tmp) / "book.ps"
        subprocess.run(["enscript", "-q", "-p", str(postscript), str(latin)], check=True, cwd=tmp)
        subprocess.run(["ps2pdf", str(postscript), str(out)], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tool", choices=["libreoffice", "enscript"])
    parser.add_argument("book", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--title", default="")
    parser.add_argument("--columns", type=int, default=1)
    args = parser.parse_args()
    if args.tool == "libreoffice":
        libreoffice(args.book, args.out, args.title or args.book.stem, args.columns)
    else:
        enscript(args.book, args.out)


if __name__ == "__main__":
    main()
