#!/usr/bin/env bash
# Pipe the JSON trace into another tool: here Python pulls out the answer and its quotes, each
# with its paragraph (with jq: `jq -r '.quotes[] | "[\(.id)] \(.quote)"'`). Exit 4 means the
# text does not determine an answer: the trace then holds the best evidence instead.
# Usage: cited_paragraphs.sh [BOOK [QUESTION]] (a paragraph id is a number, or "ch03:12" in a
# book of several files).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
book=${1:-$here/the_selfish_giant.txt}
question=${2:-"What did the Giant see in the corner of the garden?"}
trace=$(cwread ask "$book" "$question" --json) || [ $? -eq 4 ]
printf '%s' "$trace" | python3 -c '
import json, sys
trace = json.load(sys.stdin)
print("answer:", trace["answer"] or "(not determined from the text)")
for q in trace["quotes"]:
    print("[%s] \"%s\" (characters %d-%d)" % (q["id"], q["quote"], q["start"], q["end"]))
'
