"""Random llama-architecture GGUF models: the tiny one the tests load in milliseconds, and ones in the shapes of real
models (tests/benches/make_gguf.py) for the device check.

`write_tiny_gguf(path, seed)` writes a model of about a quarter of a megabyte that llama.cpp (and so
llama-cpp-python) loads in milliseconds. `write_gguf(path, shape, seed, words, q4_0=True)` writes one of `shape`'s
sizes (its dimensions, its vocabulary size, tied or untied output) with Q4_0 weights: valid blocks, each a finite fp16
scale and 16 bytes of random 4-bit values, streamed to the file one tensor at a time (a 7B shape, 4.3 GB, never sits
in memory whole). Their weights are random, so what they write is gibberish, but they exercise the real code paths:
a SentencePiece-style ("llama") tokenizer with byte fallback, so any text, in any script, tokenizes; a ChatML-style
chat template in the metadata, so `create_chat_completion` works; and grouped-query attention with rotary embeddings.

The files are deterministic: the same shape and seed give the same bytes.

Only some tokens can be generated: the word pieces, the bytes of printable ASCII, newline and tab. The
output rows of all other tokens (the control tokens <unk>, <s>, </s>, <|im_start|>, <|im_end|>, the
other bytes and the unused tokens that pad a vocabulary to its shape's size) are zero, so their logit is
always 0 while the allowed tokens' logits spread around it (the largest well above 0). With the usual
samplers (top-k 40, min-p 0.05), and greedily, they are never sampled, so
  - the model never ends a reply by itself: it always writes `max_tokens` tokens (finish_reason "length");
  - what it writes is valid UTF-8: printable ASCII, newlines, tabs and the pieces (no stray bytes).
"""
from __future__ import annotations

import pathlib
from dataclasses import dataclass

import gguf
import numpy as np

ARCH = "llama"
SPACE = "\u2581"  # SentencePiece's visible space, "▁"


@dataclass(frozen=True)
class Shape:
    """A model's dimensions as llama.cpp reads them from the GGUF metadata."""
    name: str
    embedding: int
    blocks: int
    heads: int
    heads_kv: int          # grouped-query attention: heads // heads_kv query heads share each key/value head
    feed_forward: int
    vocabulary: int        # the tokens, padded with unused ones up to this size (0: the word pieces alone)
    context: int
    tied: bool             # no output.weight: the output layer is token_embd, as in SmolLM2 and the small Qwen2.5s
    rope_base: float = 10000.0
    rms_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.embedding // self.heads


TINY = Shape("tiny-random-llama", embedding=64, blocks=2, heads=4, heads_kv=2, feed_forward=128, vocabulary=0, context=2048, tied=False)

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


def _vocabulary(words: list[str], size: int) -> tuple[list[str], list[float], list[int]]:
    """The tokens, their scores and their types, in id order: the special tokens, the 256 bytes, the words' pieces
    (as many as fit in `size`), then unused tokens up to `size` (0: no padding)."""
    tokens = [text for text, _ in SPECIAL_TOKENS]
    types = [int(kind) for _, kind in SPECIAL_TOKENS]
    scores = [0.0] * len(tokens)

    for byte in range(256):
        tokens.append(f"<0x{byte:02X}>")
        types.append(int(gguf.TokenType.BYTE))
        scores.append(0.0)

    pieces = {SPACE: None}  # a dict: insertion order, fast membership
    for word in words:
        for end in range(1, len(word) + 1):
            pieces.setdefault(word[:end])
    room = size - len(tokens) if size else len(pieces)
    for piece in list(pieces)[:room]:  # a word's prefixes come before it: what is cut is whole words' tails
        tokens.append(piece)
        types.append(int(gguf.TokenType.NORMAL))
        # Longer pieces score higher, so where two merges compete the tokenizer makes the longer piece.
        scores.append(-10.0 + len(piece))
    for unused in range(len(tokens), size):
        tokens.append(f"<unused{unused}>")
        types.append(int(gguf.TokenType.UNUSED))
        scores.append(0.0)
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


Q4_0_BLOCK, Q4_0_BYTES = 32, 18  # ggml's block_q4_0: an fp16 scale d, then 32 4-bit values q (weight = d * (q - 8))
Q4_0_SPREAD = np.sqrt((16**2 - 1) / 12)  # the standard deviation of q - 8 for q uniform in 0..15


