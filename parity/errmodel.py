"""A first-order floating-point error bound for every result of a parity case, computed in float64.

The float64 reference (gen.py) gives the exact result of the computation up to ~1e-16. This module
runs the same PyTorch code once more in float64, forward and backward, under a TorchDispatchMode
(ErrorBound) that carries two extra float64 tensors next to every intermediate value x:

  M(x) >= |x|   the magnitude of x: the computation evaluated on absolute values (the "abs circuit":
                |A| @ |B| for a product, |a| + |b| for a sum, ...), as the rounding errors of a
                float32 evaluation scale with it;
  E(x)          a bound, in units of u = 2^-24 (float32's unit roundoff), on |fl32(x) - x| to first
                order in u: the error a float32 evaluation of the same mathematical operations makes,
                in any order of summation, with or without fused multiply-add.

Every operation propagates the errors of its operands through its derivative and adds its own
rounding error (Higham, Accuracy and Stability of Numerical Algorithms, ch. 3: a sum of n terms or
a dot product of length n, in any order, with or without FMA, errs by at most gamma_n * sum|terms|,
gamma_n = n u / (1 - n u)):

  A @ B (length n)      M = M_A @ M_B            E = E_A @ M_B + M_A @ E_B + n M
  C + A @ B (addmm)     M = M_C + M_A @ M_B      E = E_C + E_A @ M_B + M_A @ E_B + (n + 1) M_A @ M_B + n M_C
  a + b, a - b          M = M_a + M_b            E = E_a + E_b + M
  a * b                 M = M_a M_b              E = E_a M_b + M_a E_b + M        (0 for a power of 2)
  a / b                 M = M_a / |b|            E = E_a / |b| + M_a E_b / b^2 + M
  sum of n              M = sum M                E = sum E + (n - 1) M
  exp, rsqrt, ...       M = |f(x)|               E = |f'(x)| E_x + C_FN M  (C_FN: the function's ulps)
  softmax w (dim n)     M = w                    E = w (E_s + sum w E_s) + w (|s - max| + sum w |s - max|)
                                                     + w (4 C_EXP + n)
  softmax backward      d = w (g - sum g w)      M = w (M_g + sum M_g w)
                                                 E = E_w (M_g + sum M_g w) + w (E_g + sum (E_g w + M_g E_w))
                                                     + w (M_g + (n + 1) sum M_g w) + M
  views, copies, cat, padding, masking: the same operation on M and E (a constant written in: E = 0)

The softmax rules: w = exp(s - max) / sum exp(s - max); an error d_s of the logits moves w by
w (d_s - sum w d_s) (bounded by w (|d_s| + sum w |d_s|)); the subtraction s - max rounds by
u |s - max|, which exp turns into a relative error of w's numerator and denominator; exp itself
errs by C_EXP ulps (2 C_EXP u relative) in the numerator and in every term of the denominator
(4 C_EXP u in all), the sum of n positive terms by (n - 1) u relative, the division by u (IEEE
division, correctly rounded, on both backends). Entries that are infinite (-inf of a mask) or whose weight is exactly 0 carry no
error: M = E = 0.

The bound of a result r is u * E(r) (gen.py stores it as bound.<r>, float32 rounded up); the
comparison (reference.go) adds an absolute floor for underflow. It is a bound for ANY float32
evaluation of the same mathematical operations: M is an abs circuit and the n of each sum is its
length, whatever the order or the fusing, so it holds for mhalib's graph on every backend as
long as mhalib computes the same formula (parity/README.md lists where mhalib's order differs from
PyTorch's and why the bound still holds).
"""

import math

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

U = 2.0 ** -24  # float32 unit roundoff (round to nearest)
C_EXP = 4.0  # ulps of float32 exp (XLA's polynomial, Go's math.Exp rounded): relative error <= 2 C_EXP u
C_RSQRT = 4.0  # ulps of float32 rsqrt / sqrt / reciprocal

aten = torch.ops.aten

