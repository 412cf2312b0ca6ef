#!/usr/bin/env bash
# A question with its Rich answer: the answer, the reasoning, and each cited paragraph quoted.
set -euo pipefail
cd "$(dirname "$0")"
cwread ask the_selfish_giant.txt "Why did the Giant build a high wall round his garden?"
