#!/usr/bin/env python3
"""PyTorch reference generator for mhalab's parity tests.

For each case (parity/cases.py) it builds the PyTorch module, random parameters, inputs and masks, runs
forward and backward with loss = sum(output * cotangent) for a random cotangent, once in float32 and once
in float64 from the same (float32-representable) values, and writes DIR/<case>.safetensors with:

  param.<name>                  parameters, PyTorch state_dict names (seed modules mapped to them, seeds.py)
  input.query|key|value         float32, in the layout the PyTorch forward takes them
  input.attn_mask, input.key_padding_mask, input.mask   masks, when the case has them
  input.cotangent               the cotangent of the output
  torch.<t>, ref64.<t>          PyTorch float32 and float64 results, for <t> in
                                attn_output, attn_output_weights (when returned), grad.query|key|value,
                                grad.param.<name>
and the metadata "config" (the case as JSON), "torch_version", "torch_err" (PyTorch float32's max
|torch - ref64| per result) and "torch_err_nofma" (the same for PyTorch's code run in float32 with every
matrix product's products rounded before the sum, as without fused multiply-add: NoFMA below).

With --forward-files it also writes, for nn.MultiheadAttention cases, <case>.weights.safetensors (the
module's state_dict, saved with the official safetensors package when installed) and
<case>.inputs.safetensors (query, key, value and masks), the files `mhalab forward` takes.

  python3 parity/gen.py --out DIR [--fixtures] [--cases a,b] [--random N --seed S] [--forward-files [--forward-cases a,b]]

The committed fixtures (parity/testdata) are
  python3 parity/gen.py --out parity/testdata --fixtures --forward-files --forward-cases FORWARD_FIXTURES
with FORWARD_FIXTURES as in the Makefile (target parity-fixtures).
"""

import argparse
import contextlib
import copy
import inspect
import json
import math
import os
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as cases_mod  # noqa: E402
import errmodel  # noqa: E402
import seeds  # noqa: E402
import stio  # noqa: E402

try:
    import safetensors.torch as st_torch
except ImportError:  # the official writer is optional: stio writes the same format
    st_torch = None

warnings.filterwarnings("ignore")  # PyTorch's deprecation notes on mixed mask types are expected here

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def _sdpa_has_scale():
    # F.scaled_dot_product_attention is a builtin without an inspectable signature: try the keyword.
    if not HAS_SDPA:
        return False
    try:
        F.scaled_dot_product_attention(torch.zeros(1, 1, 1), torch.zeros(1, 1, 1), torch.zeros(1, 1, 1), scale=1.0)
        return True
    except TypeError:
        return False


SDPA_HAS_SCALE = _sdpa_has_scale()
MHA_HAS_IS_CAUSAL = "is_causal" in inspect.signature(nn.MultiheadAttention.forward).parameters
TORCH_MAJOR = int(torch.__version__.split(".")[0])
NOFMA = False  # --nofma: also run PyTorch's code in float32 without FMA (torch_err_nofma; an analysis aid)


class Skip(Exception):
    """A case the installed torch cannot run; the message says why."""


# --- random values --------------------------------------------------------------------------------


def randn(*shape, scale=1.0):
    return (torch.randn(*shape) * scale).float()


def bernoulli(shape, p):
    return torch.rand(*shape) < p


def blocked_pattern(shape, p=0.3):
    """A random bool pattern, True = blocked, never blocking the first key (last axis) so that no query
    row is fully masked: PyTorch gives NaN for those, mhalib 0 (documented in mhalib's mask.go)."""
    m = bernoulli(shape, p)
    m[..., 0] = False
    return m


def float_mask(blocked):
    """An additive mask: small random values, -inf where blocked."""
    m = randn(*blocked.shape, scale=0.5)
    return m.masked_fill(blocked, float("-inf"))


