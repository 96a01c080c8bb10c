#!/usr/bin/python3
"""Generates ONNX backend-style test folders for the channel-blocks pass
(passes/channel_blocks.c) and Concat in place (passes/memory_plan.c):

- cb_*: a 1x1 expansion, element-wise ops, a depthwise Conv and element-wise
  ops after it (Clip, SiLU, HardSwish, Relu; strides, 5x5, dilation, with and
  without biases, a squeeze-and-excitation gate after), large enough to be
  split into channel blocks, and near misses that must be left whole: the
  expanded tensor read elsewhere, too small, a depthwise Conv with a channel
  multiplier, an op between them that is not element-wise;
- concat_*: Concats whose inputs memory planning writes in place (branches
  joined along the channels, a Concat of a Concat, along axis 0) and ones it
  must copy (along an inner axis, an input joined twice, a skip connection
  whose in-place bytes would raise the peak, an input that is a graph
  output), plus an input
  read again after the Concat by an element-wise op that must not write
  over it.

Expected outputs come from numpy and torch (float64). check_blocks_path.py
checks that the rewrites happen where they should (and not elsewhere).

usage: make_blocks_cases.py OUTPUT_DIR
then:  harness-test -O3 OUTPUT_DIR/*   (and -O1: no channel blocks, Concat copies)
"""
import numpy as np
from onnx import helper

import casekit

RNG = np.random.default_rng(2468)


