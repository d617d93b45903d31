#!/usr/bin/env python3
"""PyTorch side of `mhalab bench --suites modern`: sliding-window attention and GQA decoding.

Reads a JSON request on stdin and writes a JSON answer on stdout (nothing else on stdout):

  request: {"threads": 2, "flex": "compile" | "eager" | "none",
            "window": [{"key": "L8192", "batch": 1, "heads": 4, "seq": 8192, "dk": 64, "window": 512,
                        "warmup": 1, "runs": 10, "budget_s": 30}],
            "decode": [{"key": "Hkv8", "embed": 2048, "heads": 32, "kv_heads": 8, "layers": 2,
                        "context": 4096, "steps": 16, "budget_s": 30}]}
  answer:  {"torch": "2.15.0", "threads": 2, "cpu_capability": "AVX512",
            "window": [{"key": ..., "impl": ..., "mask": "causal" | "window", "compile_ms": ...,
                        "times_ms": [...], "median_ms": ..., "min_ms": ...}],
            "window_max_diff": {"L8192": 2e-7},   # flex_attention vs SDPA with the bool mask
            "decode": [{"key": ..., "cache_bytes": ..., "times_ms": [...], "median_ms": ...}]}

Window cases: q, k, v [B, h, L, dk] float32 uniform in [-1, 1) (seed 0), under
torch.inference_mode(), timed as mhalib's: after `warmup` untimed calls, calls are timed one by one
until `runs` are done or `budget_s` seconds have passed (at least 3). Per case:
  - F.scaled_dot_product_attention(q, k, v, is_causal=True)               full causal
  - F.scaled_dot_product_attention(q, k, v, attn_mask=M)                   M[i, j] = i - W <= j <= i
  - flex_attention(q, k, v, block_mask=create_block_mask(same rule))      the same window
flex_attention is compiled with torch.compile ("compile": its compile time is reported) or run
eagerly ("eager": PyTorch's reference path, which materialises all L x L scores; small L only).

Decode cases: a stack of `layers` pre-LN attention layers (LayerNorm, q/k/v/o nn.Linear without
bias, q with `heads` heads, k/v with `kv_heads`), one token per step at the end of a context of
`context` positions, keys and values written into preallocated cache tensors
[1, kv_heads, context, dk] (index_copy_) and attended with
F.scaled_dot_product_attention(..., attn_mask=positions <= pos, enable_gqa=True) over the whole
cache, as mhalib's KVCache does; the models are timed alternately, step by step. cache_bytes is
the bytes of the cache tensors.

Run by hand:  echo '{"threads":2,"flex":"eager","window":[...]}' | python parity/bench_modern_torch.py
"""
import json
import sys
import time


def cpu_capability(torch):
    try:
        return torch.backends.cpu.get_cpu_capability()
    except AttributeError:
        return "unknown"


def timed(fn, warmup, runs, budget_s):
    """Times fn after warmup calls, until runs timed calls or budget_s seconds (at least 3)."""
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < runs:
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
        if len(times) >= 3 and time.perf_counter() - start > budget_s:
            break
    return times


def summary(times):
    s = sorted(times)
    n = len(s)
    median = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return {"times_ms": times, "median_ms": median, "min_ms": s[0]}