def randomize_params(module, bias_std=0.2):
    """Draws every parameter at random (weights ~ U(±√(3/fan_in)), biases ~ N(0, bias_std²)), so that a
    mixed-up or missing parameter (zero biases, PyTorch's default for in_proj_bias) shows."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() >= 2 and not name.startswith("bias_"):
                bound = (3.0 / p.shape[-1]) ** 0.5
                p.uniform_(-bound, bound)
            else:
                p.normal_(0.0, bias_std if not name.startswith("bias_") else 0.5)


def perturb_biases(module, std=0.2):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias"):
                p.add_(torch.randn(p.shape) * std)


# --- float32 without fused multiply-add ------------------------------------------------------------------


def mm_nofma(a, b):
    """a [..., m, n] @ b [..., n, p] with every product rounded to the operand dtype, then summed in
    order over n: a dot product without fused multiply-add, as GoMLX's pure-Go backend computes it.
    (The order matters too: with PyTorch's own float32 sum over n, pairwise, random_400460's
    k_proj_weight gradient erred 1.0e-05; in order 4.3e-05, the pure-Go backend 3.9e-05.)"""
    prods = a.unsqueeze(-1) * b.unsqueeze(-3)  # [..., m, n, p]
    acc = prods[..., 0, :]
    for i in range(1, prods.shape[-2]):
        acc = acc + prods[..., i, :]
    return acc.contiguous()  # [..., m, p]


try:
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError:  # very old torch: no dispatch modes, the no-FMA run is skipped
    TorchDispatchMode = None

if TorchDispatchMode is not None:
    class NoFMA(TorchDispatchMode):
        """Runs every matrix product of PyTorch's own code (forward and backward) as mm_nofma."""

        _aten = torch.ops.aten
        _plain = {_aten.mm.default, _aten.bmm.default}
        _added = {_aten.addmm.default, _aten.baddbmm.default}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in self._plain:
                return mm_nofma(args[0], args[1])
            if func in self._added:
                prod = mm_nofma(args[1], args[2])
                alpha, beta = kwargs.get("alpha", 1), kwargs.get("beta", 1)
                if alpha != 1:
                    prod = prod * alpha
                return prod + (args[0] if beta == 1 else beta * args[0])
            name = func.__name__
            if any(w in name for w in ("mm", "dot", "mv", "attention", "conv")) and "comm" not in name:
                raise NotImplementedError(f"NoFMA: unhandled product op {func}")
            return func(*args, **kwargs)


def nofma_context():
    """The context of the no-FMA float32 run: NoFMA, and SDPA's math kernel (its fused CPU kernels
    are single ops that NoFMA cannot reach)."""
    import contextlib
    stack = contextlib.ExitStack()
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        stack.enter_context(sdpa_kernel(SDPBackend.MATH))
    except ImportError:
        pass
    stack.enter_context(NoFMA())
    return stack


# --- running a module: float32, float64, float32 without FMA -------------------------------------------


def run_both(module, inputs, masks, call, cot_shape_fn, param_map=None):
    """Runs call(module, inputs, masks) -> (out, weights|None) in float32 and float64.

    inputs: name -> float32 leaf tensor (differentiated); masks: name -> mask (float masks follow the
    run's dtype). param_map maps module parameter names (or grads) to the names stored.
    Returns dict of tensors to store (without the "input." entries of masks).
    """
    out_store = {}
    cot = None
    runs = [("torch", torch.float32), ("ref64", torch.float64)]
    if TorchDispatchMode is not None and NOFMA:
        runs.append(("nofma", torch.float32))
    for tag, dtype in runs:
        m = copy.deepcopy(module).to(dtype)
        ins = {k: v.detach().clone().to(dtype).requires_grad_(True) for k, v in inputs.items()}
        ms = {k: (v.to(dtype) if v is not None and v.is_floating_point() else v) for k, v in masks.items()}
        with (nofma_context() if tag == "nofma" else contextlib.nullcontext()):
            out, weights = call(m, ins, ms)
            if cot is None:
                cot = randn(*cot_shape_fn(out))
            loss = (out * cot.to(dtype)).sum()
            loss.backward()
        out_store[f"{tag}.attn_output"] = out.detach()
        if weights is not None:
            out_store[f"{tag}.attn_output_weights"] = weights.detach()
        for k, v in ins.items():
            out_store[f"{tag}.grad.{k}"] = v.grad.detach()
        pgrads = {n: p.grad.detach() for n, p in m.named_parameters()}
        if param_map is not None:
            pgrads = param_map(pgrads)
        for n, g in pgrads.items():
            out_store[f"{tag}.grad.param.{n}"] = g
    out_store.update(run_bound(module, inputs, masks, call, cot, param_map))
    params = {n: p.detach() for n, p in module.named_parameters()}
    if param_map is not None:
        params = param_map(params)
    for n, p in params.items():
        out_store[f"param.{n}"] = p.detach().contiguous()
    for k, v in inputs.items():
        out_store[f"input.{k}"] = v.detach()
    out_store["input.cotangent"] = cot
    return out_store


