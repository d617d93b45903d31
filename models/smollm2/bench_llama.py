#!/usr/bin/env python3
"""llama.cpp side of `mhalab bench` suite smollm2: greedy generation with SmolLM2-135M-Instruct in
llama.cpp (llama-cpp-python), on the same GGUF file, kept quantised (Q4_1, token_embd Q8_0) as
llama.cpp computes with it — the second anchor next to transformers (bench_torch.py).

Reads a JSON request on stdin, writes a JSON answer on stdout (nothing else on stdout):

  request: {"model": FILE.gguf, "prompt_ids": [...], "new_tokens": 32, "threads": 2,
            "warmup": 1, "runs": 3, "budget_s": 60, "extra_bufts": true}
  answer:  {"llama_cpp_python": "0.3.36", "system_info": "...", "threads": 2, "load_s": ...,
            "extra_bufts": true, "prefill_ms": [...], "decode_ms": [...], "ids": [...]}
  or       {"missing": true, "error": "..."} when llama_cpp does not import.

One run = prefill (Llama.eval over the prompt ids: the logits of the last position give the
first new token) and then new_tokens − 1 single-token Llama.eval steps with llama.cpp's KV cache,
each taking the argmax of the last logits (numpy) — greedy, never stopping at the end-of-sequence
token, as mhalab's and bench_torch.py's sides do. Llama.reset() before each run empties the
cache. threads is both n_threads (decode) and n_threads_batch (prefill). After `warmup` untimed
runs, runs are timed until `runs` are done or `budget_s` has passed (at least one).

extra_bufts false loads the model with llama_model_params.use_extra_bufts off: no extra buffer
types (ggml's AMX kernels and its weight repacking), llama.cpp's plain CPU kernels. The bench asks
for it only after a run with them crashed (ggml_backend_amx_mul_mat dies of SIGSEGV on some
Intel Xeons with AMX: bench/llamacpp.go).
"""
import json
import sys
import time

from bench_timing import time_runs


def main():
    req = json.load(sys.stdin)
    try:
        import llama_cpp
        import numpy as np
    except ImportError as e:
        json.dump({"missing": True, "error": f"llama-cpp-python not installed in {sys.executable}: {e}"}, sys.stdout)
        return
    prompt = [int(t) for t in req["prompt_ids"]]
    n = int(req["new_tokens"])
    threads = int(req.get("threads", 1))
    extra_bufts = bool(req.get("extra_bufts", True))
    if not extra_bufts:
        lc = llama_cpp.llama_cpp
        if not any(name == "use_extra_bufts" for name, _ in lc.llama_model_params._fields_):
            json.dump({"error": f"llama-cpp-python {llama_cpp.__version__} has no use_extra_bufts"}, sys.stdout)
            return
        defaults = lc.llama_model_default_params

        def without_extra_bufts():
            p = defaults()
            p.use_extra_bufts = False
            return p

        lc.llama_model_default_params = without_extra_bufts  # what Llama() starts its model params from
    t0 = time.perf_counter()
    try:
        llm = llama_cpp.Llama(model_path=req["model"], n_ctx=max(512, len(prompt) + n), n_batch=max(512, len(prompt)),
                              n_threads=threads, n_threads_batch=threads, logits_all=False, verbose=False)
    except Exception as e:  # unreadable file, unsupported format
        json.dump({"error": f"llama.cpp could not load {req['model']}: {type(e).__name__}: {e}"}, sys.stdout)
        return
    load_s = time.perf_counter() - t0
    vocab = llm.n_vocab()

    def next_token():
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(vocab,))
        return int(logits.argmax())

    def run():
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt)
        ids = [next_token()]
        t1 = time.perf_counter()
        for _ in range(n - 1):
            llm.eval([ids[-1]])
            ids.append(next_token())
        t2 = time.perf_counter()
        return (t1 - t0) * 1000, (t2 - t1) * 1000, ids

    prefill, decode, ids = time_runs(run, req)
    json.dump({"llama_cpp_python": llama_cpp.__version__, "system_info": llama_cpp.llama_print_system_info().decode(),
               "threads": threads, "load_s": load_s, "extra_bufts": extra_bufts, "prefill_ms": prefill, "decode_ms": decode, "ids": ids}, sys.stdout)


if __name__ == "__main__":
    main()
