#!/usr/bin/env python3
"""PyTorch references for mhalib's modern attention (issue 13): GQA, ALiBi, soft-cap, sliding
window, sinks, RoPE (both conventions) and MLA.

Every attention case follows the `mhalab sdpa` contract, in this order: RoPE (query row i at
position S - Lq + i, key j at j), logits = q.k^T * scale, soft-cap C*tanh(logits/C),
+ ALiBi slope_h*(j - i), + float mask; the bool mask (true = take part), is_causal (top-left,
j <= i) and the window (i - left <= j <= i + right) block to -inf; softmax over keys; a fully
blocked row gives 0. Sinks (gpt-oss) add exp(sink_h) to the softmax's denominator.

Three PyTorch computations per case, which must agree (the generator fails otherwise):
  * "math": the formula above written with plain tensor ops in float64 (k, v repeated with
    repeat_interleave for GQA) -- the reference stored as out64;
  * the library path: F.scaled_dot_product_attention(..., enable_gqa=True) when the case has
    only GQA, causal, a mask and a scale; otherwise torch.nn.attention.flex_attention with a
    score_mod (soft-cap, ALiBi, float mask), a block_mask (causal, window, bool mask) and
    enable_gqa; sinks from flex's log-sum-exp: out * sigmoid(lse - sink). Run in float64 (must
    equal "math" to 1e-10) and in float32 (stored as out32: PyTorch's own float32 error gives
    the tolerance of the Go comparison, parity/modern_test.go).
RoPE cases: half-split with Hugging Face's rotate_half formula, interleaved with the complex
multiplication of Meta's Llama / GGUF; cross-checked against each other on permuted features.
MLA cases: a module written from the DeepSeek-V2 paper's equations (explicit form); its absorbed
form is computed too and must agree.

  python parity/modern_gen.py --out DIR [--fixtures] [--random N --seed S]

writes DIR/modern_<name>.safetensors (inputs, out64, out32, metadata "config" as JSON) and, for
attention cases without sinks, DIR/modern_<name>.inputs.safetensors (query, key, value,
attn_mask: the input file of `mhalab sdpa`).
"""

import argparse
import json
import math
import os
import random
import sys
import warnings

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402

warnings.filterwarnings("ignore")  # flex_attention warns that it runs uncompiled (eager) on CPU
from torch.nn.attention.flex_attention import create_block_mask, flex_attention  # noqa: E402


# ---- positions -----------------------------------------------------------------------------


def alibi_slopes(n):
    """ALiBi paper's slopes: 2^(-8(h+1)/n) for n a power of two; otherwise those of the largest
    power of two m < n, then every other slope of 2m."""

    def geometric(n):
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    m = 1 << (n.bit_length() - 1)
    return (geometric(m) + geometric(2 * m)[0::2])[:n]


