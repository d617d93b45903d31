#!/usr/bin/env python3
"""Parity soak: many random configurations against mhalib on every backend, in chunks.

  python3 parity/soak.py --bin PARITY_TEST_BINARY --out DIR --random N --seed S [--chunk 500]
                         [--backends go,xla:cpu]

For each chunk of --chunk configurations (seeds S, S+1, ..., S+N-1, as `make parity`'s random
configurations: cases.random_case) it writes the PyTorch references into DIR/chunk (gen.py's
code, in this process: torch is imported once), runs the compiled parity test binary
(`go test -c ./parity/`) with `-test.run 'TestParity$'` on it, one process per backend, in
parallel, and appends one line per compared tensor to DIR/records.tsv (MHALAB_PARITY_RECORDS).
A chunk that fails keeps its references in DIR/failed-<first seed> and its logs; the others are
deleted. Progress is printed per chunk; at the end DIR/summary.txt holds, per backend, the
number of configurations, tensors and failures and the distribution of err/bound (median, p99,
p99.9, max) and of err / PyTorch's err. Exit status 1 when any tensor failed.
"""

import argparse
import math
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402


def quantile(sorted_vals, q):
    if not sorted_vals:
        return float("nan")
    i = min(len(sorted_vals) - 1, max(0, math.ceil(q * len(sorted_vals)) - 1))
    return sorted_vals[i]


