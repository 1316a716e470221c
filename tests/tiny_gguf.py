"""A tiny random llama-architecture GGUF model for tests.

`write_tiny_gguf(path, seed)` writes a model of about a quarter of a megabyte that llama.cpp (and so
llama-cpp-python) loads in milliseconds. Its weights are random, so what it writes is gibberish, but it
exercises the real code paths: a SentencePiece-style ("llama") tokenizer with byte fallback, so any text,
in any script, tokenizes; a ChatML-style chat template in the metadata, so `create_chat_completion`
works; and grouped-query attention with rotary embeddings.

The file is deterministic: the same seed gives the same bytes.

Only some tokens can be generated: the word pieces, the bytes of printable ASCII, newline and tab. The
output rows of all other tokens (the control tokens <unk>, <s>, </s>, <|im_start|>, <|im_end|>, and the
other bytes) are zero, so their logit is always 0 while the allowed tokens' logits spread around it
(the largest well above 0). With the usual samplers (top-k 40, min-p 0.05) they are never sampled, so
  - the model never ends a reply by itself: it always writes `max_tokens` tokens (finish_reason "length");
  - what it writes is valid UTF-8: printable ASCII, newlines, tabs and the pieces (no stray bytes).
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
        # Longer pieces score higher, so where two merges compete the tokenizer makes the longer piece.
        scores.append(-10.0 + len(piece))
    return tokens, scores, types


def _can_be_generated(tokens: list[str], types: list[int]) -> np.ndarray:
    """Which tokens the model may generate: the normal pieces and the printable ASCII bytes."""
    printable = {f"<0x{byte:02X}>" for byte in [*range(0x20, 0x7F), ord("\n"), ord("\t")]}
    return np.array([kind == gguf.TokenType.NORMAL or text in printable for text, kind in zip(tokens, types)])


def _matrix(rng: np.random.Generator, rows: int, columns: int) -> np.ndarray:
    """A random weight matrix, scaled so each output has roughly unit variance, stored as f16.

    The numpy shape is (out_features, in_features); the gguf package writes the dimensions reversed,
    which is the {in, out} order llama.cpp's loader expects (e.g. attn_q is {n_embd, n_head * head_dim})."""
    return (rng.standard_normal((rows, columns)) / np.sqrt(columns)).astype(np.float16)


def _norm(rng: np.random.Generator) -> np.ndarray:
    """An RMS-norm weight near 1, kept in f32 as llama.cpp's converters do."""
    return (1.0 + 0.1 * rng.standard_normal(EMBEDDING_LENGTH)).astype(np.float32)


def _weight_name(tensor: gguf.MODEL_TENSOR, block: int | None = None) -> str:
    """The GGUF name of a weight, e.g. "blk.0.attn_q.weight": the gguf package's base name plus ".weight"."""
    return gguf.TENSOR_NAMES[tensor].format(bid=block) + ".weight"


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

    def add(tensor: gguf.MODEL_TENSOR, weight: np.ndarray, block: int | None = None) -> None:
        writer.add_tensor(_weight_name(tensor, block), weight)

    T = gguf.MODEL_TENSOR
    add(T.TOKEN_EMBD, _matrix(rng, n_vocab, EMBEDDING_LENGTH))
    for block in range(BLOCK_COUNT):
        add(T.ATTN_NORM, _norm(rng), block)
        add(T.ATTN_Q, _matrix(rng, HEAD_COUNT * HEAD_DIM, EMBEDDING_LENGTH), block)
        add(T.ATTN_K, _matrix(rng, HEAD_COUNT_KV * HEAD_DIM, EMBEDDING_LENGTH), block)
        add(T.ATTN_V, _matrix(rng, HEAD_COUNT_KV * HEAD_DIM, EMBEDDING_LENGTH), block)
        add(T.ATTN_OUT, _matrix(rng, EMBEDDING_LENGTH, HEAD_COUNT * HEAD_DIM), block)
        add(T.FFN_NORM, _norm(rng), block)
        add(T.FFN_GATE, _matrix(rng, FEED_FORWARD_LENGTH, EMBEDDING_LENGTH), block)
        add(T.FFN_UP, _matrix(rng, FEED_FORWARD_LENGTH, EMBEDDING_LENGTH), block)
        add(T.FFN_DOWN, _matrix(rng, EMBEDDING_LENGTH, FEED_FORWARD_LENGTH), block)
    add(T.OUTPUT_NORM, _norm(rng))
    output = _matrix(rng, n_vocab, EMBEDDING_LENGTH)
    output[~_can_be_generated(tokens, types)] = 0  # see the module docstring
    add(T.OUTPUT, output)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
