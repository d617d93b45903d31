"""The timing loop shared by bench_torch.py and bench_llama.py (`mhalab bench` suite smollm2)."""
import time


def time_runs(run, req):
    """Calls run() — which returns (prefill_ms, decode_ms, ids) — req["warmup"] times untimed, then
    until req["runs"] runs are done or req["budget_s"] seconds have passed (at least one). Returns
    the lists of prefill and decode times and the ids of the last run."""
    for _ in range(int(req.get("warmup", 1))):
        run()
    prefill, decode = [], []
    start = time.perf_counter()
    while len(prefill) < int(req.get("runs", 3)):
        p, d, ids = run()
        prefill.append(p)
        decode.append(d)
        if time.perf_counter() - start > float(req.get("budget_s", 60)):
            break
    return prefill, decode, ids