def randf(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def write_case(root, name, nodes, inputs, outputs, inits=(), opset=17):
    casekit.write_case(root, name, nodes, inputs, outputs, opset, inits, producer="make_blocks_cases")


conv_ref = casekit.torch_conv2d


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# Activations as (nodes from `src` to `dst`, constants, numpy function).
def act(kind, src, dst):
    if kind == "clip":
        return ([helper.make_node("Clip", [src, "lo", "hi"], [dst])],
                [("lo", np.float32(0)), ("hi", np.float32(6))], lambda v: np.clip(v, 0, 6))
    if kind == "silu":
        return ([helper.make_node("Sigmoid", [src], [src + "_s"]), helper.make_node("Mul", [src, src + "_s"], [dst])],
                [], lambda v: v * sigmoid(v))
    if kind == "hardswish":
        return ([helper.make_node("HardSwish", [src], [dst])], [], lambda v: v * np.clip(v / 6 + 0.5, 0, 1))
    if kind == "relu":
        return ([helper.make_node("Relu", [src], [dst])], [], lambda v: np.maximum(v, 0))
    if kind == "scale_relu":  # a scalar-constant binary op, then an activation
        return ([helper.make_node("Mul", [src, "k"], [src + "_k"]), helper.make_node("Relu", [src + "_k"], [dst])],
                [("k", np.float32(0.75))], lambda v: np.maximum(0.75 * v, 0))
    assert kind == "none"
    return ([helper.make_node("Identity", [src], [dst])], [], lambda v: v)


def block_case(root, name, C0, C1, H, pre, post, k=3, stride=1, pad=1, dil=1, bias=True, se=False, mult=1):
    x = randf(1, C0, H, H)
    w1, b1 = randf(C1, C0, 1, 1, scale=0.4), randf(C1, scale=0.5) if bias else None
    w2, b2 = randf(C1 * mult, 1, k, k, scale=0.3), randf(C1 * mult, scale=0.5) if bias else None
    inits = [("w1", w1), ("w2", w2)] + ([("b1", b1), ("b2", b2)] if bias else [])
    pre_nodes, pre_c, pre_f = act(pre, "e", "a")
    post_nodes, post_c, post_f = act(post, "d", "f")
    inits += [c for c in pre_c + post_c if c[0] not in dict(inits)]
    nodes = [helper.make_node("Conv", ["x", "w1"] + (["b1"] if bias else []), ["e"])] + pre_nodes
    nodes.append(helper.make_node("Conv", ["a", "w2"] + (["b2"] if bias else []), ["d"], group=C1,
                                  kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, dilations=[dil, dil]))
    nodes += post_nodes
    f = post_f(conv_ref(pre_f(conv_ref(x, w1, b1)), w2, b2, stride, pad, C1, dil))
    out = "f"
    if se:  # squeeze-and-excitation: a per-channel gate ends the element-wise region
        nodes += [helper.make_node("GlobalAveragePool", ["f"], ["g"]), helper.make_node("Sigmoid", ["g"], ["gs"]),
                  helper.make_node("Mul", ["f", "gs"], ["y"])]
        f = f * sigmoid(f.mean(axis=(2, 3), keepdims=True))
        out = "y"
    write_case(root, name, nodes, [("x", x)], [(out, f.astype(np.float32))], inits)


def channel_block_cases(root):
    # Split: 96 channels at 80x80 (2.5 MB expanded) in blocks of 32.
    block_case(root, "cb_clip_s1", 16, 96, 80, "clip", "clip")
    # EfficientNet-style: SiLU on both sides, stride 2, no biases; 4 blocks of 16.
    block_case(root, "cb_silu_s2_nobias", 8, 64, 96, "silu", "silu", stride=2, bias=False)
    # 5x5 stride 2, HardSwish / Relu, and a squeeze-and-excitation gate after.
    block_case(root, "cb_dw5x5_se", 16, 128, 64, "hardswish", "relu", k=5, stride=2, pad=2, se=True)
    # Dilated, nothing between the convolutions, a scalar Mul + Relu after.
    block_case(root, "cb_dilated_plain", 8, 80, 72, "none", "scale_relu", dil=2, pad=2)
    # Near misses, left whole: too small (0.6 MB; 1.2 MB, below the 1.5 MiB
    # threshold though above a block's 1 MiB), a channel multiplier.
    block_case(root, "cb_small_whole", 8, 48, 56, "clip", "clip")
    block_case(root, "cb_below_threshold_whole", 8, 72, 64, "relu", "relu")
    block_case(root, "cb_multiplier_whole", 8, 96, 64, "relu", "relu", mult=2)

    # The expanded tensor also read by another node: left whole.
    x = randf(1, 8, 64, 64)
    w1, w2 = randf(96, 8, 1, 1, scale=0.4), randf(96, 1, 3, 3, scale=0.3)
    e = conv_ref(x, w1)
    d = conv_ref(np.maximum(e, 0), w2, None, 1, 1, 96)
    write_case(root, "cb_second_use_whole",
               [helper.make_node("Conv", ["x", "w1"], ["e"]), helper.make_node("Relu", ["e"], ["a"]),
                helper.make_node("Conv", ["a", "w2"], ["d"], group=96, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                helper.make_node("Add", ["d", "e"], ["y"])],
               [("x", x)], [("y", (d + e).astype(np.float32))], [("w1", w1), ("w2", w2)])
    # The expanded tensor read directly by the depthwise Conv and by an Add
    # (no activation between): left whole.
    d0 = conv_ref(e, w2, None, 1, 1, 96)
    write_case(root, "cb_direct_second_use_whole",
               [helper.make_node("Conv", ["x", "w1"], ["e"]),
                helper.make_node("Conv", ["e", "w2"], ["d"], group=96, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                helper.make_node("Add", ["d", "e"], ["y"])],
               [("x", x)], [("y", (d0 + e).astype(np.float32))], [("w1", w1), ("w2", w2)])
    # A MaxPool between them (not element-wise): left whole.
    p = e[:, :, :, :]
    write_case(root, "cb_pool_between_whole",
               [helper.make_node("Conv", ["x", "w1"], ["e"]),
                helper.make_node("MaxPool", ["e"], ["a"], kernel_shape=[1, 1]),
                helper.make_node("Conv", ["a", "w2"], ["y"], group=96, kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
               [("x", x)], [("y", conv_ref(p, w2, None, 1, 1, 96).astype(np.float32))], [("w1", w1), ("w2", w2)])


def concat_cases(root):
    # 1x1 branches (no workspace that a part held early would overlap).
    x = randf(1, 16, 20, 20)
    wa, wb, wc = randf(8, 16, 1, 1), randf(24, 16, 1, 1, scale=0.2), randf(40, 16, 1, 1)
    a, b, c = conv_ref(x, wa), conv_ref(x, wb), conv_ref(x, wc)
    # Branches joined along the channels, then an activation: in place.
    write_case(root, "concat_branches",
               [helper.make_node("Conv", ["x", "wa"], ["a"]), helper.make_node("Conv", ["x", "wb"], ["b"]),
                helper.make_node("Conv", ["x", "wc"], ["c"]), helper.make_node("Concat", ["a", "b", "c"], ["j"], axis=1),
                helper.make_node("Relu", ["j"], ["y"])],
               [("x", x)], [("y", np.maximum(np.concatenate([a, b, c], 1), 0).astype(np.float32))],
               [("wa", wa), ("wb", wb), ("wc", wc)])
    # A Concat of a Concat (offsets add up), negative axis.
    write_case(root, "concat_nested",
               [helper.make_node("Conv", ["x", "wa"], ["a"]), helper.make_node("Conv", ["x", "wc"], ["c"]),
                helper.make_node("Concat", ["a", "c"], ["ac"], axis=-3),
                helper.make_node("Conv", ["x", "wb"], ["b"]),
                helper.make_node("Concat", ["b", "ac"], ["j"], axis=1), helper.make_node("Sigmoid", ["j"], ["y"])],
               [("x", x)], [("y", (1 / (1 + np.exp(-np.concatenate([b, a, c], 1)))).astype(np.float32))],
               [("wa", wa), ("wb", wb), ("wc", wc)])
    # An input read again after the Concat by an element-wise op, which must
    # not write over it (its bytes are the Concat's).
    # z = a - max(y) reads a last, after y, and is an intermediate: an
    # element-wise op that would otherwise be written over a (a is the
    # second part, at a non-zero offset).
    wz = randf(4, 8, 1, 1)
    y = np.maximum(np.concatenate([c, a], 1), 0)
    write_case(root, "concat_part_read_after",
               [helper.make_node("Conv", ["x", "wa"], ["a"]), helper.make_node("Conv", ["x", "wc"], ["c"]),
                helper.make_node("Concat", ["c", "a"], ["j"], axis=1), helper.make_node("Relu", ["j"], ["y"]),
                helper.make_node("ReduceMax", ["y"], ["g"], keepdims=1), helper.make_node("Sub", ["a", "g"], ["z"]),
                helper.make_node("Conv", ["z", "wz"], ["out"])],
               [("x", x)], [("y", y.astype(np.float32)), ("out", conv_ref(a - y.max(), wz).astype(np.float32))],
               [("wa", wa), ("wc", wc), ("wz", wz)])
    # Along axis 0 of products: in place.
    p, q, m = randf(3, 32), randf(5, 32), randf(32, 16)
    write_case(root, "concat_axis0_products",
               [helper.make_node("MatMul", ["p", "m"], ["pm"]), helper.make_node("MatMul", ["q", "m"], ["qm"]),
                helper.make_node("Concat", ["pm", "qm"], ["j"], axis=0), helper.make_node("Tanh", ["j"], ["y"])],
               [("p", p), ("q", q)], [("y", np.tanh(np.concatenate([p @ m, q @ m], 0)).astype(np.float32))], [("m", m)])
    # Copies: an inner axis, the same input twice, an input that is a graph
    # output, a skip connection produced long before.
    write_case(root, "concat_inner_axis_copies",
               [helper.make_node("Conv", ["x", "wa"], ["a"]), helper.make_node("Conv", ["x", "wa2"], ["a2"]),
                helper.make_node("Concat", ["a", "a2"], ["y"], axis=2)],
               [("x", x)], [("y", np.concatenate([a, conv_ref(x, -wa)], 2).astype(np.float32))],
               [("wa", wa), ("wa2", -wa)])
    write_case(root, "concat_twice_copies",
               [helper.make_node("Conv", ["x", "wa"], ["a"]), helper.make_node("Concat", ["a", "a"], ["j"], axis=1),
                helper.make_node("Relu", ["j"], ["y"])],
               [("x", x)], [("y", np.maximum(np.concatenate([a, a], 1), 0).astype(np.float32))], [("wa", wa)])
    write_case(root, "concat_output_input_copies",
               [helper.make_node("Conv", ["x", "wa"], ["a"]), helper.make_node("Conv", ["x", "wc"], ["c"]),
                helper.make_node("Concat", ["a", "c"], ["j"], axis=1), helper.make_node("Relu", ["j"], ["y"])],
               [("x", x)], [("a", a.astype(np.float32)), ("y", np.maximum(np.concatenate([a, c], 1), 0).astype(np.float32))],
               [("wa", wa), ("wc", wc)])
    # The skip s is joined after a chain whose middle (two 32-channel
    # tensors) is the model's peak: holding the chain's 8-channel result
    # there from s on would raise it, so the Concat copies. (Were the
    # Concat's output the graph's output, its parts would cost no arena at
    # all, and be written in place.)
    ws = [randf(32, 8, 3, 3, scale=0.2), randf(32, 32, 3, 3, scale=0.1), randf(8, 32, 3, 3, scale=0.1)]
    nodes, h = [helper.make_node("Conv", ["x", "wa"], ["s"])], conv_ref(x, wa)
    skip, prev = h, "s"
    for i, w in enumerate(ws):
        nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [f"h{i}"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"h{i}"], [f"r{i}"]))
        h, prev = np.maximum(conv_ref(h, w, None, 1, 1), 0), f"r{i}"
    nodes += [helper.make_node("Concat", ["s", prev], ["c"], axis=1), helper.make_node("Tanh", ["c"], ["y"])]
    write_case(root, "concat_far_skip_copies", nodes, [("x", x)],
               [("y", np.tanh(np.concatenate([skip, h], 1)).astype(np.float32))],
               [("wa", wa)] + [(f"w{i}", w) for i, w in enumerate(ws)])
    # The same skip joined after a chain of 8-channel 1x1 convolutions: the
    # Concat (inputs and output live together) is the peak, and in place
    # lowers it.
    ws = [randf(8, 8, 1, 1, scale=0.4) for _ in range(3)]
    nodes, h = [helper.make_node("Conv", ["x", "wa"], ["s"])], conv_ref(x, wa)
    skip, prev = h, "s"
    for i, w in enumerate(ws):
        nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [f"h{i}"]))
        nodes.append(helper.make_node("Relu", [f"h{i}"], [f"r{i}"]))
        h, prev = np.maximum(conv_ref(h, w), 0), f"r{i}"
    nodes.append(helper.make_node("Concat", ["s", prev], ["c"], axis=1))
    nodes.append(helper.make_node("Sigmoid", ["c"], ["y"]))
    write_case(root, "concat_thin_skip", nodes, [("x", x)],
               [("y", sigmoid(np.concatenate([skip, h], 1)).astype(np.float32))],
               [("wa", wa)] + [(f"w{i}", w) for i, w in enumerate(ws)])


def main():
    root = casekit.out_dir(__doc__)
    channel_block_cases(root)
    concat_cases(root)


if __name__ == "__main__":
    main()
