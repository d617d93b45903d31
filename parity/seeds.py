"""The three seed posts' attention modules, re-created in PyTorch as the posts write them.

The posts themselves are not in this repository; these are faithful, idiomatic re-creations of what they
describe, kept close to the originals' structure (not to nn.MultiheadAttention's), so that the parity
run checks mhalib against the code a reader of each post actually has in front of them.

Each module comes with `to_mha(...)`, which maps its parameters (or their gradients: the map is linear)
to the PyTorch nn.MultiheadAttention state_dict names that mhalib uses (see torchio and mhalib's
LoadStateDict), e.g. seed 000's four nn.Linear become q_proj_weight/k_proj_weight/v_proj_weight,
in_proj_bias (the three biases concatenated) and out_proj.weight/out_proj.bias.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# --- Seed 000: "Attention is all you need"-style MultiHeadAttention -------------------------------


class Seed000MultiHeadAttention(nn.Module):
    """Classic MHA: four nn.Linear (Xavier-uniform weights, zero bias), scores/√d_k,
    masked_fill(mask == 0, -1e9), softmax, weighted sum, output projection."""

    def __init__(self, h, d_model):
        super().__init__()
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        for lin in (self.w_q, self.w_k, self.w_v, self.w_o):
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)
        self.attn = None

    @staticmethod
    def attention(query, key, value, mask=None):
        d_k = query.size(-1)
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        p_attn = scores.softmax(dim=-1)
        return torch.matmul(p_attn, value), p_attn

    def forward(self, query, key, value, mask=None):
        # query: (B, Lq, d_model), key/value: (B, Lk, d_model); mask: 1 = attend, 0 = blocked,
        # (B, 1, Lk) for padding or (B, Lq, Lk) for subsequent masks.
        if mask is not None:
            mask = mask.unsqueeze(1)  # same mask for every head: (B, 1, 1|Lq, Lk)
        nbatches = query.size(0)
        # 1) linear projections, d_model => h x d_k
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip((self.w_q, self.w_k, self.w_v), (query, key, value))
        ]
        # 2) attention on all the projected vectors in batch
        x, self.attn = self.attention(query, key, value, mask=mask)
        # 3) "concat" using a view and apply a final linear
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.w_o(x)


def seed000_to_mha(t):
    """t: dict of Seed000MultiHeadAttention names (params or grads) -> nn.MultiheadAttention names."""
    return {
        "q_proj_weight": t["w_q.weight"],
        "k_proj_weight": t["w_k.weight"],
        "v_proj_weight": t["w_v.weight"],
        "in_proj_bias": torch.cat([t["w_q.bias"], t["w_k.bias"], t["w_v.bias"]]),
        "out_proj.weight": t["w_o.weight"],
        "out_proj.bias": t["w_o.bias"],
    }


# --- Seed 001: MHA with uneven heads -----------------------------------------------------------------


class Seed001UnevenMHA(nn.Module):
    """MHA whose model width is not a multiple of the head size: d_model 440 with head_dim 100 gives
    heads of 100, 100, 100, 100 and 40. The projections are split with torch.split (the last chunk is
    the remainder), each head is attended in a Python loop with its own scale 1/√(its size), and the
    heads are concatenated back to d_model.

    Nothing had to be changed to make it run: torch.split with an int chunk size is what yields the
    uneven last head, and the per-head loop never needs a .view(B, L, h, d) (440 is not 5 × 100).
    """

    def __init__(self, d_model=440, head_dim=100):
        super().__init__()
        self.d_model = d_model
        self.head_dim = head_dim
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)

    def head_sizes(self):
        return [c.numel() for c in torch.empty(self.d_model).split(self.head_dim)]

    def forward(self, x, mask=None):
        # x: (B, L, d_model); mask: (L, L) or (B, L, L), True/1 = attend
        q, k, v = self.q(x), self.k(x), self.v(x)
        heads = []
        for qh, kh, vh in zip(
            q.split(self.head_dim, dim=-1), k.split(self.head_dim, dim=-1), v.split(self.head_dim, dim=-1)
        ):
            scale = 1.0 / math.sqrt(qh.size(-1))  # per-head: 1/√100 for full heads, 1/√40 for the last
            scores = qh @ kh.transpose(-2, -1) * scale
            if mask is not None:
                scores = scores.masked_fill(mask == 0, float("-inf"))
            heads.append(scores.softmax(dim=-1) @ vh)
        return self.out(torch.cat(heads, dim=-1))


def seed001_to_mha(t):
    return {
        "q_proj_weight": t["q.weight"],
        "k_proj_weight": t["k.weight"],
        "v_proj_weight": t["v.weight"],
        "in_proj_bias": torch.cat([t["q.bias"], t["k.bias"], t["v.bias"]]),
        "out_proj.weight": t["out.weight"],
        "out_proj.bias": t["out.bias"],
    }


# --- Seed 003: MHSA with a fused qkv projection, and its pre-LN residual block ---------------------


class Seed003MHSA(nn.Module):
    """Multi-head self-attention with one fused Linear(d, 3d) for q, k, v, F.softmax with -inf masking
    and an output projection."""

    def __init__(self, d, n_heads):
        super().__init__()
        assert d % n_heads == 0
        self.n_heads = n_heads
        self.head_dim = d // n_heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x, mask=None):
        # x: (B, T, d); mask: (T, T) or (B, 1, T, T), True/1 = attend
        B, T, C = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # (B, nh, T, hd)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))  # (B, nh, T, T)
        if mask is not None:
            att = att.masked_fill(mask == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v  # (B, nh, T, hd)
        y = y.transpose(1, 2).reshape(B, T, C)  # re-assemble all head outputs side by side
        return self.proj(y)


class Seed003Block(nn.Module):
    """Pre-LN residual block: x + dropout(MHSA(LN(x)))."""

    def __init__(self, d, n_heads, dropout=0.0):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.attn = Seed003MHSA(d, n_heads)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        return x + self.drop(self.attn(self.ln(x), mask))


def seed003_to_mha(t, prefix=""):
    return {
        "in_proj_weight": t[prefix + "qkv.weight"],
        "in_proj_bias": t[prefix + "qkv.bias"],
        "out_proj.weight": t[prefix + "proj.weight"],
        "out_proj.bias": t[prefix + "proj.bias"],
    }


def seed003_block_to_mha(t):
    """Block names -> mhalib.PreLNBlock names: scope `norm` (weight, bias), scope `attn` (MHA names)."""
    out = {"norm.weight": t["ln.weight"], "norm.bias": t["ln.bias"]}
    for k, v in seed003_to_mha(t, prefix="attn.").items():
        out["attn." + k] = v
    return out
