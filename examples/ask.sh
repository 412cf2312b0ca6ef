#!/usr/bin/env bash
# A question with its Rich answer: the answer and each supporting quote, highlighted in its paragraph
# (exit 4: the text does not determine an answer; the best evidence is shown).
# Usage: ask.sh [BOOK [QUESTION]]: a text, HTML or EPUB file, or a folder of them.
set -euo pipefail
cd "$(dirname "$0")"
cwread ask "${1:-the_selfish_giant.txt}" "${2:-Why did the Giant build a high wall round his garden?}"
