"""Shared pieces of the test-case generators in this folder
(make_<family>_cases.py, check_control_flow_errors.py): test values of any
element type (bfloat16 included), model assembly, ONNX backend-style test
folders (OUT/<name>/model.onnx + test_data_set_N/{input,output}_i.pb), frozen
copies of suite tests, window arithmetic the conv/pool references share, and
the command line every generator takes.

A test value is a numpy array (or anything np.asarray takes) or a BF16; its
element type and shape come from the value. Generators that tag values with
a dtype instead, as (name, array, dtype), turn them into values with
typed(); the BFLOAT16 marker stands for bfloat16 there.

Each generator keeps its own seeded random generator, so the values it
writes do not depend on what the others draw.
"""
import glob
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BFLOAT16 = "bfloat16"  # marker dtype: float32 values on the bfloat16 grid


# ---- element types and bfloat16 ---------------------------------------------------


def np_elem_type(dtype):
    """ONNX element type of a numpy dtype (or of the BFLOAT16 marker)."""
    if isinstance(dtype, str) and dtype == BFLOAT16:
        return TensorProto.BFLOAT16
    dt = np.dtype(dtype)
    if hasattr(helper, "np_dtype_to_tensor_dtype"):  # onnx >= 1.13
        return helper.np_dtype_to_tensor_dtype(dt)
    return onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[dt]


def bf16_round(x):
    """x as float32, rounded to the nearest bfloat16 (ties to even); same shape."""
    a = np.asarray(x, dtype=np.float32)
    bits = np.atleast_1d(a).view(np.uint32).astype(np.uint64)
    bits = (bits + np.uint64(0x7FFF) + ((bits >> np.uint64(16)) & np.uint64(1))) & np.uint64(0xFFFF0000)
    return bits.astype(np.uint32).view(np.float32).reshape(a.shape)


class BF16:
    """A bfloat16 tensor held as the float32 values it represents exactly."""

    def __init__(self, values):
        self.values = bf16_round(values)

    @classmethod
    def exact(cls, values):
        """A BF16 holding values as float32 without rounding them: for values
        already on the bfloat16 grid (others lose their low 16 bits when
        written)."""
        v = cls.__new__(cls)
        v.values = np.asarray(values, dtype=np.float32)
        return v


def bf16_tensor(name, values):
    """A BFLOAT16 TensorProto of float32 values (their upper 16 bits)."""
    a = np.asarray(values, dtype=np.float32)
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.BFLOAT16
    t.dims.extend(a.shape)
    t.raw_data = (a.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    return t


# ---- test values ------------------------------------------------------------------


def to_tensor(name, value):
    """TensorProto named name holding a test value."""
    if isinstance(value, BF16):
        return bf16_tensor(name, value.values)
    return numpy_helper.from_array(np.asarray(value), name)


def elem_type(value):
    """ONNX element type of a test value."""
    if isinstance(value, BF16):
        return TensorProto.BFLOAT16
    return np_elem_type(np.asarray(value).dtype)


def shape_of(value):
    """Shape of a test value, as a list."""
    return list((value.values if isinstance(value, BF16) else np.asarray(value)).shape)


def value_info(name, value):
    """Graph input/output declaration with a test value's type and shape."""
    return helper.make_tensor_value_info(name, elem_type(value), shape_of(value))


def vi(name, et, shape):
    """Graph input/output declaration from an element type and a shape
    (None: unknown rank)."""
    return helper.make_tensor_value_info(name, et, shape)


def typed(arr, dtype):
    """The test value of a dtype-tagged array: arr converted to dtype, or for
    BFLOAT16 arr's float32 values (already rounded) as a BF16."""
    if isinstance(dtype, str) and dtype == BFLOAT16:
        return BF16.exact(arr)
    return np.asarray(arr, dtype=dtype)


def from_tagged(items):
    """(name, array, dtype) triples as (name, test value) pairs."""
    return [(n, typed(a, dt)) for n, a, dt in items]


def cast_out(y, dtype):
    """Reference results (float64) rounded to a numpy dtype or BFLOAT16
    (still float32 values then, on the bfloat16 grid)."""
    if isinstance(dtype, str) and dtype == BFLOAT16:
        return bf16_round(y)
    return np.asarray(y).astype(dtype)


# ---- models and test folders ------------------------------------------------------


def make_model(graph, opset, producer=None, ir_version=8):
    """A model of graph importing the default domain at opset. producer None
    leaves producer_name unset; ir_version None keeps onnx's default."""
    extra = {} if producer is None else {"producer_name": producer}
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **extra)
    if ir_version is not None:
        m.ir_version = ir_version
    return m


