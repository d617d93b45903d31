#!/usr/bin/env python3
"""Runs the `mhalab` binary's forward subcommand on reference files and checks it against PyTorch.

For each nn.MultiheadAttention reference in DIR that has its `mhalab forward` files (parity/gen.py
--forward-files: the state_dict saved with safetensors.torch.save_file and the inputs), it runs

  mhalab forward --weights W --inputs I --out O --num-heads N [flags as the case] --backend B

as a separate process and compares O's attn_output (and attn_output_weights) with the float64
reference under the policy of parity/README.md: |mhalab - ref64| <= bound + floor in every element, with
the per-element error bound of the file (bound.<result>, parity/errmodel.py).

  python3 parity/check_forward.py --bin build/parity/mhalab --dir build/parity [--max N] [--backends go,xla:cpu]
"""

import argparse
import glob
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402

BOUND_FLOOR = 2.0 ** -100  # as parity/reference.go's BoundFloor


def forward_flags(c):
    flags = ["--num-heads", str(c["H"])]
    for on, flag in [(c["batch_first"], "--batch-first"), (c["add_zero_attn"], "--add-zero-attn"),
                     (c["need_weights"], "--need-weights"),
                     (c["need_weights"] and c["average_attn_weights"], "--average-attn-weights"),
                     (c["is_causal"], "--is-causal")]:
        if on:
            flags.append(flag)
    return flags


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="the mhalab binary")
    p.add_argument("--dir", required=True, help="folder written by parity/gen.py --forward-files")
    p.add_argument("--max", type=int, default=0, help="check at most N cases per backend (0: all)")
    p.add_argument("--backends", default="go,xla:cpu")
    a = p.parse_args()

    cases = []
    for path in sorted(glob.glob(os.path.join(a.dir, "*.weights.safetensors"))):
        base = path[: -len(".weights.safetensors")]
        if os.path.exists(base + ".inputs.safetensors") and os.path.exists(base + ".safetensors"):
            cases.append(base)
    if not cases:
        print(f"check_forward: no forward files in {a.dir}", file=sys.stderr)
        return 1
    if a.max:
        # Spread the pick over the list (named cases and random ones).
        step = max(1, len(cases) // a.max)
        cases = cases[::step][: a.max]
    failures = checked = 0
    worst = (0.0, "")
    for backend in a.backends.split(","):
        for base in cases:
            ref, meta = stio.load(base + ".safetensors")
            c = json.loads(meta["config"])
            torch_err = json.loads(meta["torch_err"])
            out = base + f".out.{backend.replace(':', '_')}.safetensors"
            cmd = [a.bin, "forward", "--weights", base + ".weights.safetensors", "--inputs",
                   base + ".inputs.safetensors", "--out", out, "--backend", backend] + forward_flags(c)
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {c['name']} [{backend}]: {' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
                failures += 1
                continue
            got, _ = stio.load(out)
            names = ["attn_output"] + (["attn_output_weights"] if c["need_weights"] else [])
            if sorted(got) != sorted(names):
                print(f"FAIL {c['name']} [{backend}]: output has {sorted(got)}, want {names}")
                failures += 1
                continue
            for n in names:
                want = ref["ref64." + n]
                if got[n].shape != want.shape:
                    print(f"FAIL {c['name']} [{backend}] {n}: shape {got[n].shape}, want {want.shape}")
                    failures += 1
                    continue
                diff = np.abs(got[n].astype(np.float64) - want)
                err = float(np.max(diff)) if want.size else 0.0
                eb = diff / (ref["bound." + n].astype(np.float64) + BOUND_FLOOR)
                worst_eb = float(np.max(eb)) if want.size else 0.0
                checked += 1
                ratio = err / torch_err[n] if torch_err[n] > 0 else 0.0
                if ratio > worst[0]:
                    worst = (ratio, f"{c['name']}:{n} [{backend}]")
                if not worst_eb <= 1:
                    i = np.unravel_index(int(np.argmax(eb)), eb.shape)
                    print(f"FAIL {c['name']} [{backend}] {n}: err/bound {worst_eb:.3g} at {i}: mhalab {got[n][i]!r}, "
                          f"ref64 {want[i]!r}, bound {ref['bound.' + n][i]:.3g} (torch max err {torch_err[n]:.3g})")
                    failures += 1
    print(f"check_forward: `mhalab forward` (binary) on {len(cases)} cases x {len(a.backends.split(','))} backends: "
          f"{checked} tensors checked, {failures} failures; worst ratio vs PyTorch's own error {worst[0]:.2f} ({worst[1]})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
