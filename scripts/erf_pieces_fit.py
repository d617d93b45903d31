#!/usr/bin/env python3
"""Fits the coefficients of fastgo's AVX-512 erf (fastgo/erf_pieces.go) and prints them as Go.

For a = |x| in [0, 4] cut into 4 pieces [i, i+1], R(a) = erf(a)/a (even and smooth, 2/sqrt(pi) at
0) is approximated on piece i by a polynomial of degree 16 in u = a - (i + 1/2), |u| <= 1/2,
interpolating R at the 17 Chebyshev nodes of the piece, computed with mpmath at 40 digits and solved
exactly before rounding each coefficient to float64. The script prints the largest relative error
of the rounded polynomials against mpmath on 2001 points of each piece (about 7e-17: the
coefficients' own rounding; degree 15 gives 8e-16, 14 gives 6e-15).

Run with a Python that has numpy and mpmath (scripts/setup.sh's PyTorch venv has both):
    ~/.cache/mhalab/torch-venv/bin/python scripts/erf_pieces_fit.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
PIECES, WIDTH, DEG = 4, 1.0, 16


def r(a):
    a = mp.mpf(a)
    return 2 / mp.sqrt(mp.pi) if a == 0 else mp.erf(a) / a


n = DEG + 1
coefs = []  # coefs[i][k]: piece i, u**k
worst = 0.0
for i in range(PIECES):
    lo, hi = i * WIDTH, (i + 1) * WIDTH
    c = (lo + hi) / 2
    nodes = [c + WIDTH / 2 * float(np.cos(np.pi * (j + 0.5) / n)) for j in range(n)]
    v = mp.matrix([[(mp.mpf(x) - c) ** k for k in range(n)] for x in nodes])
    sol = mp.lu_solve(v, mp.matrix([r(x) for x in nodes]))
    cf = [float(sol[k]) for k in range(n)]
    coefs.append(cf)
    for x in np.linspace(lo, hi, 2001):
        u = mp.mpf(float(x)) - c
        p = mp.mpf(0)
        for k in reversed(range(n)):
            p = p * u + mp.mpf(cf[k])
        ref = r(float(x))
        worst = max(worst, float(abs((p - ref) / ref)))
print(f"// max relative error of the rounded coefficients on [0, 4]: {worst:.2e}")
print(f"var erfPieces = [{n}][{PIECES}]float64{{")
for k in range(n):
    print("\t{" + ", ".join(repr(coefs[i][k]) for i in range(PIECES)) + "},")
print("}")
