"""GRPO + LoRA through trl on a tiny model built on the spot (the cpu-test profile)."""

from dataclasses import replace

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

from tests.conftest import SHARED_DATA
from training import data, train

pytestmark = pytest.mark.slow  # torch, trl, peft: the dev install's (the fast lane runs without them)

VAL = SHARED_DATA / "fairytaleqa" / "val"


def starts_with_space(completions, **columns):
    """A learnable target for a random model: the reply's first character is a space."""
    from training.rewards import completion_text

    return [1.0 if completion_text(c)[:1] == " " else 0.0 for c in completions]


@pytest.mark.slow
def test_grpo_raises_the_mean_reward_on_a_learnable_target(tmp_path):
    prompts = [[{"role": "user", "content": f"Tell me about item {i} of the story."}] for i in range(64)]
    texts = [p[0]["content"] for p in prompts] + ["<reason>[3] the clue</reason>\n<answer>YES</answer>"] * 20
    model, tokenizer = train.tiny_model_and_tokenizer(texts, vocab_size=400)
    profile = replace(train.PROFILES["cpu-test"], max_completion_length=4)
    trainer = train.grpo(
        "finder",
        [{"prompt": p} for p in prompts],
        model,
        tokenizer,
        profile,
        tmp_path,
        reward_funcs=[starts_with_space],
        max_steps=40,
    )
    rewards = [entry["reward"] for entry in trainer.state.log_history if "reward" in entry]
    quarter = len(rewards) // 4
    first, last = sum(rewards[:quarter]) / quarter, sum(rewards[-quarter:]) / quarter
    assert last > first + 0.2, (first, last)
    assert (tmp_path / "metrics.jsonl").is_file()


@pytest.mark.skipif(not VAL.is_dir(), reason="FairytaleQA dev data not present")
def test_finder_grpo_runs_on_cwread_prompts_and_merges(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    rows = data.finder_examples(VAL)[:16]
    texts = [m["content"] for r in rows for m in r["prompt"]]
    model, tokenizer = train.tiny_model_and_tokenizer(texts)
    trainer = train.grpo(
        "finder", rows, model, tokenizer, train.PROFILES["cpu-test"], tmp_path / "run", max_steps=2
    )
    logged = [e for e in trainer.state.log_history if "rewards/finder_reward/mean" in e]
    assert len(logged) == 2
    merged_dir = train.merge_and_save(trainer, tokenizer, tmp_path / "merged")
    assert (merged_dir / "model.safetensors").is_file()
    reloaded = AutoModelForCausalLM.from_pretrained(str(merged_dir)).eval()
    merged = (
        trainer.model.merge_and_unload().eval()
        if hasattr(trainer.model, "merge_and_unload")
        else trainer.model
    )
    ids = tokenizer.apply_chat_template(rows[0]["prompt"], add_generation_prompt=True, return_tensors="pt")
    ids = ids if isinstance(ids, torch.Tensor) else ids["input_ids"]
    with torch.no_grad():
        assert torch.allclose(reloaded(ids).logits, merged(ids).logits, atol=1e-5)


@pytest.mark.skipif(not VAL.is_dir(), reason="FairytaleQA dev data not present")
def test_decision_only_warm_start_puts_the_loss_on_the_label_alone(tmp_path):
    """--decision-only: the chat-formatted prompt and the reason are context; the completion is
    the label and the closing tags, so the label is not one token of forty in the loss."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    rows = data.finder_examples(VAL)[:8]
    texts = [m["content"] for r in rows for m in r["prompt"]] + [r["target"] for r in rows]
    model, tokenizer = train.tiny_model_and_tokenizer(texts)
    for row in rows:
        example = train.decision_example(row, tokenizer)
        whole = tokenizer.apply_chat_template(
            row["prompt"] + [{"role": "assistant", "content": row["target"]}], tokenize=False
        )
        assert whole.startswith(example["prompt"] + example["completion"])
        assert example["prompt"].endswith("<answer>") and row["target"].split("<answer>")[0] in example["prompt"]
        assert example["completion"].startswith(row["label"] + "</answer>")
    # what trl trains on: the completion's tokens alone carry the loss
    trainer = SFTTrainer(
        model=model,
        args=SFTConfig(
            output_dir=str(tmp_path / "sft"), use_cpu=True, completion_only_loss=True, max_length=4096, report_to="none"
        ),
        train_dataset=Dataset.from_list([train.decision_example(r, tokenizer) for r in rows]),
        processing_class=tokenizer,
    )
    assert len(trainer.train_dataset) == len(rows)
    for example in trainer.train_dataset:
        trained = [t for t, label in zip(example["input_ids"], example["labels"], strict=True) if label != -100]
        assert tokenizer.decode(trained) == example["completion"]
        assert example["completion"] in ("YES</answer><|im_end|>", "NO</answer><|im_end|>")
    with pytest.raises(ValueError, match="<answer>"):
        train.decision_example({**rows[0], "target": "YES"}, tokenizer)


def test_lora_on_the_last_layers_names_them():
    config = train.lora_config(train.PROFILES["cpu-small"], last_layers=3, num_layers=30)
    assert list(config.layers_to_transform) == [27, 28, 29]
    assert train.lora_config(train.PROFILES["cpu-small"]).layers_to_transform is None
    with pytest.raises(ValueError):
        train.lora_config(train.PROFILES["cpu-small"], last_layers=31, num_layers=30)


def test_gpu_profile_has_the_papers_sampling_with_lora_rates_and_launch_configs_parse():
    from accelerate.commands.config.config_args import ClusterConfig

    gpu = train.PROFILES["gpu"]
    assert (gpu.num_generations, gpu.beta, gpu.temperature, gpu.top_p, gpu.top_k) == (8, 0.04, 1.0, 0.9, 20)
    # LoRA rates: the paper's full fine-tuning 5e-7 moved a LoRA by ~5e-6 in a lease's steps
    assert gpu.learning_rate == {"finder": 2e-5, "interpreter": 1e-5}
    assert gpu.warmup_ratio * gpu.max_steps < 5 and not gpu.gradient_checkpointing
    assert gpu.max_completion_length == 96 and gpu.extra["interpreter_max_completion_length"] == 320
    assert gpu.bf16 and not gpu.use_cpu
    folder = train.Path(train.__file__).parent / "accelerate"
    kinds = {ClusterConfig.from_yaml_file(str(f)).distributed_type.value for f in folder.glob("*.yaml")}
    assert kinds == {"DEEPSPEED", "MULTI_GPU"}
