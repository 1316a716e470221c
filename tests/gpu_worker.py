"""The kit's LlamaModel driven from a child process, so that test_gpu.py can run it with the Vulkan venv's python and
with the CPU venv's on the same job. Not a test: `PYTHON tests/gpu_worker.py JOB.json` prints one JSON line.

    {"do": "replies", "turns": ["...", ...], "max_tokens": N}    greedy replies of a multi-turn chat, one sequence
    {"do": "open", "parallel": K or null, "attempts": N}          the context open() makes: K, why, llama.cpp's buffers
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import gpu  # noqa: E402
import pybench  # noqa: E402


def main(job: dict) -> dict:
    model = pybench.LlamaModel(pybench.default_model_path(), job.get("n_gpu_layers", -1), job.get("ctx", 2048), 0, 0.0, 1.0,
                               job.get("max_tokens", 8))
    found = {"device": model.device}
    if job["do"] == "replies":
        model.open(1, 1)
        model.start_task("chat")
        messages, replies = [{"role": "system", "content": "You are a helpful assistant."}], []
        for turn in job["turns"]:
            messages.append({"role": "user", "content": turn})
            reply = model.reply("chat", messages, 0)
            replies.append({"text": reply.text, "tokens": reply.completion_tokens, "stop": reply.stop})
            messages.append({"role": "assistant", "content": reply.text})
        found["replies"] = replies
    elif job["do"] == "open":
        with gpu.llama_log() as log:
            found["slots"] = model.open(job["parallel"], job["attempts"])
        found |= {"choice": model.choice, "buffers": gpu.device_buffers(log), "kv_per_sequence": model.kv_bytes_per_sequence()}
    model.close()
    return found


if __name__ == "__main__":
    print(json.dumps(main(json.loads(Path(sys.argv[1]).read_text()))), flush=True)
