#!/usr/bin/env python3
"""PyTorch fixtures for the lessons' graders (lessons/NN_*/..._test.go).

  python3 lessons/testdata/gen.py [--out lessons/testdata]      (make lessons-fixtures)

Everything here comes out of PyTorch through the parity generator (parity/gen.py, parity/stio.py):

  <case>.safetensors          parity cases of nn.MultiheadAttention (dropout 0, batch_first): param.*,
                              input.*, ref64.* (PyTorch's float64 run on the same float32 values),
                              see parity/gen.py for the key names
  <case>.weights.safetensors  the module's state_dict, as torch saves it (lesson 10)
  linear.safetensors          nn.Linear(5, 4): param.weight [4 5], param.bias [4], input.x [2 3 5],
                              ref64.y [2 3 4], ref64.y_nobias [2 3 4] (x·Wᵀ without the bias)
  xavier.safetensors          torch.nn.init.xavier_uniform_ samples: sample.w [96 32] (fan_in 32,
                              fan_out 96), sample.in_proj_weight [48 16] (nn.MultiheadAttention(16, 4)'s
                              fused in-projection as PyTorch initialises it), bounds in the metadata
"""

import argparse
import math
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "parity"))
import cases as parity_cases  # noqa: E402
import gen as parity_gen  # noqa: E402
import stio  # noqa: E402

# The parity cases the graders read, by lesson:
#   05 sdpa, 08 flash:   mha_weights_per_head (per-head weights [B, h, Lq, Lk])
#   06 masks:            mha_kpm_bool (key padding), mha_causal_bool (causal attn_mask)
#   07 mha:              mha_self, mha_cross
#   04 uneven heads:     seed001_small (d=14 split as 4+4+4+2)
#   09 kv cache:         mha_is_causal
#   10 state_dict:       mha_cross (fused in_proj), mha_kdim_vdim (separate q/k/v_proj_weight)
CASES = ["mha_self", "mha_cross", "mha_kdim_vdim", "mha_weights_per_head", "mha_kpm_bool",
         "mha_causal_bool", "mha_is_causal", "seed001_small"]
STATE_DICTS = {"mha_cross", "mha_kdim_vdim"}  # only these keep a .weights.safetensors


def linear(out_dir):
    torch.manual_seed(101)
    lin = nn.Linear(5, 4)  # PyTorch's default init: kaiming-uniform weight, uniform bias
    x = torch.randn(2, 3, 5)
    w64, b64, x64 = lin.weight.detach().double(), lin.bias.detach().double(), x.double()
    stio.save(os.path.join(out_dir, "linear.safetensors"), {
        "param.weight": lin.weight.detach(), "param.bias": lin.bias.detach(), "input.x": x,
        "ref64.y": x64 @ w64.T + b64, "ref64.y_nobias": x64 @ w64.T,
    }, {"torch_version": torch.__version__, "module": "nn.Linear(5, 4)"})


def xavier(out_dir):
    torch.manual_seed(102)
    w = torch.empty(96, 32)
    nn.init.xavier_uniform_(w)
    m = nn.MultiheadAttention(16, 4)
    stio.save(os.path.join(out_dir, "xavier.safetensors"), {
        "sample.w": w, "sample.in_proj_weight": m.in_proj_weight.detach(),
    }, {"torch_version": torch.__version__,
        "w.bound": repr(math.sqrt(6 / (32 + 96))), "in_proj_weight.bound": repr(math.sqrt(6 / (16 + 48)))})


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=HERE, help="output folder (default: this folder)")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(1)
    named = {c["name"]: c for c in parity_cases.named_cases()}
    for name in CASES:
        parity_gen.generate(named[name], a.out, forward_files=name in STATE_DICTS, keep_torch=False)
        inputs = os.path.join(a.out, name + ".inputs.safetensors")
        if os.path.exists(inputs):  # `mhalab forward`'s input file: the graders use <case>.safetensors
            os.remove(inputs)
        weights = os.path.join(a.out, name + ".weights.safetensors")
        if os.path.exists(weights):  # safetensors' writer creates it private (0600)
            os.chmod(weights, 0o644)
    linear(a.out)
    xavier(a.out)
    print(f"lessons/testdata/gen.py: torch {torch.__version__}, wrote {len(CASES) + 2} fixtures into {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
