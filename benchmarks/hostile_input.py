"""Memory and time on hostile input (#58 item 3): a decompression-bomb PDF (2 MB that inflates
to 2 GiB) read by `cwread show`, and a server that answers one chat call with 300 MB, asked by
`cwread ask --timeout 10`; peak memory (the process's maximum resident set) and seconds, for
this checkout and, with --before REV, for that revision beside it (a git worktree).

    python benchmarks/hostile_input.py [--before REV] [--bomb-mib 2048] [--reply-mib 300]
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.test_openai_backend import huge_reply_handler  # noqa: E402
from tests.test_pdf import bomb_pdf  # noqa: E402


def huge_reply_server(mebibytes: int) -> str:
    """A loopback OpenAI-compatible server whose every chat reply is `mebibytes` long (chunked),
    the tests' own."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), huge_reply_handler(mebibytes, chunked=True))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a revision to measure beside this checkout")
    parser.add_argument("--bomb-mib", type=int, default=2048)
    parser.add_argument("--reply-mib", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bomb = work / "bomb.pdf"
        bomb.write_bytes(bomb_pdf(args.bomb_mib * 2**20))
        url = huge_reply_server(args.reply_mib)
        env = {**os.environ, "CWREAD_CACHE_DIR": str(work / "cache")}
        trees = [("this checkout", REPO)]
        if args.before:
            subprocess.run(["git", "worktree", "add", "--detach", str(work / "before"), args.before], cwd=REPO, check=True, capture_output=True)
            trees.insert(0, (f"before ({args.before})", work / "before"))
        cases = [
            (f"PDF bomb: {bomb.stat().st_size / 2**20:.1f} MB inflating to {args.bomb_mib} MiB, `show`", ["show", str(bomb), "1"]),
            (f"a {args.reply_mib} MiB chat reply, `ask --timeout 10`",
             ["ask", str(REPO / "examples" / "the_selfish_giant.txt"), "Why did the Giant build a wall?", "--base-url", url, "--timeout", "10", "--no-cache"]),
        ]
        print("| case | tree | exit | seconds | peak MiB | last line |")
        print("|---|---|---|---|---|---|")
        try:
            for case, cli in cases:
                for name, tree in trees:
                    # each measurement in a fresh child of a fresh process: RUSAGE_CHILDREN's peak is the largest so far
                    code, seconds, peak, last = measure_fresh(tree, cli, env)
                    print(f"| {case} | {name} | {code} | {seconds:.1f} | {peak:.0f} | {last[:110]} |", flush=True)
        finally:
            if args.before:
                subprocess.run(["git", "worktree", "remove", "--force", str(work / "before")], cwd=REPO, check=False)


def measure_fresh(tree: Path, cli: list[str], env: dict) -> tuple[int, float, float, str]:
    """`measure` under /usr/bin/time-like accounting: a wrapper process whose only child is the run."""
    wrapper = (
        "import resource, subprocess, sys, time, json;"
        "t0 = time.perf_counter();"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
        "print(json.dumps([p.returncode, time.perf_counter() - t0,"
        " resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, (p.stderr.strip().splitlines() or [''])[-1]]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", wrapper, sys.executable, "-m", "cwread", *cli],
        cwd=tree, env={**env, "PYTHONPATH": str(tree)}, capture_output=True, text=True, timeout=900, check=True,
    )
    code, seconds, peak, last = json.loads(proc.stdout)
    return code, seconds, peak, last


if __name__ == "__main__":
    main()
