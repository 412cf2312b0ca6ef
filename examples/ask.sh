#!/usr/bin/env bash
# A question with its Rich answer: the answer and each supporting quote, highlighted in its paragraph
# (exit 4: the text does not determine an answer; the best evidence is shown).
# Usage: ask.sh [BOOK [QUESTION [OPTION]...]]: BOOK a text, HTML, EPUB or PDF file, or a folder of
# them; each OPTION ("A=a giant", say) is passed as -o, which makes the question multiple choice:
#   ask.sh the_selfish_giant.txt "Who knocked down the wall?" "A=the Giant" "B=the children"
set -euo pipefail
cd "$(dirname "$0")"
book="${1:-the_selfish_giant.txt}"
question="${2:-Why did the Giant build a high wall round his garden?}"
options=()
for option in "${@:3}"; do options+=(-o "$option"); done
cwread ask "$book" "$question" "${options[@]}"
