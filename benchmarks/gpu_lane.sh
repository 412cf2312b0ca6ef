#!/usr/bin/env bash
# The GPU lane (benchmarks/gpu_lane.py): the kit here, the training and measurement run on a GPU
# machine with no network, and the rehearsal of it all on this CPU. See the GPU lane in benchmarks/README.md.
#   benchmarks/gpu_lane.sh kit | receive | start | wait | run | results --from DIR | --rehearse --out DIR
set -euo pipefail
exec python3 "$(dirname "$0")/gpu_lane.py" "$@"