def run_bound(module, inputs, masks, call, cot, param_map=None):
    """The error bound of every result (errmodel.py): the float64 computation once more under
    errmodel.ErrorBound, SDPA on its math kernel (a fused kernel is one operation without a rule).
    Returns {"bound.<result>": u·E as float32, rounded up}."""
    m = copy.deepcopy(module).to(torch.float64)
    ins = {k: v.detach().clone().to(torch.float64).requires_grad_(True) for k, v in inputs.items()}
    ms = {k: (v.to(torch.float64) if v is not None and v.is_floating_point() else v) for k, v in masks.items()}
    mode = errmodel.ErrorBound()
    res = {}
    with contextlib.ExitStack() as stack:
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            stack.enter_context(sdpa_kernel(SDPBackend.MATH))
        except ImportError:
            pass
        stack.enter_context(mode)
        out, weights = call(m, ins, ms)
        loss = (out * cot.to(torch.float64)).sum()
        loss.backward()
        res["attn_output"] = out
        if weights is not None:
            res["attn_output_weights"] = weights
        for k, v in ins.items():
            res[f"grad.{k}"] = v.grad
        pgrads = {n: p.grad for n, p in m.named_parameters()}
        if param_map is not None:
            pgrads = param_map(pgrads)
        for n, g in pgrads.items():
            res[f"grad.param.{n}"] = g
    bounds = {}
    for k, t in res.items():
        b = (mode.me(t)[1] * errmodel.U).detach()
        b32 = b.float()
        b32 = torch.where(b32.double() < b, torch.nextafter(b32, torch.tensor(math.inf)), b32)
        bounds["bound." + k] = b32.contiguous()
    return bounds


# --- nn.MultiheadAttention -----------------------------------------------------------------------


def mha_masks(c):
    """The attn_mask and key_padding_mask tensors of an mha case (None when absent)."""
    B, H, Lq, Lk = c["B"], c["H"], c["Lq"], c["Lk"]
    am = None
    kind = c["attn_mask"]
    if c["is_causal"] or kind == "causal_bool":
        # As PyTorch builds it for is_causal (top-left: query i sees keys j <= i), True = blocked.
        blocked = torch.ones(Lq, Lk, dtype=torch.bool).triu(diagonal=1)
        am = blocked if kind == "causal_bool" else torch.zeros(Lq, Lk).masked_fill(blocked, float("-inf"))
    elif kind in ("bool2d", "float2d"):
        blocked = blocked_pattern((Lq, Lk))
        am = blocked if kind == "bool2d" else float_mask(blocked)
    elif kind in ("bool3d", "float3d"):
        blocked = blocked_pattern((B * H, Lq, Lk))
        am = blocked if kind == "bool3d" else float_mask(blocked)
    elif kind is not None:
        raise ValueError(f"case {c['name']}: unknown attn_mask {kind!r}")
    kpm = None
    if c["key_padding_mask"] is not None:
        if c["key_padding_mask"] == "float" and TORCH_MAJOR < 2:
            raise Skip(f"torch {torch.__version__} has no float key_padding_mask (added in 2.0)")
        padded = blocked_pattern((B, Lk), p=0.35)
        kpm = padded if c["key_padding_mask"] == "bool" else float_mask(padded)
    return am, kpm


