"""The tiny random GGUF model: deterministic, small, and usable by llama-cpp-python end to end; and make_gguf's models
in real shapes, written by the same code."""
import re
import subprocess
import sys
import time

import gguf
import llama_cpp
import pytest

from conftest import ROOT
from tiny_gguf import write_tiny_gguf

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Print the table. 请把表格打印出来。 Thanks! 🎉🐍👨‍👩‍👧"},
]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("tiny") / "tiny.gguf", seed=0)


def load(path):
    return llama_cpp.Llama(model_path=str(path), n_ctx=2048, seed=0, verbose=False)


def chat(llm):
    return llm.create_chat_completion(messages=MESSAGES, max_tokens=50, temperature=0.2, seed=0)


def test_same_seed_same_bytes_and_small(model_path, tmp_path):
    again = write_tiny_gguf(tmp_path / "again.gguf", seed=0)
    other = write_tiny_gguf(tmp_path / "other.gguf", seed=1)
    assert again.read_bytes() == model_path.read_bytes()
    assert other.read_bytes() != model_path.read_bytes()
    assert model_path.stat().st_size < 2 * 1024 * 1024


def test_metadata_and_tensor_shapes(model_path):
    reader = gguf.GGUFReader(model_path)
    fields = reader.fields
    assert fields["general.architecture"].contents() == "llama"
    assert fields["llama.context_length"].contents() == 2048
    assert fields["llama.embedding_length"].contents() == 64
    assert fields["llama.block_count"].contents() == 2
    assert fields["tokenizer.ggml.model"].contents() == "llama"
    assert "add_generation_prompt" in fields["tokenizer.chat_template"].contents()
    tokens = fields["tokenizer.ggml.tokens"].contents()
    assert tokens[:3] == ["<unk>", "<s>", "</s>"]
    assert all(f"<0x{byte:02X}>" in tokens for byte in range(256))
    # GGUF (and so the reader) lists dimensions in ggml order: {columns, rows}.
    shapes = {tensor.name: [int(n) for n in tensor.shape] for tensor in reader.tensors}
    assert shapes["token_embd.weight"] == [64, len(tokens)]
    assert shapes["output.weight"] == [64, len(tokens)]
    assert shapes["blk.1.attn_k.weight"] == [64, 32]
    assert shapes["blk.1.ffn_down.weight"] == [128, 64]


def test_any_text_tokenizes_without_unknown_tokens(model_path):
    llm = load(model_path)
    text = "héllo 你好世界 🎉🐍 مرحبا \x00\x7f \U0010ffff e\u0301 ```python\nprint(1)\n```"
    ids = llm.tokenize(text.encode(), add_bos=False)
    assert 0 not in ids  # <unk>: byte fallback covers everything
    assert llm.detokenize(ids).decode().strip() == text.strip()


def test_loads_fast_and_chats_deterministically(model_path):
    start = time.perf_counter()
    llm = load(model_path)
    assert time.perf_counter() - start < 1.0

    first = chat(llm)
    text = first["choices"][0]["message"]["content"]
    assert isinstance(text, str) and text
    assert first["choices"][0]["finish_reason"] == "length"
    assert first["usage"]["completion_tokens"] == 50

    assert chat(llm)["choices"][0]["message"]["content"] == text
    assert chat(load(model_path))["choices"][0]["message"]["content"] == text


@pytest.mark.slow
def test_a_made_model_has_the_real_models_shapes_and_valid_q4_0_blocks(tmp_path):
    """make_gguf's SmolLM2-135M shape: the same tensors, in the same shapes, as the real SmolLM2-135M (the embedded
    model), and the same vocabulary size; every matrix Q4_0 whose every block has a finite scale (random bytes would
    give NaN and infinite ones); llama.cpp loads it and its logits for a prompt are finite, its greedy tokens are word
    pieces or printable bytes, never an end token."""
    import numpy as np
    import pybench

    printed = subprocess.run([sys.executable, str(ROOT / "tests" / "benches" / "make_gguf.py"), "smollm2-135m", "--out", str(tmp_path)],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    path = tmp_path / "SmolLM2-135M-shaped.Q4_0.gguf"
    assert re.fullmatch(r"made SmolLM2-135M-shaped\.Q4_0\.gguf: 74 MiB in [0-9.]+ s", printed[0]) and printed[1:] == [str(path)]
    made, real = gguf.GGUFReader(path), gguf.GGUFReader(pybench.default_model_path())
    assert {t.name: list(t.shape) for t in made.tensors} == {t.name: list(t.shape) for t in real.tensors}
    assert len(made.fields["tokenizer.ggml.tokens"].contents()) == len(real.fields["tokenizer.ggml.tokens"].contents()) == 49152
    for key in ("block_count", "embedding_length", "feed_forward_length", "attention.head_count", "attention.head_count_kv"):
        assert made.fields[f"llama.{key}"].contents() == real.fields[f"llama.{key}"].contents(), key
    matrices = [tensor for tensor in made.tensors if len(tensor.shape) == 2]
    assert {tensor.tensor_type for tensor in matrices} == {gguf.GGMLQuantizationType.Q4_0}
    for tensor in matrices:
        scales = np.asarray(tensor.data).reshape(-1, 18)[:, :2].copy().view(np.float16)
        assert np.isfinite(scales).all() and (scales != 0).any(), tensor.name

    llm = llama_cpp.Llama(model_path=str(path), n_ctx=256, n_gpu_layers=0, logits_all=True, verbose=False)
    prompt = llm.tokenize(b"import pandas as pd\nprint(df.head())", add_bos=True)
    llm.eval(prompt)
    assert np.isfinite(llm.scores[:len(prompt)]).all()
    text = llm.create_completion(prompt, max_tokens=6, temperature=0.0)["choices"][0]
    assert text["finish_reason"] == "length" and text["text"].isprintable()
