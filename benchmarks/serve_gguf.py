"""Serve a GGUF over llama.cpp's OpenAI-compatible HTTP API with the llama.cpp that cwread
already installs (xllamacpp): a CPU `llama-server` without a build.

    python benchmarks/serve_gguf.py MODEL.gguf --port 8080 --parallel 2 --ctx 16384
    cwread ask BOOK QUESTION --base-url http://127.0.0.1:8080/v1

`--ctx` is the whole context, shared by the parallel slots. Runs until interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gguf", type=Path)
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--parallel", type=int, default=2, help="slots: calls served at once")
    parser.add_argument("--ctx", type=int, default=16384, help="context in tokens, for all slots together")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--slot-prompt-similarity",
        type=float,
        default=0.9,
        help="llama-server's -sps: below it a slot's state goes to the prompt cache and the best match "
        "is loaded (0.9: a follow-up takes segments read before from the cache; llama.cpp's default 0.1)",
    )
    parser.add_argument("--lora", type=Path, help="a LoRA adapter GGUF applied to every call (llama-server --lora)")
    args = parser.parse_args(argv)
    for path in (args.gguf, args.lora):
        if path is not None and not path.is_file():
            print(f"serve_gguf: no such file: {path}", file=sys.stderr)
            return 2
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle threads spinning slowed 2 cores 3x
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(args.gguf)
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.verbosity = -1
    params.warmup = False
    params.slot_prompt_similarity = args.slot_prompt_similarity
    params.port = args.port
    params.hostnames = [args.host]
    if args.lora:
        adapter = xllamacpp.CommonAdapterLoraInfo()
        adapter.path = str(args.lora)
        adapter.scale = 1.0
        params.lora_adapters = [adapter]
    server = xllamacpp.Server(params)
    print(f"serving {args.gguf.name} at {server.listening_address}/v1", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
