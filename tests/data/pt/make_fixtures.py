#!/usr/bin/env python3
"""Write the torch .pt fixtures read by tests/test_torch_pt.c, with a real torch.

Run once with Debian's python3-torch (1.13.1 on Debian 12):

    apt-get install -y --no-install-recommends python3-torch
    /usr/bin/python3 tests/data/pt/make_fixtures.py

The files are committed; torch is not a build or test dependency.  Besides the
.pt files this writes expected.txt, the values as torch itself reports them
(tolist(), storage_offset(), shape), so the C test compares our reader against
torch and not against itself.  One line per fixture:

    <file> <dtype> <shape: d0,d1,... or - for 0-d> <storage_offset> <values...>

Integers and booleans are written in decimal, floating values with
float.hex() (exact; strtod() reads it back).  Values are listed in row-major
(C) order of the logical tensor, which is how the reader returns them.

Everything is deterministic (fixed generator seeds), so rerunning it changes
nothing but the storage keys of legacy.pt, which torch derives from object
addresses.
"""
import os
import sys

import torch

OUT = os.path.dirname(os.path.abspath(__file__))
N_FF = 384      # relu2M's feed-forward width
N_FF_DIR = 96   # activation/ layers: small, to keep the fixtures small
N_LAYER = 12    # >= 11 so that activation_10 and _11 test the numeric sort

DTYPE_NAMES = {
    torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8",
    torch.uint8: "uint8", torch.bool: "bool", torch.float16: "float16",
    torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64",
}

lines = []


def fmt(x, dtype):
    if dtype.is_floating_point:
        return float(x).hex()
    return str(int(x))


def record(name, t):
    flat = t.reshape(-1).tolist() if t.dim() > 0 else [t.item()]
    shape = ",".join(str(d) for d in t.shape) if t.dim() > 0 else "-"
    vals = " ".join(fmt(v, t.dtype) for v in flat)
    lines.append(f"{name} {DTYPE_NAMES[t.dtype]} {shape} {t.storage_offset()} {vals}".rstrip())


def save(name, t, **kw):
    path = os.path.join(OUT, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(t, path, **kw)
    # Check the file round-trips through torch itself before trusting it.
    back = torch.load(path)
    assert back.dtype == t.dtype and back.shape == t.shape
    assert torch.equal(back, t) or (t.dtype.is_floating_point and
                                    torch.equal(back.isnan(), t.isnan()))
    record(name, t)


def counts(gen, n, scale):
    """Power-law-ish activation counts: a few hot neurons, many cold or dead ones."""
    u = torch.rand(n, generator=gen, dtype=torch.float64)
    c = (scale * u.pow(6.0)).floor().to(torch.int64)
    c[torch.rand(n, generator=gen) < 0.1] = 0
    return c


def main():
    gen = torch.Generator().manual_seed(20240601)

    # int64 counts of relu2M's width, plus values that need all 64 bits.
    c = counts(gen, N_FF, 100000)
    c[1] = 2**40 + 3
    c[2] = -5
    c[3] = 2**63 - 1
    c[4] = -2**63
    save("counts_i64.pt", c)

    save("i32.pt", torch.tensor([0, 1, -1, 2**31 - 1, -2**31, 123456789, -98765], dtype=torch.int32))
    save("i16.pt", torch.tensor([0, 1, -1, 32767, -32768, 1234], dtype=torch.int16))
    save("i8.pt", torch.tensor([0, 1, -1, 127, -128, 42], dtype=torch.int8))
    save("u8.pt", torch.tensor([0, 1, 127, 128, 255, 42], dtype=torch.uint8))
    save("bool.pt", torch.tensor([True, False, False, True, True], dtype=torch.bool))

    special = [0.0, -0.0, 1.0, -2.5, 3.14159265358979, 1e-3, float("inf"), float("-inf"),
               float("nan")]
    f32 = torch.tensor(special + [1e-45, 1.17549435e-38, 3.4028234e38], dtype=torch.float32)
    save("f32.pt", f32)
    save("f64.pt", torch.tensor(special + [5e-324, 1.7976931348623157e308, 0.1],
                                dtype=torch.float64))
    # Half: the smallest subnormal (2^-24), the largest subnormal, the largest normal.
    save("f16.pt", torch.tensor(special + [2.0**-24, 6.097555160522461e-05, 65504.0],
                                dtype=torch.float16))
    save("bf16.pt", torch.tensor(special + [2.0**-133, 3.3895313892515355e38], dtype=torch.bfloat16))

    # Views: torch saves the whole storage and records offset and strides.
    base = torch.arange(100, dtype=torch.int64) * 3 + 7
    save("view_offset.pt", base[10:50])
    save("view_strided.pt", base[5:95:3])
    m = torch.arange(12, dtype=torch.float32).reshape(3, 4) * 0.5
    save("two_d.pt", m)
    save("two_d_t.pt", m.t())                     # non-contiguous 2-D
    save("scalar.pt", torch.tensor(42.5, dtype=torch.float64))
    save("empty.pt", torch.zeros(0, dtype=torch.int64))
    # Another pickle protocol (SHORT_BINUNICODE, MEMOIZE, FRAME) and an nn.Parameter.
    save("proto4.pt", torch.arange(10, dtype=torch.int32) * -7, pickle_protocol=4)
    save("param.pt", torch.nn.Parameter(torch.linspace(-1, 1, 9, dtype=torch.float32)))
    # Pre-1.6 format: a stream of pickles followed by the raw storages.
    save("legacy.pt", torch.arange(20, dtype=torch.int64) * 11 - 50,
         _use_new_zipfile_serialization=False)

    # Not a tensor: the reader must say so.
    torch.save({"counts": torch.arange(3)}, os.path.join(OUT, "dict.pt"))

    # A fake PowerInfer activation/ directory; each layer has its own scale so
    # that a file read for the wrong layer shows up in the values.
    for i in range(N_LAYER):
        save(f"activation/activation_{i}.pt", counts(gen, N_FF_DIR, 1000 * (i + 1)))

    with open(os.path.join(OUT, "expected.txt"), "w") as f:
        f.write(f"# written by make_fixtures.py with torch {torch.__version__}\n")
        f.write("\n".join(lines) + "\n")
    total = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(OUT) for n in ns)
    print(f"wrote {len(lines)} fixtures, {total} bytes in {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