def rope_half(x, theta, rd, offset):
    """Hugging Face's rotate_half formulation on the first rd features of x [B, H, L, d]."""
    L = x.shape[2]
    inv_freq = 1.0 / (theta ** (torch.arange(0, rd, 2, dtype=torch.float64) / rd))  # [rd/2]
    pos = torch.arange(offset, offset + L, dtype=torch.float64)
    freqs = torch.outer(pos, inv_freq)  # [L, rd/2]
    emb = torch.cat((freqs, freqs), dim=-1)  # [L, rd]
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    xr, xp = x[..., :rd], x[..., rd:]
    x1, x2 = xr[..., : rd // 2], xr[..., rd // 2 :]
    rotated = torch.cat((-x2, x1), dim=-1)
    return torch.cat((xr * cos + rotated * sin, xp), dim=-1)


def rope_interleaved(x, theta, rd, offset):
    """GPT-J / GGUF pairs (2k, 2k+1), as complex numbers multiplied by e^(i*p*w_k)."""
    L = x.shape[2]
    inv_freq = 1.0 / (theta ** (torch.arange(0, rd, 2, dtype=torch.float64) / rd))
    pos = torch.arange(offset, offset + L, dtype=torch.float64)
    rot = torch.polar(torch.ones(L, rd // 2, dtype=torch.float64), torch.outer(pos, inv_freq))  # [L, rd/2]
    xr = x[..., :rd].to(torch.float64).reshape(*x.shape[:-1], rd // 2, 2)
    xc = torch.view_as_complex(xr.contiguous()) * rot
    out = torch.view_as_real(xc).reshape(*x.shape[:-1], rd).to(x.dtype)
    return torch.cat((out, x[..., rd:]), dim=-1)


def rope(x, conv, theta, rd, offset):
    return (rope_interleaved if conv == "interleaved" else rope_half)(x, theta, rd, offset)


# ---- attention -----------------------------------------------------------------------------


def allowed_matrix(c, Lq, S):
    """[Lq, S] bool: causal (top-left) and window."""
    i = torch.arange(Lq).view(Lq, 1)
    j = torch.arange(S).view(1, S)
    ok = torch.ones(Lq, S, dtype=torch.bool)
    if c["is_causal"]:
        ok &= j <= i
    if c["window_left"] is not None:
        ok &= j >= i - c["window_left"]
    if c["window_right"] is not None:
        ok &= j <= i + c["window_right"]
    return ok


def prepare(c, q, k):
    """RoPE (when asked) and the scale."""
    Lq, S, E = q.shape[2], k.shape[2], q.shape[3]
    if c["rope"]:
        q = rope(q, c["rope"], c["rope_theta"], E, S - Lq)
        k = rope(k, c["rope"], c["rope_theta"], E, 0)
    scale = c["scale"] if c["scale"] is not None else 1.0 / math.sqrt(E)
    return q, k, scale


def math_attention(c, q, k, v, mask, sinks):
    """The contract's formula with plain tensor ops."""
    B, Hq, Lq, _ = q.shape
    Hkv, S = k.shape[1], k.shape[2]
    q, k, scale = prepare(c, q, k)
    k = k.repeat_interleave(Hq // Hkv, dim=1)
    v = v.repeat_interleave(Hq // Hkv, dim=1)
    s = (q @ k.transpose(-1, -2)) * scale  # [B, Hq, Lq, S]
    if c["softcap"]:
        s = c["softcap"] * torch.tanh(s / c["softcap"])
    if c["alibi"]:
        slopes = torch.tensor(alibi_slopes(Hq), dtype=s.dtype).view(1, Hq, 1, 1)
        dist = (torch.arange(S).view(1, S) - torch.arange(Lq).view(Lq, 1)).to(s.dtype)
        s = s + slopes * dist
    if mask is not None and mask.dtype != torch.bool:
        s = s + mask
    ok = allowed_matrix(c, Lq, S).expand(B, Hq, Lq, S)
    if mask is not None and mask.dtype == torch.bool:
        ok = ok & mask
    s = s.masked_fill(~ok, float("-inf"))
    m = s.amax(dim=-1, keepdim=True)
    if sinks is not None:
        m = torch.maximum(m, sinks.view(1, Hq, 1, 1))
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(s - m)
    den = e.sum(dim=-1, keepdim=True)
    if sinks is not None:
        den = den + torch.exp(sinks.view(1, Hq, 1, 1) - m)
    w = torch.where(den > 0, e / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(e))
    return w @ v


def uses_flex(c):
    return bool(c["alibi"] or c["softcap"] or c["sinks"] or c["window_left"] is not None or c["window_right"] is not None)


def library_attention(c, q, k, v, mask, sinks):
    """F.scaled_dot_product_attention or flex_attention, in q's dtype."""
    B, Hq, Lq, _ = q.shape
    S = k.shape[2]
    gqa = k.shape[1] != Hq
    q, k, scale = prepare(c, q, k)
    if not uses_flex(c):
        attn_mask = None
        if mask is not None:
            attn_mask = mask.expand(B, Hq, Lq, S)
        if c["is_causal"]:
            causal = allowed_matrix(c, Lq, S)
            if attn_mask is None:
                attn_mask = causal
            elif attn_mask.dtype == torch.bool:
                attn_mask = attn_mask & causal
            else:
                attn_mask = attn_mask.masked_fill(~causal, float("-inf"))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=scale, enable_gqa=gqa)
    slopes = torch.tensor(alibi_slopes(Hq), dtype=q.dtype)
    fmask = mask.expand(B, Hq, Lq, S) if mask is not None and mask.dtype != torch.bool else None
    bmask = mask.expand(B, Hq, Lq, S) if mask is not None and mask.dtype == torch.bool else None
    cap = torch.tensor(c["softcap"] or 1.0, dtype=q.dtype)  # a tensor: flex traces a Python float as SymFloat and fails

    def score_mod(score, b, h, qi, kj):
        if c["softcap"]:
            score = cap * torch.tanh(score / cap)
        if c["alibi"]:
            score = score + slopes[h] * (kj - qi)
        if fmask is not None:
            score = score + fmask[b, h, qi, kj]
        return score

    def mask_mod(b, h, qi, kj):
        ok = qi >= 0  # all true
        if c["is_causal"]:
            ok = ok & (kj <= qi)
        if c["window_left"] is not None:
            ok = ok & (kj >= qi - c["window_left"])
        if c["window_right"] is not None:
            ok = ok & (kj <= qi + c["window_right"])
        if bmask is not None:
            ok = ok & bmask[b, h, qi, kj]
        return ok

    block_mask = create_block_mask(mask_mod, B, Hq, Lq, S, device="cpu")
    out, lse = flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale, enable_gqa=gqa, return_lse=True)
    # A row whose logits are all -inf from the float mask: flex gives NaN there, the contract 0.
    out = torch.nan_to_num(out, nan=0.0)
    if sinks is not None:
        # out = sum_j e^(s_j) v_j / (sum_j e^(s_j) + e^sink) = flex's out * sigmoid(lse - sink)
        out = out * torch.sigmoid(lse - sinks.view(1, Hq, 1)).unsqueeze(-1)
    return out


# ---- cases ---------------------------------------------------------------------------------

DEFAULTS = dict(B=1, Hq=2, Hkv=2, Lq=5, S=5, E=8, Ev=8, is_causal=False, scale=None, window_left=None, window_right=None,
                alibi=False, softcap=None, rope=None, rope_theta=10000.0, mask=None, mask_shape=None, sinks=False)


def attention_cases():
    def case(name, **kw):
        c = dict(DEFAULTS)
        c.update(kw)
        c["name"] = name
        return c

    return [
        case("gqa", Hq=4, Hkv=2),
        case("mqa_causal", Hq=4, Hkv=1, is_causal=True),
        case("gqa_boolmask", Hq=6, Hkv=2, Lq=3, S=6, mask="bool", mask_shape=[1, 1, 3, 6]),
        case("gqa_floatmask_scale", Hq=4, Hkv=2, mask="float", mask_shape=[2, 4, 5, 5], B=2, scale=0.3),
        case("alibi", Hq=4, Hkv=4, alibi=True, is_causal=True),
        case("alibi6_gqa", Hq=6, Hkv=3, alibi=True, is_causal=True, Lq=4, S=7),
        case("softcap", softcap=2.0, scale=1.0),
        case("softcap_gqa", Hq=4, Hkv=1, softcap=5.0, is_causal=True),
        case("window", Lq=8, S=8, window_left=2, window_right=0),
        case("window_both", Lq=6, S=9, window_left=1, window_right=2),
        case("window_causal_gqa", Hq=4, Hkv=2, Lq=8, S=8, window_left=3, window_right=None, is_causal=True),
        case("window_left_only", Lq=7, S=7, window_left=2),
        case("sinks", sinks=True),
        case("sinks_gqa_window", Hq=4, Hkv=2, sinks=True, window_left=2, window_right=0, Lq=6, S=6),
        case("rope_half", rope="half"),
        case("rope_interleaved_theta", rope="interleaved", rope_theta=500000.0, Lq=3, S=6, is_causal=True),
        case("everything", Hq=4, Hkv=2, Lq=4, S=9, rope="half", rope_theta=100000.0, softcap=4.0, alibi=True,
             window_left=3, window_right=1, mask="bool", mask_shape=[1, 4, 4, 9], scale=0.5),
        case("fully_blocked_rows", Lq=4, S=4, window_left=0, window_right=0, mask="float_inf", mask_shape=[4, 4]),
        case("ev_differs", Hq=2, Hkv=1, E=6, Ev=3, is_causal=True),
    ]


def random_cases(n, seed):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        Hkv = rng.choice([1, 2, 3])
        Hq = Hkv * rng.choice([1, 2, 3])
        Lq = rng.randint(1, 9)
        S = rng.randint(1, 12)
        E = rng.choice([2, 4, 6, 8])
        c = dict(DEFAULTS)
        c.update(name=f"rand_{seed}_{i}", B=rng.randint(1, 2), Hq=Hq, Hkv=Hkv, Lq=Lq, S=S, E=E, Ev=rng.choice([E, 3]),
                 is_causal=rng.random() < 0.4, alibi=rng.random() < 0.3,
                 softcap=rng.choice([None, None, 1.0, 3.0]), rope=rng.choice([None, None, "half", "interleaved"]),
                 rope_theta=rng.choice([10000.0, 100000.0, 500000.0]), sinks=rng.random() < 0.25,
                 scale=rng.choice([None, None, 0.7]))
        if rng.random() < 0.5:
            c["window_left"] = rng.choice([None, 0, 1, 3])
            c["window_right"] = rng.choice([None, 0, 2])
        if rng.random() < 0.4:
            c["mask"] = rng.choice(["bool", "float"])
            c["mask_shape"] = rng.choice([[Lq, S], [c["B"], 1, Lq, S], [1, Hq, Lq, S]])
        out.append(c)
    return out


def make_inputs(c, gen):
    B, Hq, Hkv, Lq, S, E, Ev = (c[x] for x in ("B", "Hq", "Hkv", "Lq", "S", "E", "Ev"))
    q = torch.randn(B, Hq, Lq, E, generator=gen, dtype=torch.float32)
    k = torch.randn(B, Hkv, S, E, generator=gen, dtype=torch.float32)
    v = torch.randn(B, Hkv, S, Ev, generator=gen, dtype=torch.float32)
    mask = None
    if c["mask"] == "bool":
        mask = torch.rand(*c["mask_shape"], generator=gen) < 0.75
    elif c["mask"] == "float":
        mask = torch.randn(*c["mask_shape"], generator=gen, dtype=torch.float32)
    elif c["mask"] == "float_inf":
        mask = torch.zeros(*c["mask_shape"], dtype=torch.float32)
        mask[1, :] = float("-inf")  # row 1 blocked by the float mask alone
        mask[2, 2] = float("-inf")  # row 2: the window keeps only key 2, the mask blocks it
    sinks = torch.randn(Hq, generator=gen, dtype=torch.float32) if c["sinks"] else None
    return q, k, v, mask, sinks


def full_mask(mask, c):
    if mask is None:
        return None
    return mask.reshape([1] * (4 - mask.dim()) + list(mask.shape))


def run_attention(c, seed, out_dir, inputs_files=True):
    gen = torch.Generator().manual_seed(seed)
    q, k, v, mask, sinks = make_inputs(c, gen)
    m4 = full_mask(mask, c)
    d = lambda t: None if t is None else (t if t.dtype == torch.bool else t.double())  # noqa: E731
    out64 = math_attention(c, q.double(), k.double(), v.double(), d(m4), d(sinks))
    lib64 = library_attention(c, q.double(), k.double(), v.double(), d(m4), d(sinks))
    err = (lib64 - out64).abs().max().item()
    if not err <= 1e-10:
        raise SystemExit(f"modern_gen: {c['name']}: {'flex_attention' if uses_flex(c) else 'SDPA'} float64 differs from the formula by {err}")
    out32 = library_attention(c, q, k, v, m4, sinks)
    tensors = {"query": q, "key": k, "value": v, "out64": out64, "out32": out32}
    inputs = {"query": q, "key": k, "value": v}
    if mask is not None:
        tensors["attn_mask"] = mask
        inputs["attn_mask"] = mask
    if sinks is not None:
        tensors["sinks"] = sinks
    cfg = dict(c, kind="attention", seed=seed, path="flex_attention" if uses_flex(c) else "scaled_dot_product_attention")
    meta = {"config": json.dumps(cfg), "torch": torch.__version__}
    stio.save(os.path.join(out_dir, f"modern_{c['name']}.safetensors"), tensors, meta)
    if sinks is None and inputs_files:
        stio.save(os.path.join(out_dir, f"modern_{c['name']}.inputs.safetensors"), inputs, meta)


# ---- RoPE ----------------------------------------------------------------------------------


def rope_cases():
    out = []
    for conv in ("half", "interleaved"):
        for theta, rd, offset in ((10000.0, 8, 0), (100000.0, 8, 37), (500000.0, 4, 1000)):
            out.append(dict(name=f"rope_{conv}_{int(theta)}_rd{rd}_off{offset}", convention=conv, theta=theta, rotary_dims=rd, offset=offset))
    return out


def run_rope(c, seed, out_dir):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, 5, 10, generator=gen, dtype=torch.float32)
    out64 = rope(x.double(), c["convention"], c["theta"], c["rotary_dims"], c["offset"])
    out32 = rope(x, c["convention"], c["theta"], c["rotary_dims"], c["offset"])
    # Cross-check: interleaved = half-split on features permuted (2k, 2k+1) -> (k, k + rd/2).
    rd = c["rotary_dims"]
    perm = list(range(0, rd, 2)) + list(range(1, rd, 2)) + list(range(rd, 10))
    other = "half" if c["convention"] == "interleaved" else "interleaved"
    if c["convention"] == "interleaved":
        err = (out64[..., perm] - rope(x.double()[..., perm], other, c["theta"], rd, c["offset"])).abs().max().item()
    else:
        inv = [perm.index(i) for i in range(10)]
        err = (out64[..., perm][..., inv] - rope(x.double()[..., inv], other, c["theta"], rd, c["offset"])[..., perm]).abs().max().item()
    if not err <= 1e-12:
        raise SystemExit(f"modern_gen: {c['name']}: the two RoPE formulations disagree by {err}")
    meta = {"config": json.dumps(dict(c, kind="rope", seed=seed)), "torch": torch.__version__}
    stio.save(os.path.join(out_dir, f"modern_{c['name']}.safetensors"), {"x": x, "out64": out64, "out32": out32}, meta)


# ---- MLA -----------------------------------------------------------------------------------


class PaperMLA(torch.nn.Module):
    """DeepSeek-V2 (arXiv 2405.04434) equations (9)-(19), explicit form; no bias anywhere."""

    def __init__(self, E, H, dh, dr, dv, dc, dcq, theta):
        super().__init__()
        self.H, self.dh, self.dr, self.dv, self.dc, self.theta = H, dh, dr, dv, dc, theta
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)  # noqa: E731
        qin = dcq or E
        self.W_DQ = lin(E, dcq) if dcq else None
        self.W_UQ, self.W_QR = lin(qin, H * dh), lin(qin, H * dr)
        self.W_DKV, self.W_KR = lin(E, dc), lin(E, dr)
        self.W_UK, self.W_UV = lin(dc, H * dh), lin(dc, H * dv)
        self.W_O = lin(H * dv, E)

    def heads(self, x, d):  # [B, L, H*d] -> [B, H, L, d]
        B, L, _ = x.shape
        return x.view(B, L, -1, d).transpose(1, 2)

    def parts(self, x):
        cq = self.W_DQ(x) if self.W_DQ is not None else x
        c_kv = self.W_DKV(x)  # [B, L, dc]
        k_r = rope_half(self.W_KR(x).unsqueeze(1), self.theta, self.dr, 0)  # [B, 1, L, dr]
        q_c = self.heads(self.W_UQ(cq), self.dh)
        q_r = rope_half(self.heads(self.W_QR(cq), self.dr), self.theta, self.dr, 0)
        return c_kv, k_r, q_c, q_r

    def forward(self, x, causal):
        c_kv, k_r, q_c, q_r = self.parts(x)
        k_c, v_c = self.heads(self.W_UK(c_kv), self.dh), self.heads(self.W_UV(c_kv), self.dv)
        q = torch.cat((q_c, q_r), -1)
        k = torch.cat((k_c, k_r.expand(-1, self.H, -1, -1)), -1)
        o = F.scaled_dot_product_attention(q, k, v_c, is_causal=causal, scale=1 / math.sqrt(self.dh + self.dr))
        return self.W_O(o.transpose(1, 2).flatten(2))

    def absorbed(self, x, causal):
        c_kv, k_r, q_c, q_r = self.parts(x)
        W_UK = self.W_UK.weight.view(self.H, self.dh, self.dc)
        W_UV = self.W_UV.weight.view(self.H, self.dv, self.dc)
        q_t = torch.einsum("bhld,hdc->bhlc", q_c, W_UK)
        s = (q_t @ c_kv.unsqueeze(1).transpose(-1, -2) + q_r @ k_r.transpose(-1, -2)) / math.sqrt(self.dh + self.dr)
        if causal:
            L = x.shape[1]
            s = s.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
        ctx = torch.softmax(s, -1) @ c_kv.unsqueeze(1)  # [B, H, L, dc]
        o = torch.einsum("bhlc,hvc->bhlv", ctx, W_UV)
        return self.W_O(o.transpose(1, 2).flatten(2))


def mla_cases():
    return [dict(name="mla", E=16, H=4, dh=8, dr=4, dv=6, dc=12, dcq=0, causal=True, theta=10000.0),
            dict(name="mla_qlora", E=16, H=2, dh=6, dr=2, dv=5, dc=8, dcq=10, causal=False, theta=10000.0)]


def run_mla(c, seed, out_dir):
    torch.manual_seed(seed)
    m = PaperMLA(c["E"], c["H"], c["dh"], c["dr"], c["dv"], c["dc"], c["dcq"], c["theta"])
    x = torch.randn(2, 7, c["E"], dtype=torch.float32)
    out32 = m(x, c["causal"])
    m64 = m.double()
    out64 = m64(x.double(), c["causal"])
    err = (m64.absorbed(x.double(), c["causal"]) - out64).abs().max().item()
    if not err <= 1e-12:
        raise SystemExit(f"modern_gen: {c['name']}: absorbed MLA differs from explicit by {err}")
    tensors = {"x": x, "out64": out64, "out32": out32}
    names = {"W_DQ": "q_down", "W_UQ": "q_up", "W_QR": "q_rope", "W_DKV": "kv_down", "W_KR": "k_rope", "W_UK": "k_up", "W_UV": "v_up", "W_O": "out"}
    for attr, scope in names.items():
        lin = getattr(m, attr)
        if lin is not None:
            tensors[scope + ".weight"] = lin.weight.float()
    meta = {"config": json.dumps(dict(c, kind="mla", seed=seed)), "torch": torch.__version__}
    stio.save(os.path.join(out_dir, f"modern_{c['name']}.safetensors"), tensors, meta)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--fixtures", action="store_true", help="the fixed cases (attention, RoPE, MLA)")
    ap.add_argument("--random", type=int, default=0, help="random attention configurations")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", default="", help="only these attention or RoPE cases (comma-separated names)")
    ap.add_argument("--no-inputs-files", action="store_true", help="do not write the <case>.inputs.safetensors files of mhalab sdpa")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(1)
    n = 0
    if a.cases:
        wanted = a.cases.split(",")
        for i, c in enumerate(attention_cases()):
            if c["name"] in wanted:
                run_attention(c, 1000 + i, a.out, not a.no_inputs_files)
                n += 1
        for i, c in enumerate(rope_cases()):
            if c["name"] in wanted:
                run_rope(c, 2000 + i, a.out)
                n += 1
    if a.fixtures:
        for i, c in enumerate(attention_cases()):
            run_attention(c, 1000 + i, a.out)
            n += 1
        for i, c in enumerate(rope_cases()):
            run_rope(c, 2000 + i, a.out)
            n += 1
        for i, c in enumerate(mla_cases()):
            run_mla(c, 3000 + i, a.out)
            n += 1
    if a.random:
        print(f"modern_gen: {a.random} random configurations from seed {a.seed} "
              f"(replay: python parity/modern_gen.py --out DIR --random {a.random} --seed {a.seed})")
        for c in random_cases(a.random, a.seed):
            run_attention(c, a.seed, a.out)
            n += 1
    print(f"modern_gen: {n} cases written to {a.out} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
