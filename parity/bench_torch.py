#!/usr/bin/env python3
"""PyTorch side of `mhalab bench`: times nn.MultiheadAttention forward passes.

Reads a JSON request on stdin and writes a JSON answer on stdout (nothing else on stdout):

  request: {"threads": 2, "device": "cpu",
            "cases": [{"key": "long/causal", "batch": 1, "seq": 4096, "embed": 512, "heads": 8,
                       "causal": true, "warmup": 2, "runs": 20, "budget_s": 20}]}
  answer:  {"torch": "2.15.0", "blas": "mkl", "threads": 2, "cpu_capability": "AVX512", "device": "cpu",
            "results": [{"key": ..., "times_ms": [...], "median_ms": ..., "min_ms": ..., "runs": ...}]}

Each case is self-attention x → nn.MultiheadAttention(E, h, batch_first=True)(x, x, x) in eval mode
under torch.inference_mode(), float32, need_weights=False (the output only, as mhalib's Done),
with is_causal=True and PyTorch's causal mask for causal cases. x is uniform in [-1, 1); the
weights are PyTorch's default initialisation (seed 0). After `warmup` untimed passes, passes are
timed one by one until `runs` are done or `budget_s` seconds have passed (at least 3).
With "device": "cuda" the module and x live on the GPU and each pass ends with
torch.cuda.synchronize(); TF32 stays off (PyTorch's default for matmuls).

Run by hand:  echo '{"threads":2,"cases":[...]}' | python parity/bench_torch.py
"""
import json
import os
import sys
import time


def blas_of(torch):
    """BLAS_INFO of the build; for a "generic" build (Debian's), the BLAS library loaded."""
    cfg = torch.__config__.show()
    info = "unknown"
    for part in cfg.replace(",", " ").split():
        if part.startswith("BLAS_INFO="):
            info = part[len("BLAS_INFO="):]
    if info == "generic":
        torch.ones(2, 2) @ torch.ones(2, 2)  # make sure the BLAS is loaded
        try:
            with open("/proc/self/maps") as f:
                libs = sorted({line.split()[-1] for line in f if "blas" in line.lower() and ".so" in line})
            if libs:
                info = "generic: " + " ".join(os.path.realpath(lib) for lib in libs)
        except OSError:
            pass
    return info


def cpu_capability(torch):
    try:
        return torch.backends.cpu.get_cpu_capability()
    except AttributeError:  # torch < 2.0
        for line in torch.__config__.show().splitlines():
            if "CPU capability usage:" in line:
                return line.split(":", 1)[1].strip()
    return "unknown"


def run_case(torch, case, device):
    torch.manual_seed(0)
    B, L, E, h = case["batch"], case["seq"], case["embed"], case["heads"]
    mha = torch.nn.MultiheadAttention(E, h, batch_first=True).eval().to(device)
    x = (torch.rand(B, L, E) * 2 - 1).to(device)
    mask, causal_kw = None, {}
    if case.get("causal"):
        mask = torch.triu(torch.full((L, L), float("-inf")), diagonal=1).to(device)
        if "is_causal" in mha.forward.__code__.co_varnames:  # torch >= 2.0
            causal_kw = {"is_causal": True}
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def forward():
        if mask is None:
            out = mha(x, x, x, need_weights=False)[0]
        else:
            out = mha(x, x, x, need_weights=False, attn_mask=mask, **causal_kw)[0]
        sync()
        return out

    times = []
    with torch.inference_mode():
        for _ in range(case["warmup"]):
            forward()
        start = time.perf_counter()
        while len(times) < case["runs"]:
            t0 = time.perf_counter()
            forward()
            times.append((time.perf_counter() - t0) * 1000)
            if len(times) >= 3 and time.perf_counter() - start > case["budget_s"]:
                break
    ordered = sorted(times)
    n = len(ordered)
    median = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return {"key": case["key"], "times_ms": times, "median_ms": median, "min_ms": ordered[0], "runs": n}


def main():
    request = json.load(sys.stdin)
    try:
        import torch
    except ImportError as e:
        json.dump({"error": "PyTorch not installed: %s" % e}, sys.stdout)
        return 0
    torch.set_num_threads(int(request["threads"]))
    device = request.get("device", "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        json.dump({"error": "PyTorch %s sees no CUDA device" % torch.__version__}, sys.stdout)
        return 0
    answer = {
        "torch": torch.__version__,
        "blas": blas_of(torch),
        "threads": torch.get_num_threads(),
        "cpu_capability": cpu_capability(torch),
        "device": device if device == "cpu" else "cuda: " + torch.cuda.get_device_name(0),
        "results": [],
    }
    for case in request["cases"]:
        answer["results"].append(run_case(torch, case, device))
        print("torch: %s done" % case["key"], file=sys.stderr, flush=True)
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