# Operations that only move, copy or select values: applied as they are to M and E.
STRUCTURAL = {
    aten._unsafe_view.default, aten.view.default, aten.reshape.default, aten.t.default,
    aten.transpose.int, aten.permute.default, aten.expand.default, aten.unsqueeze.default,
    aten.squeeze.dim, aten.squeeze.default, aten.squeeze.dims, aten.select.int, aten.slice.Tensor,
    aten.split.Tensor, aten.split_with_sizes.default, aten.chunk.default, aten.unbind.int,
    aten.cat.default, aten.stack.default, aten.clone.default, aten.detach.default, aten.alias.default,
    aten.repeat.default, aten.tril.default, aten.triu.default, aten.select_backward.default,
    aten.slice_backward.default, aten.contiguous.default, aten._to_copy.default, aten.lift_fresh.default,
    aten.narrow.default, aten.flip.default, aten.index_select.default, aten.expand_copy.default,
    aten.view_copy.default, aten.to.dtype, aten.to.dtype_layout, aten.to.other, aten.to.device,
    aten.squeeze.dims, aten.permute_copy.default, aten.transpose_copy.int, aten.t_copy.default,
    aten.unsqueeze_copy.default, aten.squeeze_copy.dim, aten.split_with_sizes_copy.default,
}
# Operations that create values exactly (E = 0, M = |value|).
CREATE = {
    aten.zeros.default, aten.ones.default, aten.full.default, aten.empty.memory_format,
    aten.zeros_like.default, aten.ones_like.default, aten.full_like.default, aten.empty_like.default,
    aten.new_empty_strided.default, aten.new_zeros.default, aten.new_ones.default, aten.new_full.default,
    aten.new_empty.default, aten.scalar_tensor.default, aten.empty_strided.default, aten.arange.default,
    aten.arange.start, aten.arange.start_step,
}


def _key(t):
    return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


def _pow2(x):
    """Whether a Python number is 0 or ± a power of two (multiplying by it is exact)."""
    if x == 0:
        return True
    m, _ = math.frexp(abs(float(x)))
    return m == 0.5


def _tracked(t):
    return isinstance(t, torch.Tensor) and t.is_floating_point()


class ErrorBound(TorchDispatchMode):
    """Runs float64 code while computing M and E (module doc) for every floating-point tensor.

    me(t) returns (M, E) of a tensor computed under the mode (or of an input: M = |t|, E = 0: the
    inputs and parameters are float32 values, exact). Tensors are recognised by their storage,
    offset, shape and stride; every tensor made under the mode is kept alive until the mode is
    dropped, so no storage is reused while it runs.
    """

    def __init__(self):
        super().__init__()
        self.table = {}
        self.keep = []

    def me(self, t):
        if not _tracked(t):
            raise TypeError(f"ErrorBound: not a floating-point tensor: {t!r}")
        got = self.table.get(_key(t))
        mag = t.detach().abs()
        if got is not None:
            return mag, got[1]
        return mag, torch.zeros_like(t)

    def _set(self, t, m, e):
        """Records E of t (m, the rule's magnitude, is not kept: me() takes |t|)."""
        e = torch.where(torch.isfinite(t) & torch.isfinite(e), e, 0.0)
        self.table[_key(t)] = (None, e)
        self.keep += [t, e]

    def _E(self, x):
        return self.me(x)[1] if _tracked(x) else x

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        outs, _ = tree_flatten(out)
        if not any(_tracked(o) for o in outs):
            return out
        rule = RULES.get(func)
        if rule is not None:
            m, e = rule(self, out, *args, **kwargs)
            self._set(out if isinstance(out, torch.Tensor) else outs[0], m, e)  # rules set further outputs
        elif func in STRUCTURAL:
            e = func(*tree_map(self._E, args), **kwargs)
            for o, eo in zip(outs, tree_flatten(e)[0]):
                if _tracked(o):
                    self._set(o, None, eo)
        elif func in CREATE:
            for o in outs:
                if _tracked(o):
                    self._set(o, None, torch.zeros_like(o))
        elif func == aten.copy_.default:  # dst.copy_(src): dst takes src's M and E
            dst, src = args[0], args[1]
            es = self.me(src)[1] if _tracked(src) else torch.zeros_like(src, dtype=dst.dtype)
            self._set(dst, None, es.expand_as(dst).clone())
        else:
            raise NotImplementedError(f"ErrorBound: no error rule for {func}")
        return out


def _n(x, dims):
    """The number of terms summed over dims (all when dims is None or empty)."""
    if not dims:
        return x.numel()
    return math.prod(x.shape[d] for d in dims)


def _mm(eb, out, a, b):
    ma, ea = eb.me(a)
    mb, eb_ = eb.me(b)
    m = ma @ mb
    return m, ea @ mb + ma @ eb_ + a.shape[-1] * m