def run_mha(c, forward_files_dir=None):
    torch.manual_seed(c["seed"])
    E, H, B, Lq, Lk = c["E"], c["H"], c["B"], c["Lq"], c["Lk"]
    m = nn.MultiheadAttention(E, H, dropout=0.0, bias=c["bias"], add_bias_kv=c["add_bias_kv"],
                              add_zero_attn=c["add_zero_attn"], kdim=c["kdim"], vdim=c["vdim"],
                              batch_first=c["batch_first"])
    m.eval()
    randomize_params(m)

    def layout(L, D):
        return (B, L, D) if c["batch_first"] else (L, B, D)

    s = c["input_scale"]
    inputs = {"query": randn(*layout(Lq, E), scale=s), "key": randn(*layout(Lk, c["kdim"]), scale=s),
              "value": randn(*layout(Lk, c["vdim"]))}
    am, kpm = mha_masks(c)
    masks = {"attn_mask": am, "key_padding_mask": kpm}
    # is_causal: PyTorch takes it as a hint that attn_mask is the causal mask. With bias_k/bias_v or a
    # zero-attention column, PyTorch's hint path (need_weights=False, no key_padding_mask) hands
    # is_causal to SDPA over Lk+1 keys, which also blocks those extra columns, while the explicit-mask
    # path pads the mask with an allowed column. mhalab's --is-causal follows the explicit mask, so the
    # hint is only passed where both paths agree.
    hint = c["is_causal"] and MHA_HAS_IS_CAUSAL and not (c["add_bias_kv"] or c["add_zero_attn"])

    def call(mod, ins, ms):
        kw = dict(key_padding_mask=ms["key_padding_mask"], need_weights=c["need_weights"],
                  attn_mask=ms["attn_mask"], average_attn_weights=c["average_attn_weights"])
        if hint:
            kw["is_causal"] = True
        return mod(ins["query"], ins["key"], ins["value"], **kw)

    store = run_both(m, inputs, masks, call, lambda out: out.shape)
    if not c["is_causal"]:  # an is_causal case's mask is implied by the flag, as in `mhalab forward`
        if am is not None:
            store["input.attn_mask"] = am
    if kpm is not None:
        store["input.key_padding_mask"] = kpm
    if forward_files_dir is not None:
        write_forward_files(c, m, store, forward_files_dir)
    return store


def write_forward_files(c, m, store, d):
    """W and I files for `mhalab forward`: W straight from m.state_dict()."""
    wpath = os.path.join(d, c["name"] + ".weights.safetensors")
    sd = {k: v.detach().contiguous() for k, v in m.state_dict().items()}
    if st_torch is not None:
        st_torch.save_file(sd, wpath)
    else:
        stio.save(wpath, sd)
    ins = {k: store["input." + k] for k in ("query", "key", "value", "attn_mask", "key_padding_mask")
           if "input." + k in store}
    if c["mask_as_uint8"]:
        ins = {k: (v.to(torch.uint8) if v.dtype == torch.bool else v) for k, v in ins.items()}
    stio.save(os.path.join(d, c["name"] + ".inputs.safetensors"), ins)


# --- F.scaled_dot_product_attention -----------------------------------------------------------------


def run_sdpa(c, forward_files_dir=None):
    if not HAS_SDPA:
        raise Skip(f"torch {torch.__version__} has no F.scaled_dot_product_attention (added in 2.0)")
    if c["scale"] is not None and not SDPA_HAS_SCALE:
        raise Skip(f"torch {torch.__version__}: F.scaled_dot_product_attention has no scale (added in 2.1)")
    torch.manual_seed(c["seed"])
    B, H, Lq, Lk = c["B"], c["H"], c["Lq"], c["Lk"]
    inputs = {"query": randn(B, H, Lq, c["dk"]), "key": randn(B, H, Lk, c["dk"]),
              "value": randn(B, H, Lk, c["dv"])}
    shape = {"bool2d": (Lq, Lk), "bool4d": (B, H, Lq, Lk), "bool_b1": (B, 1, Lq, Lk),
             "float4d": (B, H, Lq, Lk), "float_b1": (B, 1, Lq, Lk)}
    am = None
    if c["attn_mask"] is not None:
        blocked = blocked_pattern(shape[c["attn_mask"]])
        am = ~blocked if c["attn_mask"].startswith("bool") else float_mask(blocked)  # SDPA bool: True = attend

    def call(_, ins, ms):
        kw = dict(attn_mask=ms["attn_mask"], dropout_p=0.0, is_causal=c["is_causal"])
        if c["scale"] is not None:
            kw["scale"] = c["scale"]
        return F.scaled_dot_product_attention(ins["query"], ins["key"], ins["value"], **kw), None

    store = run_both(nn.Module(), inputs, {"attn_mask": am}, call, lambda out: out.shape)
    if am is not None:
        store["input.attn_mask"] = am
    return store


