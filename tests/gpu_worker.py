"""The kit's LlamaModel driven from a child process, so that test_gpu.py can run it with the Vulkan venv's python and
with the CPU venv's on the same job. Not a test: `PYTHON tests/gpu_worker.py JOB.json` prints one JSON line.

    {"do": "replies", "turns": ["...", ...], "max_tokens": N}    greedy replies of a multi-turn chat, one sequence:
                                                                 each with its prompt's and its own token ids
    {"do": "margins", "replies": [...]}                          for each token of those replies, how far its logit is
                                                                 below this build's top logit at that position
    {"do": "open", "parallel": K or null, "attempts": N, "budgets": [GiB or null, ...]}
                                                                 the contexts open() makes: K, why, llama.cpp's buffers
    {"do": "fail", "how": "ggml_assert" or "cxx_exception"}      a failure inside llama.cpp's libraries, model loaded:
        ggml_assert     ggml-vulkan's GGML_ASSERT in ggml_backend_vk_get_device_memory, asked for a device it has not
                        (the path of every ggml abort: GGML_ASSERT, CUDA errors);
        cxx_exception   a C++ exception thrown by libstdc++ through the C frames, as ggml-vulkan's
                        vk::DeviceLostError would be (lavapipe cannot be made to lose its device)
"""
import ctypes
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kit import engine  # noqa: E402
import pybench  # noqa: E402


def margins(replies: list[dict]) -> list[list[float]]:
    """Teacher-forced: the replies' tokens through a plain Llama of this build, all logits kept (0 = its top choice)."""
    import llama_cpp

    llm = llama_cpp.Llama(model_path=str(pybench.default_model_path()), n_gpu_layers=-1, n_ctx=2048, logits_all=True, verbose=False)
    found = []
    for reply in replies:
        llm.reset()
        llm.eval(reply["prompt_ids"] + reply["ids"])
        rows = llm.scores[len(reply["prompt_ids"]) - 1:len(reply["prompt_ids"]) - 1 + len(reply["ids"])]
        found.append([round(float(row.max() - row[token]), 4) for row, token in zip(rows, reply["ids"])])
    return found


def main(job: dict) -> dict:
    if job["do"] == "margins":
        return {"margins": margins(job["replies"])}
    model = engine.LlamaModel(pybench.default_model_path(), job.get("n_gpu_layers", -1), job.get("ctx", 2048), 0, 0.0, 1.0,
                               job.get("max_tokens", 8))
    found = {"device": model.device}
    if job["do"] == "replies":
        model.open(1, 1)
        session = model.attempt("chat", 0)
        messages, replies = [{"role": "system", "content": "You are a helpful assistant."}], []
        for turn in job["turns"]:
            messages.append({"role": "user", "content": turn})
            request = model.render(engine.merge_consecutive_roles(messages), 0)
            reply = model.answer(request, session)
            replies.append({"text": reply.text, "stop": reply.stop, "prompt_ids": request.prompt, "ids": request.completion})
            messages.append({"role": "assistant", "content": reply.text})
        found["replies"] = replies
    elif job["do"] == "open":  # once per GPU memory budget in job["budgets"] (GiB; null: none)
        found |= {"gpus": [vars(device) for device in engine.gpus()], "opened": []}
        for budget in job.get("budgets", [None]):
            os.environ.pop(engine.BUDGET_VARIABLE, None)
            os.environ.update({engine.BUDGET_VARIABLE: str(budget)} if budget else {})
            with engine.llama_log() as log:
                slots = model.open(job["parallel"], job["attempts"])
            found["opened"].append({"budget": budget, "slots": slots, "choice": model.choice, "buffers": engine.device_buffers(log),
                                    "kv_per_sequence": model.kv_bytes_per_sequence()})
            model.close()
        return found
    elif job["do"] == "fail":
        import llama_cpp

        if job["how"] == "ggml_assert":
            vulkan = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml-vulkan.so"))
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            vulkan.ggml_backend_vk_get_device_memory(99, ctypes.byref(free), ctypes.byref(total))
        else:
            ctypes.CDLL("libstdc++.so.6")._ZSt21__throw_runtime_errorPKc(b"device lost")
        found["survived"] = True
    model.close()
    return found


if __name__ == "__main__":
    print(json.dumps(main(json.loads(Path(sys.argv[1]).read_text()))), flush=True)