def write_folder(root, name, model, sets):
    """Writes root/name/model.onnx and, for the k-th (inputs, outputs) pair of
    TensorProto lists in sets, root/name/test_data_set_k/{input,output}_i.pb."""
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for k, (ins, outs) in enumerate(sets):
        sd = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(sd, exist_ok=True)
        for kind, tensors in (("input", ins), ("output", outs)):
            for i, t in enumerate(tensors):
                with open(os.path.join(sd, "%s_%d.pb" % (kind, i)), "wb") as f:
                    f.write(t.SerializeToString())


def write_case(root, name, nodes, inputs, outputs, opset, inits=(), producer=None, ir_version=8):
    """A test folder with one data set for a graph named name: nodes (a list,
    or one node), inputs and outputs as lists of (name, test value) in graph
    order, inits as (name, test value) initializers. producer and ir_version
    as in make_model."""
    if isinstance(nodes, onnx.NodeProto):
        nodes = [nodes]
    graph = helper.make_graph(nodes, name, [value_info(n, v) for n, v in inputs],
                              [value_info(n, v) for n, v in outputs], [to_tensor(n, v) for n, v in inits])
    data = ([to_tensor(n, v) for n, v in inputs], [to_tensor(n, v) for n, v in outputs])
    write_folder(root, name, make_model(graph, opset, producer, ir_version), [data])


def freeze_inputs(src, dst, which):
    """Copies the test folder src to dst with the graph inputs at the indices
    in which (ascending) turned into initializers holding their values from
    test_data_set_0, the other inputs renumbered: how a suite test whose
    float shape inputs harness-test cannot freeze is deployed (--constant).
    Only the first data set is copied."""
    m = onnx.load(os.path.join(src, "model.onnx"))
    ds = os.path.join(src, "test_data_set_0")
    names = [i.name for i in m.graph.input]
    for k in which:
        t = onnx.load_tensor(os.path.join(ds, "input_%d.pb" % k))
        t.name = names[k]
        m.graph.initializer.append(t)
    keep = [k for k in range(len(names)) if k not in which]
    inputs = [m.graph.input[k] for k in keep]
    del m.graph.input[:]
    m.graph.input.extend(inputs)
    os.makedirs(os.path.join(dst, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(dst, "model.onnx"))
    for new, old in enumerate(keep):
        shutil.copy(os.path.join(ds, "input_%d.pb" % old), os.path.join(dst, "test_data_set_0", "input_%d.pb" % new))
    for f in glob.glob(os.path.join(ds, "output_*.pb")):
        shutil.copy(f, os.path.join(dst, "test_data_set_0"))


# ---- references -------------------------------------------------------------------


def window_out(in_size, k, s, d, pb, pe, ceil_mode=False):
    """Output size of a conv/pool window (ONNX shape inference, incl. the
    ceil_mode rule that drops a last window starting in the end padding)."""
    span = in_size + pb + pe - ((k - 1) * d + 1)
    assert span >= 0
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= in_size + pb:
        out -= 1
    return out


def torch_conv2d(x, w, b=None, stride=1, pad=0, group=1, dil=1):
    """2-D convolution in float64 by torch (symmetric padding), as numpy."""
    import torch
    y = torch.nn.functional.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(),
                                   None if b is None else torch.from_numpy(b).double(), stride=stride,
                                   padding=pad, dilation=dil, groups=group)
    return y.numpy()


def same_pads(in_size, k, s, d, upper):
    """(begin, end) padding of auto_pad SAME_UPPER (upper) or SAME_LOWER."""
    out = -(-in_size // s)
    total = max(0, (out - 1) * s + (k - 1) * d + 1 - in_size)
    small = total // 2
    return (small, total - small) if upper else (total - small, small)


# ---- command line -----------------------------------------------------------------


def command_line(doc, optional=(), options=(), make_dir=True):
    """Reads `FIRST [OPTIONAL...] [OPTION VALUE]...` from sys.argv: one
    required argument, then up to len(optional) positional ones, then the
    options named in options, each followed by its value, in any order.
    Anything else exits with doc as the usage message. Creates FIRST (the
    output folder) when make_dir. Returns (FIRST, {name: value or None}) for
    the names in optional and options."""
    args = sys.argv[1:]
    more = {n: None for n in list(optional) + list(options)}
    if not args or args[0].startswith("--"):
        sys.exit(doc)
    first, rest = args[0], args[1:]
    for n in optional:
        if rest and not rest[0].startswith("--"):
            more[n], rest = rest[0], rest[1:]
    while rest:
        if rest[0] not in options or len(rest) < 2:
            sys.exit(doc)
        more[rest[0]], rest = rest[1], rest[2:]
    if make_dir:
        os.makedirs(first, exist_ok=True)
    return first, more


def out_dir(doc):
    """The output folder, a generator's only argument (created); exits with
    doc as the usage message otherwise."""
    return command_line(doc)[0]
