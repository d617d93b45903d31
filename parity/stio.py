"""Tiny safetensors reader/writer for the parity generator (no dependency but numpy).

The format (https://huggingface.co/docs/safetensors): 8-byte little-endian header length N,
then N bytes of JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}},
then the raw little-endian, C-ordered tensor data. Offsets are relative to the end of the header.

The official `safetensors` package writes the same format; the parity run uses it, when it is installed,
for the state_dict that `mhalab forward` reads, so that path is checked against the reference writer too.
"""

import json
import struct

import numpy as np

_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


def save(path, tensors, metadata=None):
    """Writes tensors (name -> numpy array or torch tensor) and string metadata to path."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        a = tensors[name]
        if hasattr(a, "detach"):  # torch.Tensor
            a = a.detach().cpu().contiguous().numpy()
        a = np.ascontiguousarray(a)
        if a.dtype not in _NAMES:
            raise ValueError(f"stio: tensor {name!r} has unsupported dtype {a.dtype}")
        data = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {
            "dtype": _NAMES[a.dtype],
            "shape": list(a.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # align the data to 8 bytes, as the reference writer does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)


def load(path):
    """Reads a safetensors file: returns (dict name -> numpy array, metadata dict)."""
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        raise ValueError(f"stio: {path}: file shorter than 8 bytes")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > len(buf) - 8:
        raise ValueError(f"stio: {path}: header length {n} exceeds file size {len(buf)}")
    header = json.loads(buf[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    data = memoryview(buf)[8 + n :]
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        dt = np.dtype(_DTYPES[info["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(data[b:e], dtype=dt).reshape(info["shape"]).copy()
    return out, meta
