#!/usr/bin/env python3
"""PyTorch side of `mhalab bench` suite minilm: sentence embeddings with all-MiniLM-L6-v2 in
Hugging Face transformers (+ mean pooling and L2 normalisation, as sentence-transformers does).

Reads a JSON request on stdin, writes a JSON answer on stdout (nothing else on stdout):

  request: {"model": DIR, "sentences": [...], "threads": 2, "warmup": 1, "runs": 20, "budget_s": 20}
  answer:  {"torch": "2.15.0", "transformers": "5.23.0", "attention": "sdpa", "threads": 2,
            "times_ms": [...], "median_ms": ..., "min_ms": ..., "embeddings": [[384 floats], ...]}

One timed pass = tokenise the whole batch (padding to the longest, truncation at 256) + the
encoder + pooling, under torch.inference_mode(), float32, on the CPU. Attention is PyTorch's
SDPA (transformers' default, its fastest path on CPU; mhalab's parity tests use "eager", which
returns the weights). After `warmup` untimed passes, passes are timed until `runs` are done or
`budget_s` seconds have passed (at least 3). Runs offline (HF_HUB_OFFLINE=1).
"""
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def main():
    req = json.load(sys.stdin)
    try:
        import torch
        import transformers
    except ImportError as e:
        json.dump({"error": f"PyTorch or transformers not installed: {e}"}, sys.stdout)
        return
    torch.set_num_threads(int(req.get("threads", 1)))
    tok = transformers.AutoTokenizer.from_pretrained(req["model"])
    model = transformers.AutoModel.from_pretrained(req["model"], attn_implementation="sdpa").eval()
    sentences = req["sentences"]

    def embed():
        b = tok(sentences, padding=True, truncation=True, max_length=256, return_tensors="pt")
        with torch.inference_mode():
            last = model(**b).last_hidden_state
            mask = b["attention_mask"].unsqueeze(-1).to(last.dtype)
            e = (last * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(e, dim=-1)

    for _ in range(int(req.get("warmup", 1))):
        emb = embed()
    times = []
    start = time.perf_counter()
    while len(times) < int(req.get("runs", 10)):
        t0 = time.perf_counter()
        emb = embed()
        times.append((time.perf_counter() - t0) * 1000)
        if len(times) >= 3 and time.perf_counter() - start > float(req.get("budget_s", 20)):
            break
    s = sorted(times)
    median = s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2
    json.dump({"torch": torch.__version__, "transformers": transformers.__version__, "attention": "sdpa",
               "threads": torch.get_num_threads(), "times_ms": times, "median_ms": median, "min_ms": s[0],
               "embeddings": emb.tolist()}, sys.stdout)


if __name__ == "__main__":
    main()
