"""Writes the fixtures of models/gguf's tests with the gguf Python package (0.19.0, pinned in
parity/requirements.txt); run with the torch venv's python (scripts/setup.sh --only torch,smollm2):

    ~/.cache/mhalab/torch-venv/bin/python models/gguf/gen_fixture.py [--model FILE]

testdata/synthetic.gguf + synthetic.json
    A small GGUF file written by gguf.GGUFWriter with every metadata value type (scalars,
    arrays of each, an array of arrays), alignment 64, and tensors F32, F16 (with ±0, ±Inf, NaN,
    subnormals), Q8_0, Q4_1 (quantised by gguf.quants) and Q4_0 (a type models/gguf does not
    dequantise). The JSON holds what the gguf package reads back: metadata, tensor infos and
    every tensor dequantised by gguf.quants.dequantize, as float32 bit patterns (exact).

testdata/smollm2_rows.json
    From the real SmolLM2-135M-Instruct.Q4_1.gguf (the setup step smollm2): the header
    summary and a few rows of tensors of each type (Q8_0 token_embd, Q4_1 attn_q/attn_k/ffn_down,
    F32 attn_norm), dequantised by gguf.quants.dequantize, as float32 bit patterns.
"""
import argparse
import json
import os

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGUFReader, GGUFValueType as V, GGUFWriter
from gguf.quants import dequantize, quantize

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODEL = os.path.join(
    os.environ.get("MHALAB_MODELS")
    or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mhalab", "models"),
    "smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf")


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).ravel().tolist()


def field_value(f):
    """What the gguf package reads for a metadata field, in JSON terms."""
    if f.types[0] != V.ARRAY:
        v = f.contents()
        if f.types[0] == V.FLOAT32:
            return {"type": f.types[0].name, "bits": bits(np.float32(v))[0]}
        return {"type": f.types[0].name, "value": v}
    return {"type": "ARRAY", "elem": f.types[1].name, "value": f.contents()}


def synthetic(out):
    rng = np.random.default_rng(20261130)
    path = os.path.join(out, "synthetic.gguf")
    w = GGUFWriter(path, "test")
    w.data_alignment = 64
    w.add_custom_alignment(64)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 0.1)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo <|im_start|>\n")
    w.add_uint64("t.u64", 18000000000000000000)
    w.add_int64("t.i64", -9000000000000000000)
    w.add_float64("t.f64", -2.5e-300)
    w.add_array("t.arr_str", ["a", "", "ünï", "Ġthe"])
    w.add_key_value("t.arr_u8", [0, 1, 255], V.ARRAY, V.UINT8)
    w.add_key_value("t.arr_i8", [-128, 0, 127], V.ARRAY, V.INT8)
    w.add_key_value("t.arr_u16", [0, 65535], V.ARRAY, V.UINT16)
    w.add_key_value("t.arr_i16", [-32768, 32767], V.ARRAY, V.INT16)
    w.add_key_value("t.arr_u32", [0, 4294967295], V.ARRAY, V.UINT32)
    w.add_key_value("t.arr_i32", [-2147483648, 2147483647, 5], V.ARRAY, V.INT32)
    w.add_key_value("t.arr_f32", [0.5, -1.25, 3.0e38], V.ARRAY, V.FLOAT32)
    w.add_key_value("t.arr_bool", [True, False, True], V.ARRAY, V.BOOL)
    w.add_key_value("t.arr_u64", [0, 18446744073709551615], V.ARRAY, V.UINT64)
    w.add_key_value("t.arr_i64", [-9223372036854775808, 9223372036854775807], V.ARRAY, V.INT64)
    w.add_key_value("t.arr_f64", [1e-300, -0.0], V.ARRAY, V.FLOAT64)
    w.add_key_value("t.arr_arr", [[1, 2], [3]], V.ARRAY, V.ARRAY)

    tensors = {}
    f32 = rng.standard_normal((3, 4)).astype(np.float32)
    w.add_tensor("f32", f32)
    f16 = (rng.standard_normal((2, 32)) * 3).astype(np.float16)
    f16[0, :8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 6e-8, -6e-5, 65504]
    w.add_tensor("f16", f16)
    for name, qt, shape in (("q8_0", T.Q8_0, (2, 64)), ("q4_1", T.Q4_1, (3, 32)), ("q4_0", T.Q4_0, (1, 32))):
        x = (rng.standard_normal(shape) * 0.1 + 0.02).astype(np.float32)
        q = quantize(x, qt)
        w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    r = GGUFReader(path)
    meta = {k: field_value(f) for k, f in r.fields.items() if not k.startswith("GGUF.")}
    # gguf's reader flattens an array of arrays ([1, 2, 3]); its raw parts hold the structure:
    # outer element type ARRAY, count 2, then {INT32, 2, 1, 2} and {INT32, 1, 3}.
    parts = [p.tolist() for p in r.fields["t.arr_arr"].parts[-9:]]
    assert parts == [[9], [2], [5], [2], [1], [2], [5], [1], [3]], parts
    meta["t.arr_arr"] = {"type": "ARRAY", "elem": "ARRAY", "inner": "INT32", "value": [[1, 2], [3]]}
    out_tensors = []
    for t in r.tensors:
        d = {"name": t.name, "type": t.tensor_type.name, "dims": [int(x) for x in t.shape],
             "data_offset": int(t.data_offset), "bytes": int(t.n_bytes)}
        if t.tensor_type != T.Q4_0:
            d["bits"] = bits(dequantize(t.data, t.tensor_type))
        out_tensors.append(d)
    with open(os.path.join(out, "synthetic.json"), "w") as f:
        json.dump({"file": "synthetic.gguf", "size": os.path.getsize(path), "alignment": 64,
                   "metadata": meta, "tensors": out_tensors}, f, indent=1)
        f.write("\n")