def _addmm(eb, out, c, a, b, beta=1, alpha=1):
    ma, ea = eb.me(a)
    mb, eb_ = eb.me(b)
    mc, ec = eb.me(c)
    prod = ma @ mb
    m = abs(beta) * mc + abs(alpha) * prod
    # A sum of n + 1 terms (C and the n products), in any order (C may start the accumulation, as in
    # BLAS with beta = 1, or be added last, as mhalib does): n roundings of partial sums bounded by
    # |C| + sum |products|, and the products' own roundings (none with FMA).
    n = a.shape[-1]
    e = abs(beta) * ec + abs(alpha) * (ea @ mb + ma @ eb_) + (n + 1) * abs(alpha) * prod + n * abs(beta) * mc
    if not _pow2(alpha):
        e = e + abs(alpha) * prod
    if not _pow2(beta):
        e = e + abs(beta) * mc
    return m, e


def _operand(eb, x):
    if _tracked(x):
        return eb.me(x)
    return torch.tensor(abs(float(x)), dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64)


def _add(eb, out, a, b, alpha=1):
    ma, ea = _operand(eb, a)
    mb, eb_ = _operand(eb, b)
    m = ma + abs(alpha) * mb
    e = ea + abs(alpha) * eb_ + m
    if not _pow2(alpha):
        e = e + abs(alpha) * mb
    return m.expand_as(out), e.expand_as(out)


def _mul(eb, out, a, b):
    ma, ea = _operand(eb, a)
    mb, eb_ = _operand(eb, b)
    m = ma * mb
    e = ea * mb + ma * eb_
    exact = (not _tracked(b) and _pow2(b)) or (not _tracked(a) and _pow2(a))
    if not exact:
        e = e + m
    return m.expand_as(out), e.expand_as(out)


def _div(eb, out, a, b):
    ma, ea = _operand(eb, a)
    if _tracked(b):
        mb, eb_ = eb.me(b)
        absb = b.detach().abs()
        m = ma / absb
        e = ea / absb + ma * eb_ / absb ** 2 + m
    else:
        m = ma / abs(float(b))
        e = ea / abs(float(b)) + (0 if _pow2(b) else m)
    return m.expand_as(out), e.expand_as(out)


def _neg(eb, out, a):
    return eb.me(a)


def _sum(eb, out, x, dims=None, keepdim=False, dtype=None):
    mx, ex = eb.me(x)
    n = _n(x, dims)
    if not dims:
        m, e = mx.sum(), ex.sum()
        if keepdim:
            m, e = m.reshape(out.shape), e.reshape(out.shape)
    else:
        m, e = mx.sum(dims, keepdim=keepdim), ex.sum(dims, keepdim=keepdim)
    return m, e + (n - 1) * m


def _mean(eb, out, x, dims=None, keepdim=False, dtype=None):
    m, e = _sum(eb, out, x, dims, keepdim)
    n = _n(x, dims)
    m, e = m / n, e / n
    if not _pow2(n):
        e = e + m
    return m, e


def _unary(deriv, ulps):
    def rule(eb, out, x, *rest, **kw):
        mx, ex = eb.me(x)
        m = out.detach().abs()
        return m, deriv(x.detach(), out.detach()).abs() * ex + 2 * ulps * m
    return rule


def _pow_scalar(eb, out, x, p):
    mx, ex = eb.me(x)
    if p == 2:
        m = mx * mx
        return m, 2 * mx * ex + m
    m = out.detach().abs()
    xv = x.detach()
    return m, (p * xv.abs() ** (p - 1)) * ex + 2 * C_RSQRT * m


def _softmax(eb, out, s, dim, *rest):
    _, es = eb.me(s)
    w = out.detach()
    live = w > 0
    sv = s.detach()
    finite = torch.isfinite(sv)
    mx = torch.where(finite, sv, torch.full_like(sv, -math.inf)).amax(dim, keepdim=True)
    d = torch.where(live, (sv - mx).abs(), torch.zeros_like(sv))
    es = torch.where(live, es, torch.zeros_like(es))
    n = s.shape[dim]
    e = w * (es + (w * es).sum(dim, keepdim=True)) + w * (d + (w * d).sum(dim, keepdim=True)) + w * (4 * C_EXP + n)
    return w.abs(), e


def _softmax_backward(eb, out, g, w, dim, *rest):
    mg, eg = eb.me(g)
    mw, ew = eb.me(w)
    wv = w.detach()
    n = g.shape[dim]
    sg = (mg * wv).sum(dim, keepdim=True)  # sum M_g w
    m = wv * (mg + sg)
    e = (ew * (mg + sg) + wv * (eg + (eg * wv + mg * ew).sum(dim, keepdim=True))
         + wv * (mg + (n + 1) * sg) + m)
    return m, e


