#!/usr/bin/env bash
# Verify a list of claims (one per line) and act on the exit codes:
# 0 TRUE, 1 FALSE, 4 undetermined; 2 and 3 are errors worth stopping for.
set -uo pipefail
cd "$(dirname "$0")"
book=${1:-the_selfish_giant.txt}
claims=${2:-claims.txt}
supported=0 refuted=0 unsure=0
while IFS= read -r claim; do
  [ -z "$claim" ] && continue
  cwread verify "$book" "$claim" --quiet
  case $? in
    0) echo "TRUE   $claim"; supported=$((supported + 1)) ;;
    1) echo "FALSE  $claim"; refuted=$((refuted + 1)) ;;
    4) echo "UNSURE $claim"; unsure=$((unsure + 1)) ;;
    *) echo "error on: $claim" >&2; exit 1 ;;
  esac
done < "$claims"
echo "supported $supported, refuted $refuted, undetermined $unsure"
