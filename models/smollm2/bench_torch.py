#!/usr/bin/env python3
"""PyTorch side of `mhalab bench` suite smollm2: greedy generation with SmolLM2-135M-Instruct in
Hugging Face transformers, loading the same GGUF file (dequantised to float32).

Reads a JSON request on stdin, writes a JSON answer on stdout (nothing else on stdout):

  request: {"model": FILE.gguf, "prompt_ids": [...], "new_tokens": 32, "threads": 2,
            "warmup": 1, "runs": 3, "budget_s": 60}
  answer:  {"torch": "2.15.0", "transformers": "5.23.0", "attention": "sdpa", "threads": 2,
            "load_s": ..., "prefill_ms": [...], "decode_ms": [...], "ids": [...]}

One run = prefill (the model over the prompt ids, use_cache=True: the logits of the last
position give the first new token) and then new_tokens − 1 single-token steps with the cache
(DynamicCache), each taking the argmax — greedy, never stopping at the end-of-sequence token,
as mhalab's side does. prefill_ms is the prefill's time per run, decode_ms the time of the
new_tokens − 1 steps per run; ids are the generated tokens of the last run. Under
torch.inference_mode(), float32, on the CPU, with transformers' default attention (SDPA). After
`warmup` untimed runs, runs are timed until `runs` are done or `budget_s` has passed (at least
one). Offline (HF_HUB_OFFLINE=1).
"""
import json
import os
import sys
import time

from bench_timing import time_runs

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def main():
    req = json.load(sys.stdin)
    try:
        import torch
        import transformers
        from transformers import AutoModelForCausalLM
    except ImportError as e:
        json.dump({"error": f"PyTorch or transformers not installed: {e}"}, sys.stdout)
        return
    torch.set_num_threads(int(req.get("threads", 1)))
    path = req["model"]
    t0 = time.perf_counter()
    try:
        model = AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path),
                                                     dtype=torch.float32).eval()
    except Exception as e:  # gguf or accelerate missing, unreadable file
        json.dump({"error": f"transformers could not load {path}: {type(e).__name__}: {e}"}, sys.stdout)
        return
    load_s = time.perf_counter() - t0
    prompt = torch.tensor([req["prompt_ids"]], dtype=torch.long)
    n = int(req["new_tokens"])

    def run():
        with torch.inference_mode():
            t0 = time.perf_counter()
            out = model(input_ids=prompt, use_cache=True)
            ids = [int(out.logits[0, -1].argmax())]
            t1 = time.perf_counter()
            past = out.past_key_values
            for _ in range(n - 1):
                out = model(input_ids=torch.tensor([[ids[-1]]]), past_key_values=past, use_cache=True)
                past = out.past_key_values
                ids.append(int(out.logits[0, -1].argmax()))
            t2 = time.perf_counter()
        return (t1 - t0) * 1000, (t2 - t1) * 1000, ids

    prefill, decode, ids = time_runs(run, req)
    json.dump({"torch": torch.__version__, "transformers": transformers.__version__,
               "attention": model.config._attn_implementation, "threads": torch.get_num_threads(),
               "load_s": load_s, "prefill_ms": prefill, "decode_ms": decode, "ids": ids}, sys.stdout)


if __name__ == "__main__":
    main()