# --- the seed modules -----------------------------------------------------------------------------------


def seed_mask(c, for_kind):
    """Seed masks: 1/True = attend. "pad": [B, 1, Lk] (seed000) ; "subsequent": causal, [B, Lq, Lk] for
    seed000 (combined with padding), [Lq, Lk] for the self-attention seeds."""
    B, Lq, Lk = c["B"], c["Lq"], c["Lk"]
    if c["mask"] is None:
        return None
    if c["mask"] == "pad":
        return ~blocked_pattern((B, 1, Lk), p=0.35)
    if c["mask"] == "subsequent":
        causal = torch.ones(Lq, Lk, dtype=torch.bool).tril()
        if for_kind == "seed000":
            return causal.unsqueeze(0) & ~blocked_pattern((B, 1, Lk), p=0.35)
        return causal
    raise ValueError(f"case {c['name']}: unknown seed mask {c['mask']!r}")


def run_seed(c, forward_files_dir=None):
    torch.manual_seed(c["seed"])
    kind, B, Lq, Lk, d = c["kind"], c["B"], c["Lq"], c["Lk"], c["d"]
    mask = seed_mask(c, kind)
    if kind == "seed000":
        m = seeds.Seed000MultiHeadAttention(c["H"], d)
        perturb_biases(m)
        inputs = {"query": randn(B, Lq, d), "key": randn(B, Lk, d), "value": randn(B, Lk, d)}

        def call(mod, ins, ms):
            out = mod(ins["query"], ins["key"], ins["value"], mask=ms["mask"])
            return out, mod.attn

        pmap = seeds.seed000_to_mha
    else:
        if Lq != Lk:
            raise ValueError(f"case {c['name']}: {kind} is self-attention, Lq must equal Lk")
        if kind == "seed001":
            m = seeds.Seed001UnevenMHA(d, c["head_dim"])
            pmap = seeds.seed001_to_mha
        elif kind == "seed003":
            m = seeds.Seed003MHSA(d, c["H"])
            pmap = seeds.seed003_to_mha
        elif kind == "seed003blk":
            m = seeds.Seed003Block(d, c["H"])
            pmap = seeds.seed003_block_to_mha
        else:
            raise ValueError(f"unknown kind {kind!r}")
        perturb_biases(m)
        if kind == "seed003blk":
            with torch.no_grad():
                m.ln.weight.add_(torch.randn(d) * 0.2)
        inputs = {"query": randn(B, Lq, d)}

        def call(mod, ins, ms):
            return mod(ins["query"], ms["mask"]), None

    m.eval()
    store = run_both(m, inputs, {"mask": mask}, call, lambda out: out.shape, param_map=pmap)
    if mask is not None:
        store["input.mask"] = mask
    if kind == "seed001":
        c = dict(c, head_sizes=m.head_sizes())
    return store, c


# --- driver --------------------------------------------------------------------------------------------


def max_err(a, b):
    if a.numel() == 0:
        return 0.0
    return (a.double() - b.double()).abs().max().item()