def window_case(torch, case, flex_mode, answer):
    import torch.nn.functional as F
    torch.manual_seed(0)
    B, H, L, dk, W = case["batch"], case["heads"], case["seq"], case["dk"], case["window"]
    q, k, v = [(torch.rand(B, H, L, dk) * 2 - 1) for _ in range(3)]
    i = torch.arange(L).view(L, 1)
    j = torch.arange(L).view(1, L)
    mask = (j <= i) & (j >= i - W)  # [L, L]: key j takes part for query i
    warmup, runs, budget = case["warmup"], case["runs"], case["budget_s"]

    def add(impl, mask_kind, fn, compile_ms=0.0):
        row = {"key": case["key"], "impl": impl, "mask": mask_kind, "compile_ms": compile_ms}
        row.update(summary(timed(fn, warmup, runs, budget)))
        answer["window"].append(row)
        print("torch: %s %s %s done" % (case["key"], impl, mask_kind), file=sys.stderr, flush=True)

    with torch.inference_mode():
        add("SDPA is_causal", "causal", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
        add("SDPA bool mask", "window", lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
        if flex_mode == "none":
            return
        from torch.nn.attention.flex_attention import flex_attention, create_block_mask

        def rule(b, h, qi, kv):
            return (kv <= qi) & (kv >= qi - W)

        block_mask = create_block_mask(rule, None, None, L, L, device="cpu")
        flex = flex_attention
        compile_ms = 0.0
        if flex_mode == "compile":
            flex = torch.compile(flex_attention, dynamic=False)
            t0 = time.perf_counter()
            flex(q, k, v, block_mask=block_mask)
            compile_ms = (time.perf_counter() - t0) * 1000
        out = flex(q, k, v, block_mask=block_mask)
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        answer["window_max_diff"][case["key"]] = (out - ref).abs().max().item()
        impl = "flex_attention block_mask" + (" (torch.compile)" if flex_mode == "compile" else " (eager)")
        add(impl, "window", lambda: flex(q, k, v, block_mask=block_mask), compile_ms)


def decode_model(torch, case):
    """Builds the decoding model of case; returns one() (one step, timed by the caller) and the
    model."""
    import torch.nn.functional as F
    torch.manual_seed(0)
    E, Hq, Hkv, layers, ctx = case["embed"], case["heads"], case["kv_heads"], case["layers"], case["context"]
    dk = E // Hq
    nn = torch.nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(E)
            self.q = nn.Linear(E, Hq * dk, bias=False)
            self.k = nn.Linear(E, Hkv * dk, bias=False)
            self.v = nn.Linear(E, Hkv * dk, bias=False)
            self.o = nn.Linear(Hq * dk, E, bias=False)
            self.register_buffer("keys", torch.zeros(1, Hkv, ctx, dk))    # [1, Hkv, ctx, dk]
            self.register_buffer("values", torch.zeros(1, Hkv, ctx, dk))  # [1, Hkv, ctx, dk]

        def forward(self, x, pos):  # x: [1, 1, E]
            h = self.norm(x)
            q = self.q(h).view(1, 1, Hq, dk).transpose(1, 2)    # [1, Hq, 1, dk]
            k = self.k(h).view(1, 1, Hkv, dk).transpose(1, 2)   # [1, Hkv, 1, dk]
            v = self.v(h).view(1, 1, Hkv, dk).transpose(1, 2)   # [1, Hkv, 1, dk]
            self.keys.index_copy_(2, pos, k)
            self.values.index_copy_(2, pos, v)
            seen = torch.arange(ctx).view(1, 1, 1, ctx) <= pos  # [1, 1, 1, ctx]
            out = F.scaled_dot_product_attention(q, self.keys, self.values, attn_mask=seen, enable_gqa=True)
            return x + self.o(out.transpose(1, 2).reshape(1, 1, Hq * dk))

    model = nn.ModuleList([Layer() for _ in range(layers)]).eval()
    x = torch.rand(1, 1, E) * 2 - 1
    step = [ctx - case["steps"] - 1]

    def one():
        step[0] = min(step[0] + 1, ctx - 1)
        pos = torch.tensor([step[0]])
        y = x
        for layer in model:
            y = layer(y, pos)
        return y

    return one, model


def decode_cases(torch, cases, answer):
    """Times the decoding models alternately, step by step (a change of load hits all alike):
    one untimed step each, then up to `steps` timed steps each, until every model's budget is
    spent (at least 3)."""
    if not cases:
        return
    models = [decode_model(torch, c) for c in cases]
    times = [[] for _ in cases]
    budget = sum(c["budget_s"] for c in cases)
    with torch.inference_mode():
        for one, _ in models:
            one()
        start = time.perf_counter()
        while len(times[0]) < cases[0]["steps"]:
            for (one, _), t in zip(models, times):
                t0 = time.perf_counter()
                one()
                t.append((time.perf_counter() - t0) * 1000)
            if len(times[0]) >= 3 and time.perf_counter() - start > budget:
                break
    for case, (_, model), t in zip(cases, models, times):
        row = {"key": case["key"], "cache_bytes": sum(l.keys.nbytes + l.values.nbytes for l in model)}
        row.update(summary(t))
        answer["decode"].append(row)
    print("torch: decoding done", file=sys.stderr, flush=True)


def main():
    request = json.load(sys.stdin)
    out, sys.stdout = sys.stdout, sys.stderr  # torch.compile may print: keep stdout for the answer
    try:
        import torch
    except ImportError as e:
        json.dump({"error": "PyTorch not installed: %s" % e}, out)
        return 0
    torch.set_num_threads(int(request["threads"]))
    answer = {"torch": torch.__version__, "threads": torch.get_num_threads(),
              "cpu_capability": cpu_capability(torch), "window": [], "window_max_diff": {}, "decode": []}
    flex_mode = request.get("flex", "eager")
    if flex_mode != "none":
        try:
            import torch.nn.attention.flex_attention  # noqa: F401  (torch >= 2.5)
        except ImportError as e:
            answer["flex_note"] = "flex_attention unavailable in PyTorch %s: %s" % (torch.__version__, e)
            flex_mode = "none"
    for case in request.get("window", []):
        window_case(torch, case, flex_mode, answer)
    decode_cases(torch, request.get("decode", []), answer)
    json.dump(answer, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