def _q4_0_matrix(rng: np.random.Generator, rows: int, columns: int) -> np.ndarray:
    """A random Q4_0 weight matrix as its raw bytes, (rows, columns / 32 * 18): every block's scale is the same finite
    fp16 number, chosen so each output has roughly unit variance as _matrix's, and its 4-bit values are random."""
    blocks = np.empty((rows, columns // Q4_0_BLOCK, Q4_0_BYTES), dtype=np.uint8)
    blocks[..., :2] = np.array([1 / (Q4_0_SPREAD * np.sqrt(columns))], dtype=np.float16).view(np.uint8)
    blocks[..., 2:] = rng.integers(0, 256, size=(rows, columns // Q4_0_BLOCK, Q4_0_BYTES - 2), dtype=np.uint8)
    return blocks.reshape(rows, -1)


def _norm(rng: np.random.Generator, size: int) -> np.ndarray:
    """An RMS-norm weight near 1, kept in f32 as llama.cpp's converters do."""
    return (1.0 + 0.1 * rng.standard_normal(size)).astype(np.float32)


def _weight_name(tensor: gguf.MODEL_TENSOR, block: int | None = None) -> str:
    """The GGUF name of a weight, e.g. "blk.0.attn_q.weight": the gguf package's base name plus ".weight"."""
    return gguf.TENSOR_NAMES[tensor].format(bid=block) + ".weight"


def _tensors(shape: Shape, n_vocab: int) -> list[tuple[str, int, int]]:
    """Every weight in file order: (name, rows, columns), columns 0 for a norm (a vector of `rows`)."""
    T, kv = gguf.MODEL_TENSOR, shape.heads_kv * shape.head_dim
    plan = [(_weight_name(T.TOKEN_EMBD), n_vocab, shape.embedding)]
    for block in range(shape.blocks):
        plan += [(_weight_name(tensor, block), rows, columns) for tensor, rows, columns in (
            (T.ATTN_NORM, shape.embedding, 0), (T.ATTN_Q, shape.heads * shape.head_dim, shape.embedding),
            (T.ATTN_K, kv, shape.embedding), (T.ATTN_V, kv, shape.embedding),
            (T.ATTN_OUT, shape.embedding, shape.heads * shape.head_dim), (T.FFN_NORM, shape.embedding, 0),
            (T.FFN_GATE, shape.feed_forward, shape.embedding), (T.FFN_UP, shape.feed_forward, shape.embedding),
            (T.FFN_DOWN, shape.embedding, shape.feed_forward))]
    plan.append((_weight_name(T.OUTPUT_NORM), shape.embedding, 0))
    return plan if shape.tied else [*plan, (_weight_name(T.OUTPUT), n_vocab, shape.embedding)]


def write_gguf(path: pathlib.Path, shape: Shape = TINY, seed: int = 0, words: list[str] = WORDS, q4_0: bool = False) -> pathlib.Path:
    """Write a random llama model of `shape` to `path` (f16 weights, or Q4_0 ones) and return the path."""
    path = pathlib.Path(path)
    rng = np.random.default_rng(seed)
    tokens, scores, types = _vocabulary(words, shape.vocabulary)

    writer = gguf.GGUFWriter(path, ARCH)
    writer.add_name(f"{shape.name}-seed{seed}")
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0 if q4_0 else gguf.LlamaFileType.MOSTLY_F16)
    writer.add_context_length(shape.context)
    writer.add_embedding_length(shape.embedding)
    writer.add_block_count(shape.blocks)
    writer.add_feed_forward_length(shape.feed_forward)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.heads_kv)
    writer.add_layer_norm_rms_eps(shape.rms_eps)
    writer.add_rope_dimension_count(shape.head_dim)
    writer.add_rope_freq_base(shape.rope_base)
    writer.add_vocab_size(len(tokens))

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

    plan = _tensors(shape, len(tokens))
    for name, rows, columns in plan:  # the tensor infos first, then each tensor's data as it is made
        if not columns:
            writer.add_tensor_info(name, (rows,), np.dtype(np.float32), rows * 4)
        elif q4_0:
            writer.add_tensor_info(name, (rows, columns // Q4_0_BLOCK * Q4_0_BYTES), np.dtype(np.uint8),
                                   rows * columns // Q4_0_BLOCK * Q4_0_BYTES, raw_dtype=gguf.GGMLQuantizationType.Q4_0)
        else:
            writer.add_tensor_info(name, (rows, columns), np.dtype(np.float16), rows * columns * 2)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    silent = ~_can_be_generated(tokens, types)
    output = plan[0 if shape.tied else -1][0]  # output.weight, or token_embd.weight where the output is tied to it
    for name, rows, columns in plan:
        weight = (_q4_0_matrix if q4_0 else _matrix)(rng, rows, columns) if columns else _norm(rng, rows)
        if name == output:
            weight[silent] = 0  # see the module docstring (in Q4_0, blocks of zeros: scale 0)
        writer.write_tensor_data(weight)
    writer.close()
    return path


def write_tiny_gguf(path: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """Write the tiny random llama model to `path` and return the path."""
    return write_gguf(path, TINY, seed)