def _masked_fill(eb, out, x, mask, value):
    mx, ex = eb.me(x)
    v = abs(float(value))
    return mx.masked_fill(mask, v if math.isfinite(v) else 0.0), ex.masked_fill(mask, 0.0)


def _where(eb, out, cond, a, b):
    ma, ea = _operand(eb, a)
    mb, eb_ = _operand(eb, b)
    return torch.where(cond, ma, mb).expand_as(out), torch.where(cond, ea, eb_).expand_as(out)


def _pad(eb, out, x, pad, value=0.0):
    mx, ex = eb.me(x)
    v = abs(float(value))
    return (aten.constant_pad_nd.default(mx, pad, v if math.isfinite(v) else 0.0),
            aten.constant_pad_nd.default(ex, pad, 0.0))


def _var_mean(eb, out, x, dims=None, *, correction=1, keepdim=False):
    # Two passes: mean mu, then sum (x - mu)^2 / (n - correction).
    var, mean = out
    mx, ex = eb.me(x)
    n = _n(x, dims)
    dims = dims or list(range(x.dim()))
    mmu = mx.mean(dims, keepdim=True)
    emu = ex.mean(dims, keepdim=True) + n * mmu
    md = mx + mmu
    ed = ex + emu + md
    k = max(n - (correction if correction is not None else 1), 1)
    mvar = (md * md).sum(dims, keepdim=keepdim) / k
    evar = (2 * md * ed).sum(dims, keepdim=keepdim) / k + (n + 1) * mvar
    eb._set(mean, mmu if keepdim else mmu.squeeze(dims), emu if keepdim else emu.squeeze(dims))
    return mvar, evar


def _decomposed(func):
    """An operation without a rule of its own, computed by PyTorch's decomposition of it into
    operations that have one (layer norm and its backward); M and E follow from those."""
    from torch._decomp import decomposition_table
    decomp = decomposition_table[func]

    def rule(eb, out, *args, **kwargs):
        with eb:
            again = decomp(*args, **kwargs)
        pairs = []
        for o, a in zip(tree_flatten(out)[0], tree_flatten(again)[0]):
            if _tracked(o):
                ma, ea = eb.me(a)
                pairs.append((o, ma, ea))
        for o, ma, ea in pairs[1:]:
            eb._set(o, ma, ea)
        return pairs[0][1], pairs[0][2]
    return rule


RULES = {
    aten.mm.default: _mm,
    aten.bmm.default: _mm,
    aten.matmul.default: _mm,
    aten.addmm.default: _addmm,
    aten.baddbmm.default: _addmm,
    aten.add.Tensor: _add,
    aten.add.Scalar: _add,
    aten.sub.Tensor: _add,
    aten.sub.Scalar: _add,
    aten.rsub.Scalar: lambda eb, out, a, b, alpha=1: _add(eb, out, a, b, alpha),
    aten.mul.Tensor: _mul,
    aten.mul.Scalar: _mul,
    aten.div.Tensor: _div,
    aten.div.Scalar: _div,
    aten.neg.default: _neg,
    aten.sum.default: lambda eb, out, x, dtype=None: _sum(eb, out, x),
    aten.sum.dim_IntList: _sum,
    aten.mean.dim: _mean,
    aten.mean.default: lambda eb, out, x, dtype=None: _mean(eb, out, x),
    aten.exp.default: _unary(lambda x, y: y, C_EXP),
    aten.rsqrt.default: _unary(lambda x, y: -0.5 * y / x, C_RSQRT),
    aten.sqrt.default: _unary(lambda x, y: 0.5 / y, C_RSQRT),
    aten.reciprocal.default: _unary(lambda x, y: -y * y, C_RSQRT),
    aten.pow.Tensor_Scalar: _pow_scalar,
    aten._softmax.default: _softmax,
    aten._safe_softmax.default: _softmax,
    aten._softmax_backward_data.default: _softmax_backward,
    aten.masked_fill.Scalar: _masked_fill,
    aten.masked_fill_.Scalar: _masked_fill,
    aten.where.self: _where,
    aten.constant_pad_nd.default: _pad,
    aten.var_mean.correction: _var_mean,
    aten.var_mean.dim: lambda eb, out, x, dims=None, unbiased=True, keepdim=False: _var_mean(
        eb, out, x, dims, correction=1 if unbiased else 0, keepdim=keepdim),
    aten.native_layer_norm.default: _decomposed(aten.native_layer_norm.default),
    aten.native_layer_norm_backward.default: _decomposed(aten.native_layer_norm_backward.default),
}
