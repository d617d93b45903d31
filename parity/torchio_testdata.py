#!/usr/bin/env python3
"""Writes torchio's test files with the official safetensors writer (safetensors.torch.save_file):

  torchio/testdata/dtypes.safetensors     one tensor per dtype, values arange(n) (bool: n % 2 == 1), plus
                                          a scalar and an empty tensor; checked value by value in Go
  torchio/testdata/mha_state_dict.safetensors
                                          nn.MultiheadAttention(6, 2, kdim=4, vdim=5, add_bias_kv=True)
                                          .state_dict(), saved straight from PyTorch

  "${MHALAB_TORCH_VENV:-~/.cache/mhalab/torch-venv}"/bin/python parity/torchio_testdata.py torchio/testdata
"""

import os
import sys

import torch
import torch.nn as nn
from safetensors.torch import save_file


def main(out):
    os.makedirs(out, exist_ok=True)
    t = {}
    for name, dt in [("f16", torch.float16), ("bf16", torch.bfloat16), ("f32", torch.float32),
                     ("f64", torch.float64), ("i64", torch.int64), ("i32", torch.int32), ("i16", torch.int16),
                     ("i8", torch.int8), ("u8", torch.uint8)]:
        t[name] = torch.arange(6).reshape(2, 3).to(dt)
    t["bool"] = (torch.arange(6).reshape(3, 2) % 2) == 1
    t["scalar"] = torch.tensor(2.5, dtype=torch.float32)
    t["empty"] = torch.zeros(0, 3, dtype=torch.float32)
    save_file(t, os.path.join(out, "dtypes.safetensors"), metadata={"written_by": "safetensors.torch"})

    torch.manual_seed(0)
    m = nn.MultiheadAttention(6, 2, kdim=4, vdim=5, add_bias_kv=True)
    save_file(m.state_dict(), os.path.join(out, "mha_state_dict.safetensors"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "torchio/testdata")