def real_rows(model, out):
    r = GGUFReader(model)
    want = {
        "token_embd.weight": [0, 1, 2, 100, 28, 49151],
        "blk.0.attn_q.weight": [0, 1, 2, 63, 64, 575],
        "blk.0.attn_k.weight": [0, 1, 32, 191],
        "blk.29.ffn_down.weight": [0, 575],
        "blk.0.attn_norm.weight": None,
        "output_norm.weight": None,
    }
    rows = []
    for t in r.tensors:
        if t.name not in want:
            continue
        x = dequantize(t.data, t.tensor_type)
        idx = want[t.name]
        rows.append({"name": t.name, "type": t.tensor_type.name, "dims": [int(v) for v in t.shape],
                     "rows": idx, "bits": bits(x if idx is None else x[idx])})
    summary = {
        "size": os.path.getsize(model),
        "version": int(r.fields["GGUF.version"].contents()),
        "tensor_count": len(r.tensors),
        "kv_count": len(r.fields) - 3,
        "data_offset": int(r.data_offset),
        "general.architecture": r.fields["general.architecture"].contents(),
        "llama.block_count": r.fields["llama.block_count"].contents(),
        "tokens": len(r.fields["tokenizer.ggml.tokens"].contents()),
        "merges": len(r.fields["tokenizer.ggml.merges"].contents()),
        "merge_0": r.fields["tokenizer.ggml.merges"].contents()[0],
        "token_type_sum": int(sum(r.fields["tokenizer.ggml.token_type"].contents())),
        "types": {t.tensor_type.name: sum(1 for u in r.tensors if u.tensor_type == t.tensor_type) for t in r.tensors},
    }
    with open(os.path.join(out, "smollm2_rows.json"), "w") as f:
        json.dump({"summary": summary, "tensors": rows}, f)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--out", default=os.path.join(HERE, "testdata"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    synthetic(a.out)
    real_rows(a.model, a.out)


if __name__ == "__main__":
    main()
