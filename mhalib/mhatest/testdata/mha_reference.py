#!/usr/bin/env python3
# Run: python3 mhalib/mhatest/testdata/mha_reference.py  (standard library only)
# Prints the numbers hard-coded in TestMHAReferenceNumbers.
# Independent plain-Python re-implementation of F.multi_head_attention_forward
# (sequence-first, view(L, B*h, hd) layout, masks canonicalised to float then padded).
import math
E, h, B, Lq, Lk = 4, 2, 2, 2, 3
hd = E // h
def W(rows, cols, a, c): return [[((o*a + i*c) % 11 - 5) / 10 for i in range(cols)] for o in range(rows)]
def vec(n, a): return [((o*a) % 5 - 2) / 10 for o in range(n)]
def X(Bn, L, a): return [[[((l*5 + e*a + b*3) % 7 - 3) / 4 for e in range(E)] for l in range(L)] for b in range(Bn)]
Wq, Wk, Wv, Wo = W(E,E,7,3), W(E,E,5,2), W(E,E,3,4), W(E,E,2,5)
bq, bk, bv, bo = vec(E,1), vec(E,2), vec(E,3), vec(E,4)
biask, biasv = [0.3,-0.2,0.1,0.5], [-0.4,0.25,0.6,-0.1]
query, key, value = X(B,Lq,2), X(B,Lk,3), X(B,Lk,1)
def lin(x, w, b): return [sum(x[i]*w[o][i] for i in range(len(x))) + (b[o] if b else 0) for o in range(len(w))]
def mha(add_bias_kv, add_zero_attn, attn_mask3, kpm):
    # seq-first: q[l][b][E]
    q = [[lin(query[b][l], Wq, bq) for b in range(B)] for l in range(Lq)]
    k = [[lin(key[b][l], Wk, bk) for b in range(B)] for l in range(Lk)]
    v = [[lin(value[b][l], Wv, bv) for b in range(B)] for l in range(Lk)]
    NEG = float('-inf')
    am = None if attn_mask3 is None else [[[NEG if attn_mask3[n][i][j] else 0.0 for j in range(Lk)] for i in range(Lq)] for n in range(B*h)]
    kp = None if kpm is None else [[NEG if kpm[b][j] else 0.0 for j in range(Lk)] for b in range(B)]
    if add_bias_kv:
        k.append([biask[:] for b in range(B)]); v.append([biasv[:] for b in range(B)])
        if am: am = [[row + [0.0] for row in m] for m in am]
        if kp: kp = [row + [0.0] for row in kp]
    S = len(k)
    # view(L, B*h, hd).transpose(0,1): head index n = b*h + head
    qh = [[[q[l][n//h][(n%h)*hd + d] for d in range(hd)] for l in range(Lq)] for n in range(B*h)]
    kh = [[[k[l][n//h][(n%h)*hd + d] for d in range(hd)] for l in range(S)] for n in range(B*h)]
    vh = [[[v[l][n//h][(n%h)*hd + d] for d in range(hd)] for l in range(S)] for n in range(B*h)]
    if add_zero_attn:
        for n in range(B*h): kh[n].append([0.0]*hd); vh[n].append([0.0]*hd)
        if am: am = [[row + [0.0] for row in m] for m in am]
        if kp: kp = [row + [0.0] for row in kp]
        S += 1
    mask = [[[0.0]*S for i in range(Lq)] for n in range(B*h)]
    for n in range(B*h):
        for i in range(Lq):
            for j in range(S):
                if am: mask[n][i][j] += am[n][i][j]
                if kp: mask[n][i][j] += kp[n//h][j]
    wts = []; outh = []
    for n in range(B*h):
        wn = []; on = []
        for i in range(Lq):
            logits = [sum(qh[n][i][d]/math.sqrt(hd) * kh[n][j][d] for d in range(hd)) + mask[n][i][j] for j in range(S)]
            mx = max(logits); ex = [math.exp(x - mx) for x in logits]; s = sum(ex)
            w = [x/s for x in ex]; wn.append(w)
            on.append([sum(w[j]*vh[n][j][d] for j in range(S)) for d in range(hd)])
        wts.append(wn); outh.append(on)
    out = [[lin([outh[b*h + (e//hd)][l][e%hd] for e in range(E)], Wo, bo) for l in range(Lq)] for b in range(B)]
    return out, wts
out, w = mha(False, False, None, None)
print("plain out[0][1][2]=%r out[1][0][0]=%r out[1][1][3]=%r w[b=1,h=1,0,2]=%r" % (out[0][1][2], out[1][0][0], out[1][1][3], w[3][0][2]))
am3 = [[[ (n + i + j) % 4 == 0 for j in range(Lk)] for i in range(Lq)] for n in range(B*h)]
kpm = [[False, False, True], [True, False, False]]
out, w = mha(True, True, am3, kpm)
print("masked out[0][0][1]=%r out[1][1][2]=%r w[b=1,h=0,1,:]=%r w[b=0,h=1,0,:]=%r" % (out[0][0][1], out[1][1][2], w[2][1], w[1][0]))
