#!/usr/bin/env python3
"""Lists the functions of a Go binary that run legacy-SSE instructions, or return, while the upper
halves of the vector registers may be dirty (no VZEROUPPER since the last 256/512-bit instruction):
a linear scan of objdump's listing of each function, so a jump can make it report a path that
never runs; read the listing before changing code (fastgo/doc.go, "Clean upper halves").

    GOEXPERIMENT=simd go build -o /tmp/mhalab ./cmd/mhalab
    scripts/sse_audit.py /tmp/mhalab [name-substring, default fastgo]
"""
import re, subprocess, sys
binary, pat = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else 'fastgo')
asm = subprocess.run(['objdump', '-d', '--no-show-raw-insn', binary], capture_output=True, text=True).stdout
fn = None; dirty = False; rep = {}
legacy = re.compile(r'^(movups|movaps|movss|movsd|addss|subss|mulss|divss|addsd|subsd|mulsd|divsd|xorps|xorpd|andps|andnps|orps|movd|movq|cvtss2sd|cvtsd2ss|cvtsi2ss|cvtsi2sd|cvttss2si|cvttsd2si|ucomiss|ucomisd|maxss|minss|maxsd|minsd|sqrtss|sqrtsd|pxor|movdqu|movdqa|movhps|movlps|unpcklps|shufps|pshufd|roundss|roundsd)$')
for line in asm.splitlines():
    m = re.match(r'^[0-9a-f]+ <(.*)>:$', line)
    if m:
        fn = m.group(1); dirty = False; continue
    if fn is None or pat not in fn: continue
    parts = line.split('\t')
    if len(parts) < 2: continue
    ins = parts[1].strip().split()
    if not ins: continue
    op = ins[0]; args = ' '.join(ins[1:])
    if op == 'vzeroupper' or op == 'vzeroall':
        dirty = False; continue
    if ('%ymm' in args or '%zmm' in args) and op.startswith('v'):
        dirty = True; continue
    if dirty and (legacy.match(op) and '%xmm' in args):
        r = rep.setdefault(fn, [0, 0]); r[0] += 1
    if dirty and op.startswith('ret'):
        r = rep.setdefault(fn, [0, 0]); r[1] += 1
for f, (n, r) in sorted(rep.items(), key=lambda kv: -kv[1][0]):
    print(f'{n:4d} legacy-SSE while dirty, {r} dirty returns: {f}')
