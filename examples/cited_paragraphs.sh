#!/usr/bin/env bash
# Pipe the JSON trace into another tool: here Python pulls out the cited paragraphs
# (with jq: `cwread ask ... --json | jq -r '.cited_paragraphs[] | "[\(.id)] \(.text)"'`).
set -euo pipefail
cd "$(dirname "$0")"
cwread ask the_selfish_giant.txt "What did the Giant see in the corner of the garden?" --json \
  | python3 -c '
import json, sys
trace = json.load(sys.stdin)
print("answer:", trace["answer"])
for p in trace["cited_paragraphs"]:
    print("[%d] %s" % (p["id"], p["text"]))
'