def summarize(records_path, n_configs, seed, elapsed):
    per = {}  # backend -> list of (err/bound, ratio, case, result)
    cases = {}
    with open(records_path) as f:
        for line in f:
            backend, case, res, err, bound, terr, maxerr = line.rstrip("\n").split("\t")[:7]
            err, bound, terr, maxerr = float(err), float(bound), float(terr), float(maxerr)
            eb = err / bound if bound > 0 else (0.0 if err == 0 else math.inf)
            ratio = maxerr / terr if terr > 0 else (0.0 if maxerr == 0 else math.inf)
            per.setdefault(backend, []).append((eb, ratio, case, res))
            cases.setdefault(backend, set()).add(case)
    lines = [f"parity soak: {n_configs} random configurations, seeds {seed}..{seed + n_configs - 1}, "
             f"{elapsed / 60:.1f} min",
             "err/bound: max over a tensor's elements of |mhalib − ref64| / (error-model bound + 2^-100) (parity/errmodel.py); "
             "ratio: max|mhalib − ref64| / max|torch32 − ref64|",
             f"{'backend':8} {'configs':>7} {'tensors':>7} {'fail':>4} {'err/bound median':>16} {'p99':>6} "
             f"{'p99.9':>6} {'max':>6}  {'ratio median':>12} {'p99':>6}  worst err/bound at"]
    for backend in sorted(per):
        recs = per[backend]
        eb = sorted(r[0] for r in recs)
        ratio = sorted(r[1] for r in recs if math.isfinite(r[1]))
        worst = max(recs, key=lambda r: r[0])
        fails = sum(1 for r in recs if not r[0] <= 1)
        lines.append(f"{backend:8} {len(cases[backend]):7d} {len(recs):7d} {fails:4d} {quantile(eb, 0.5):16.3f} "
                     f"{quantile(eb, 0.99):6.3f} {quantile(eb, 0.999):6.3f} {eb[-1]:6.3f}  "
                     f"{quantile(ratio, 0.5):12.2f} {quantile(ratio, 0.99):6.2f}  {worst[2]}:{worst[3]}")
    return "\n".join(lines), per


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="the parity test binary (go test -c -o BIN ./parity/)")
    p.add_argument("--out", required=True, help="work folder (records.tsv, summary.txt, failed chunks)")
    p.add_argument("--random", type=int, required=True, help="number of random configurations")
    p.add_argument("--seed", type=int, required=True, help="seed of the first configuration")
    p.add_argument("--chunk", type=int, default=500, help="configurations per chunk")
    p.add_argument("--pool", type=int, default=0,
                   help="draw the structures from a pool of this size (cases.pooled_case): each structure is "
                        "compiled once per backend; 0: every configuration fully random (cases.random_case)")
    p.add_argument("--backends", default="go,xla:cpu", help="comma-separated; one test process each, in parallel")
    a = p.parse_args(argv)

    os.makedirs(a.out, exist_ok=True)
    records = os.path.join(a.out, "records.tsv")
    if os.path.exists(records):
        os.remove(records)
    binary = os.path.abspath(a.bin)
    backends = a.backends.split(",")
    print(f"parity soak: {a.random} random configurations from seed {a.seed}, chunks of {a.chunk}, "
          f"backends {backends}, into {a.out}", flush=True)
    t0 = time.time()
    failed_chunks = []
    done = 0
    gen.torch.set_num_threads(1)
    while done < a.random:
        n = min(a.chunk, a.random - done)
        first = a.seed + done
        chunk = os.path.join(a.out, "chunk")
        shutil.rmtree(chunk, ignore_errors=True)
        os.makedirs(chunk)
        tg = time.time()
        for i in range(n):
            if a.pool:
                c = gen.cases_mod.pooled_case(first + i, first, a.pool)  # each chunk its own structures
            else:
                c = gen.cases_mod.random_case(first + i)
            gen.generate(c, chunk)
        tg = time.time() - tg
        tt = time.time()
        procs = []
        for b in backends:
            env = dict(os.environ, MHALAB_PARITY_DIR=os.path.abspath(chunk), MHALAB_PARITY_RECORDS=os.path.abspath(records),
                       MHALAB_TEST_BACKENDS=b, GOMLX_NO_AUTO_INSTALL="1",
                       MHALAB_PARITY_KEEP_GRAPHS=str(a.pool + 1 if a.pool else 0))
            log = open(os.path.join(a.out, f"chunk-{b.replace(':', '-')}.log"), "w")
            # The test binary runs in the parity folder, as go test would.
            procs.append((b, log, subprocess.Popen([binary, "-test.run", "TestParity$", "-test.timeout", "0"],
                                                   env=env, stdout=log, stderr=subprocess.STDOUT,
                                                   cwd=os.path.dirname(os.path.abspath(__file__)))))
        bad = []
        for b, log, proc in procs:
            rc = proc.wait()
            log.close()
            if rc != 0:
                bad.append(b)
        tt = time.time() - tt
        done += n
        if bad:
            keep = os.path.join(a.out, f"failed-{first}")
            shutil.rmtree(keep, ignore_errors=True)
            os.rename(chunk, keep)
            for b in backends:
                name = f"chunk-{b.replace(':', '-')}.log"
                shutil.copy(os.path.join(a.out, name), os.path.join(keep, name))
            failed_chunks.append(first)
            for b in bad:
                with open(os.path.join(keep, f"chunk-{b.replace(':', '-')}.log")) as f:
                    for line in f:
                        if "FAIL" in line and ("err" in line or "replay" in line or "---" in line):
                            print("   ", b, line.rstrip(), flush=True)
        print(f"  seeds {first}..{first + n - 1}: generated in {tg:.0f}s, tested in {tt:.0f}s "
              f"({1000 * tt / n:.0f} ms/config); {done}/{a.random} done, failing chunks so far: {len(failed_chunks)}"
              f"{' (' + ','.join(bad) + ')' if bad else ''}", flush=True)
    shutil.rmtree(os.path.join(a.out, "chunk"), ignore_errors=True)
    text, _ = summarize(records, a.random, a.seed, time.time() - t0)
    if failed_chunks:
        text += "\nfailing chunks (references kept): " + ", ".join(f"failed-{s}" for s in failed_chunks)
    with open(os.path.join(a.out, "summary.txt"), "w") as f:
        f.write(text + "\n")
    print(text, flush=True)
    return 1 if failed_chunks else 0


if __name__ == "__main__":
    sys.exit(main())