def generate(c, out_dir, forward_files=False, keep_torch=True):
    kind = c["kind"]
    ff = out_dir if forward_files else None
    if kind == "mha":
        store = run_mha(c, ff)
    elif kind == "sdpa":
        store = run_sdpa(c, ff)
    else:
        store, c = run_seed(c, ff)
    errs = {k[len("torch."):]: max_err(v, store["ref64." + k[len("torch."):]])
            for k, v in store.items() if k.startswith("torch.")}
    errs_nofma = {k[len("nofma."):]: max_err(v, store["ref64." + k[len("nofma."):]])
                  for k, v in store.items() if k.startswith("nofma.")}
    # The error model checked against PyTorch's own float32 (and no-FMA float32): the largest
    # |torch32 - ref64| / (bound + 2^-100) per result; above 1 the model would be wrong.
    eb = {}
    for k, v in store.items():
        tag, _, r = k.partition(".")
        if tag in ("torch", "nofma") and v.numel():
            q = ((v.double() - store["ref64." + r].double()).abs()
                 / (store["bound." + r].double() + 2.0 ** -100)).max().item()
            eb[k] = q
    store = {k: v for k, v in store.items() if not k.startswith("nofma.")}  # kept as errors only
    meta = {"config": json.dumps(c, sort_keys=True), "torch_version": torch.__version__,
            "torch_err": json.dumps(errs, sort_keys=True), "torch_err_bound": json.dumps(eb, sort_keys=True)}
    if errs_nofma:
        meta["torch_err_nofma"] = json.dumps(errs_nofma, sort_keys=True)
    if not keep_torch:  # committed fixtures: PyTorch's float32 error is kept in the metadata only
        store = {k: v for k, v in store.items() if not k.startswith("torch.")}
    stio.save(os.path.join(out_dir, c["name"] + ".safetensors"), store, meta)
    return errs, eb


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--fixtures", action="store_true", help="only the small named cases, without the torch.* tensors (parity/testdata)")
    p.add_argument("--cases", default="", help="comma-separated case names, or none (default: all named cases)")
    p.add_argument("--random", type=int, default=0, help="number of random configurations")
    p.add_argument("--seed", type=int, default=1, help="seed of the first random configuration")
    p.add_argument("--pool", default="", help="FIRST,SIZE: random configurations with structures from a pool "
                   "(cases.pooled_case; the soak's, replayed with the same values)")
    p.add_argument("--forward-files", action="store_true", help="also write W/I files for `mhalab forward`")
    p.add_argument("--forward-cases", default="", help="with --forward-files: only for these cases (comma-separated)")
    p.add_argument("--nofma", action="store_true", help="also run PyTorch's float32 code without fused multiply-add "
                   "and record its error (metadata torch_err_nofma): the analysis of parity/README.md")
    p.add_argument("--list", action="store_true", help="list the named cases and exit")
    a = p.parse_args(argv)
    global NOFMA
    NOFMA = a.nofma

    named = cases_mod.named_cases()
    if a.list:
        for c in named:
            print(c["name"], "(live only)" if c["live"] else "")
        return 0
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    todo = named
    if a.cases == "none":
        todo = []
    elif a.cases:
        want = a.cases.split(",")
        unknown = set(want) - {c["name"] for c in named}
        if unknown:
            p.error(f"unknown cases {sorted(unknown)}")
        todo = [c for c in named if c["name"] in want]
    if a.fixtures:
        todo = [c for c in todo if not c["live"]]
    if a.pool:
        first, size = (int(x) for x in a.pool.split(","))
        todo = list(todo) + [cases_mod.pooled_case(a.seed + i, first, size) for i in range(a.random)]
    else:
        todo = list(todo) + [cases_mod.random_case(a.seed + i) for i in range(a.random)]
    os.makedirs(a.out, exist_ok=True)
    print(f"parity/gen.py: torch {torch.__version__}, {len(todo)} cases into {a.out}")
    if a.random:
        print(f"parity/gen.py: {a.random} random configurations, seeds {a.seed}..{a.seed + a.random - 1} "
              f"(replay one: python3 parity/gen.py --out DIR --cases none --random 1 --seed SEED)")
    t0 = time.time()
    done = skipped = 0
    worst = worst_eb = (0.0, "")
    for c in todo:
        try:
            ff = a.forward_files and (not a.forward_cases or c["name"] in a.forward_cases.split(","))
            errs, eb = generate(c, a.out, ff, keep_torch=not a.fixtures)
        except Skip as e:
            print(f"  skip {c['name']}: {e}")
            skipped += 1
            continue
        done += 1
        k = max(errs, key=errs.get)
        if errs[k] > worst[0]:
            worst = (errs[k], f"{c['name']}:{k}")
        if eb:
            k = max(eb, key=eb.get)
            if eb[k] > worst_eb[0]:
                worst_eb = (eb[k], f"{c['name']}:{k}")
    print(f"parity/gen.py: wrote {done} cases, skipped {skipped}, in {time.time() - t0:.1f}s; "
          f"largest PyTorch float32 error vs float64: {worst[0]:.3g} ({worst[1]})")
    print(f"parity/gen.py: PyTorch's own float32 against the error model's bound (errmodel.py): largest err/bound "
          f"{worst_eb[0]:.3g} ({worst_eb[1]}){'' if worst_eb[0] <= 1 else '  ABOVE 1: the error model is wrong'}")
    return 0 if worst_eb[0] <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
