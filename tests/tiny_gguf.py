"""A tiny random llama-architecture GGUF model for tests.

`write_tiny_gguf(path, seed)` writes a model of about a quarter of a megabyte that llama.cpp (and so
llama-cpp-python) loads in milliseconds. Its weights are random, so what it writes is gibberish, but it
exercises the real code paths: a SentencePiece-style ("llama") tokenizer with byte fallback, so any text,
in any script, tokenizes; a ChatML-style chat template in the metadata, so `create_chat_completion`
works; and grouped-query attention with rotary embeddings.

The file is deterministic: the same seed gives the same bytes.

The output rows of the control tokens (<unk>, <s>, </s>, <|im_start|>, <|im_end|>) are all zero, so
their logit is always 0 while the other tokens' logits spread around it; with the usual samplers
(top-k 40, min-p 0.05) the model therefore never ends a reply by itself and always writes `max_tokens`
tokens (finish_reason "length").
"""
from __future__ import annotations

import pathlib

import gguf
import numpy as np

ARCH = "llama"
CONTEXT_LENGTH = 2048
EMBEDDING_LENGTH = 64
BLOCK_COUNT = 2
HEAD_COUNT = 4
HEAD_COUNT_KV = 2  # grouped-query attention: two query heads share each key/value head
HEAD_DIM = EMBEDDING_LENGTH // HEAD_COUNT
FEED_FORWARD_LENGTH = 128
RMS_NORM_EPS = 1e-5

SPACE = "\u2581"  # SentencePiece's visible space, "▁"

# Special tokens first, as in SentencePiece models: id 0 <unk>, 1 <s>, 2 </s>.
SPECIAL_TOKENS = [
    ("<unk>", gguf.TokenType.UNKNOWN),
    ("<s>", gguf.TokenType.CONTROL),
    ("</s>", gguf.TokenType.CONTROL),
    ("<|im_start|>", gguf.TokenType.CONTROL),
    ("<|im_end|>", gguf.TokenType.CONTROL),
]
UNK_ID, BOS_ID, EOS_ID = 0, 1, 2

# Words the vocabulary can spell as single pieces. llama.cpp's SentencePiece tokenizer builds a piece by
# merging neighbouring pieces that are themselves in the vocabulary, so every prefix of every word is
# added too ("p", "pr", "pri", ...); anything else falls back to the byte tokens.
WORDS = [SPACE + "the", SPACE + "import", SPACE + "print", "print", "python", "```", "def", "\u4f60\u597d"]

# A ChatML-style template. It is deliberately not byte-identical to llama-cpp-python's built-in
# "chatml" template, so llama-cpp-python renders this one (with jinja2) as it would a real model's.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unsupported role: ' + message['role']) }}"
    "{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _vocabulary() -> tuple[list[str], list[float], list[int]]:
    """The tokens, their scores and their types, in id order."""
    tokens = [text for text, _ in SPECIAL_TOKENS]
    types = [int(kind) for _, kind in SPECIAL_TOKENS]
    scores = [0.0] * len(tokens)

    for byte in range(256):
        tokens.append(f"<0x{byte:02X}>")
        types.append(int(gguf.TokenType.BYTE))
        scores.append(0.0)

    pieces = [SPACE]
    for word in WORDS:
        for end in range(1, len(word) + 1):
            if word[:end] not in pieces:
                pieces.append(word[:end])
    for piece in pieces:
        tokens.append(piece)
        types.append(int(gguf.TokenType.NORMAL))
        # Longer pieces score higher, so the tokenizer prefers them, as a trained model would.
        scores.append(-10.0 + len(piece))
    return tokens, scores, types


def _matrix(rng: np.random.Generator, rows: int, columns: int) -> np.ndarray:
    """A random weight matrix, scaled so each output has roughly unit variance, stored as f16.

    The numpy shape is (out_features, in_features); the gguf package writes the dimensions reversed,
    which is the {in, out} order llama.cpp's loader expects (e.g. attn_q is {n_embd, n_head * head_dim})."""
    return (rng.standard_normal((rows, columns)) / np.sqrt(columns)).astype(np.float16)


def _norm(rng: np.random.Generator) -> np.ndarray:
    """An RMS-norm weight near 1, kept in f32 as llama.cpp's converters do."""
    return (1.0 + 0.1 * rng.standard_normal(EMBEDDING_LENGTH)).astype(np.float32)


def write_tiny_gguf(path: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """Write the tiny random llama model to `path` and return the path."""
    path = pathlib.Path(path)
    rng = np.random.default_rng(seed)
    tokens, scores, types = _vocabulary()
    n_vocab = len(tokens)

    writer = gguf.GGUFWriter(path, ARCH)
    writer.add_name(f"tiny-random-llama-seed{seed}")
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_context_length(CONTEXT_LENGTH)
    writer.add_embedding_length(EMBEDDING_LENGTH)
    writer.add_block_count(BLOCK_COUNT)
    writer.add_feed_forward_length(FEED_FORWARD_LENGTH)
    writer.add_head_count(HEAD_COUNT)
    writer.add_head_count_kv(HEAD_COUNT_KV)
    writer.add_layer_norm_rms_eps(RMS_NORM_EPS)
    writer.add_rope_dimension_count(HEAD_DIM)
    writer.add_rope_freq_base(10000.0)
    writer.add_vocab_size(n_vocab)

    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(UNK_ID)
    writer.add_bos_token_id(BOS_ID)
    writer.add_eos_token_id(EOS_ID)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    names = gguf.TENSOR_NAMES
    T = gguf.MODEL_TENSOR
    writer.add_tensor(names[T.TOKEN_EMBD], _matrix(rng, n_vocab, EMBEDDING_LENGTH))
    for block in range(BLOCK_COUNT):
        def name(tensor: gguf.MODEL_TENSOR) -> str:
            return names[tensor].format(bid=block)

        writer.add_tensor(name(T.ATTN_NORM), _norm(rng))
        writer.add_tensor(name(T.ATTN_Q), _matrix(rng, HEAD_COUNT * HEAD_DIM, EMBEDDING_LENGTH))
        writer.add_tensor(name(T.ATTN_K), _matrix(rng, HEAD_COUNT_KV * HEAD_DIM, EMBEDDING_LENGTH))
        writer.add_tensor(name(T.ATTN_V), _matrix(rng, HEAD_COUNT_KV * HEAD_DIM, EMBEDDING_LENGTH))
        writer.add_tensor(name(T.ATTN_OUT), _matrix(rng, EMBEDDING_LENGTH, HEAD_COUNT * HEAD_DIM))
        writer.add_tensor(name(T.FFN_NORM), _norm(rng))
        writer.add_tensor(name(T.FFN_GATE), _matrix(rng, FEED_FORWARD_LENGTH, EMBEDDING_LENGTH))
        writer.add_tensor(name(T.FFN_UP), _matrix(rng, FEED_FORWARD_LENGTH, EMBEDDING_LENGTH))
        writer.add_tensor(name(T.FFN_DOWN), _matrix(rng, EMBEDDING_LENGTH, FEED_FORWARD_LENGTH))
    writer.add_tensor(names[T.OUTPUT_NORM], _norm(rng))

    output = _matrix(rng, n_vocab, EMBEDDING_LENGTH)
    output[: len(SPECIAL_TOKENS)] = 0  # control tokens are never sampled; see the module docstring
    writer.add_tensor(names[T.OUTPUT], output)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
