"""The tiny random GGUF model: deterministic, small, and usable by llama-cpp-python end to end."""
import time

import gguf
import llama_cpp
import pytest

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
