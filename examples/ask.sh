#!/usr/bin/env bash
# A question with its Rich answer: the answer and each supporting quote, highlighted in its paragraph
# (exit 4: the text does not determine an answer; the best evidence is shown).
set -euo pipefail
cd "$(dirname "$0")"
cwread ask the_selfish_giant.txt "Why did the Giant build a high wall round his garden?"
