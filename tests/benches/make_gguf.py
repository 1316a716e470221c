"""Models made where they are measured: GGUF files with random Q4_0 weights in the shapes of real models, written in
seconds to a minute by tests/tiny_gguf.py's writer, so that nothing large has to travel to the GPU machine.
Not a test: `python tests/benches/make_gguf.py [SHAPE ...] [--out DIR]` (default: every shape, into runs/models).

  tiny            tests/tiny_gguf.py's 2 blocks of 64 (the lavapipe and CPU tests of the device check)
  smollm2-135m    SmolLM2-135M's: 30 blocks of 576, 9 heads (3 for keys and values), 49,152 tokens, output tied
  qwen2.5-1.5b    Qwen2.5-1.5B's: 28 blocks of 1,536, 12 heads (2), feed-forward 8,960, 151,936 tokens, output tied
  qwen2.5-7b      Qwen2.5-7B's: 28 blocks of 3,584, 28 heads (4), feed-forward 18,944, 152,064 tokens, own output layer

Speed does not depend on the weights' values: llama.cpp reads and multiplies the same bytes whatever they hold. What
differs from the real model:
  - a random model never stops early (its end tokens' output rows are zero): every reply is max_tokens long, so the
    device check fixes the number of new tokens, and a real model's replies are often shorter;
  - the tokenizer is a minimal SentencePiece one: the special tokens, the 256 bytes, the pieces of the words of the
    suite's first prompts (every prefix of each, most frequent words first), then unused tokens up to the real
    vocabulary's size; the suite's prompts come out at about the real tokenizer's length (the first 16: 6,108
    tokens, 5,832 with SmolLM2's own), other text falls back to bytes (more tokens than a real tokenizer makes);
  - the architecture is llama's for all: Qwen2.5's q/k/v biases (a few thousand numbers a layer) are left out;
  - every matrix is Q4_0, where llama.cpp's Q4_0 files keep the output layer in Q6_K (for the 7B, about 0.1 GiB more).
"""
import argparse
import collections
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny_gguf import SPACE, TINY, Shape, write_gguf  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHAPES = {
    "tiny": TINY,
    "smollm2-135m": Shape("SmolLM2-135M-shaped", embedding=576, blocks=30, heads=9, heads_kv=3, feed_forward=1536,
                          vocabulary=49152, context=8192, tied=True, rope_base=100000.0),
    "qwen2.5-1.5b": Shape("Qwen2.5-1.5B-shaped", embedding=1536, blocks=28, heads=12, heads_kv=2, feed_forward=8960,
                          vocabulary=151936, context=32768, tied=True, rope_base=1e6, rms_eps=1e-6),
    "qwen2.5-7b": Shape("Qwen2.5-7B-shaped", embedding=3584, blocks=28, heads=28, heads_kv=4, feed_forward=18944,
                        vocabulary=152064, context=32768, tied=False, rope_base=1e6, rms_eps=1e-6),
}
PROMPTS = 16  # the suite prompts whose words make the vocabulary: the device check's decoding prompts


def suite_words(prompts: int = PROMPTS) -> list[str]:
    """The words of the first `prompts` suite prompts as the agent sends them (system message included), as
    SentencePiece pieces (a leading space as "▁"), most frequent first."""
    import bench_parallel

    text = "\n".join(message["content"] for messages in bench_parallel.chat_prompts(prompts) for message in messages)
    return [word for word, _ in collections.Counter(re.findall(r" ?[A-Za-z_]+| ?[0-9]+", text)).most_common()
            for word in [word.replace(" ", SPACE)]]


def make(name: str, folder: Path, seed: int = 0) -> Path:
    """The model of shape `name` in `folder` (made now, or reused: the same shape and seed give the same bytes)."""
    path = folder / f"{SHAPES[name].name}.Q4_0.gguf"
    if path.is_file():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    partial = path.with_suffix(".partial")  # renamed once whole: a cut-off write is never taken for a model
    write_gguf(partial, SHAPES[name], seed, suite_words(), q4_0=True)
    os.replace(partial, path)
    print(f"made {path.name}: {path.stat().st_size / 2**20:.0f} MiB in {time.monotonic() - began:.1f} s", flush=True)
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("shapes", nargs="*", choices=list(SHAPES), metavar="SHAPE", help=", ".join(SHAPES))
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "models")
    options = parser.parse_args()
    for name in options.shapes or SHAPES:
        print(make(name, options.out))
