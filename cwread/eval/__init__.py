"""The eval harness: the pipeline, its ablations and simple baselines on benchmark records.

Every method answers with the same Interpreter prompt, parser and model, so differences come
from the evidence each method shows it (the list is in `methods`). Modules, in the order a
run flows through them: `dataset` (load, sample, rotate options), `methods` (one function per
method, each returning a trace), `rows` (trace → scored row, pure), `run` (append rows to a
JSONL file as they finish, resume), `report` (summary with intervals, Markdown).

It builds on `cwread.api` and the pipeline's stages; the CLI calls `run.evaluate` and renders
the summary.
"""

# the methods by name, as `cwread eval -m` takes them, so that its help names them without
# loading the pipeline: `methods.METHODS` defines each, in this order (a test holds them equal)
METHOD_NAMES = (
    "pipeline",
    "no-self-check",
    "no-finder",
    "direct",
    "bm25-rag",
    "dense-rag",
    "closed-book",
    "extractive",
    "ranked-extractive",
    "finder",
    "retrieval",
    "judge",
)
