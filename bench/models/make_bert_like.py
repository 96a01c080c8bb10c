#!/usr/bin/env python3
"""Writes a BERT-like encoder (random seeded weights) for the serving benchmarks.

    /usr/bin/python3 bench/models/make_bert_like.py OUT.onnx [--layers 4] [--hidden 256]
                     [--heads 4] [--seq 128] [--ffn 1024] [--vocab 8192]

The shape of BERT-mini: token + position embeddings, LayerNorm, then per
layer multi-head self-attention (Q, K, V projections, scaled dot product,
softmax, output projection, residual, LayerNorm) and a GELU feed-forward
block (residual, LayerNorm). The batch dimension of the input ids is the
symbolic "N", and every Reshape uses -1 for it, so `harnessc --batch 1,2,4,8`
can compile it for several batch sizes.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=8192)
    a = ap.parse_args()
    rng = np.random.default_rng(1234)
    H, S, A, F = a.hidden, a.seq, a.heads, a.ffn
    D = H // A
    nodes, inits = [], []

    def w(name, shape, scale=0.02):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def c(name, values, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.asarray(values, dtype), name))
        return name

    def node(op, ins, outs, **kw):
        nodes.append(helper.make_node(op, ins, outs, name=outs[0], **kw))
        return outs[0]

    def layernorm(x, prefix):
        g = c(prefix + ".gamma", np.ones(H))
        b = c(prefix + ".beta", np.zeros(H))
        return node("LayerNormalization", [x, g, b], [prefix + ".out"], axis=-1, epsilon=1e-12)

    def dense(x, prefix, n_in, n_out):
        y = node("MatMul", [x, w(prefix + ".w", (n_in, n_out))], [prefix + ".mm"])
        return node("Add", [y, c(prefix + ".b", np.zeros(n_out))], [prefix + ".out"])

    heads_shape = c("shape.heads", [-1, S, A, D], np.int64)
    merged_shape = c("shape.merged", [-1, S, H], np.int64)
    scale = c("scale", [1.0 / np.sqrt(D)])
    half, one, rsqrt2 = c("half", [0.5]), c("one", [1.0]), c("rsqrt2", [1.0 / np.sqrt(2.0)])

    tok = node("Gather", [w("emb.token", (a.vocab, H)), "input_ids"], ["emb.tok"], axis=0)
    pos = node("Add", [tok, w("emb.position", (S, H))], ["emb.sum"])
    x = layernorm(pos, "emb.ln")
    for l in range(a.layers):
        p = f"l{l}"
        q = node("Transpose", [node("Reshape", [dense(x, p + ".q", H, H), heads_shape], [p + ".q.r"])], [p + ".q.t"],
                 perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [dense(x, p + ".k", H, H), heads_shape], [p + ".k.r"])], [p + ".k.t"],
                 perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [dense(x, p + ".v", H, H), heads_shape], [p + ".v.r"])], [p + ".v.t"],
                 perm=[0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [q, k], [p + ".qk"]), scale], [p + ".scores"])
        probs = node("Softmax", [scores], [p + ".probs"], axis=-1)
        ctx = node("MatMul", [probs, v], [p + ".ctx"])
        ctx = node("Reshape", [node("Transpose", [ctx], [p + ".ctx.t"], perm=[0, 2, 1, 3]), merged_shape], [p + ".ctx.r"])
        attn = dense(ctx, p + ".o", H, H)
        x = layernorm(node("Add", [x, attn], [p + ".res1"]), p + ".ln1")
        h = dense(x, p + ".ffn1", H, F)
        # GELU(h) = 0.5 h (1 + erf(h / sqrt 2))
        erf = node("Erf", [node("Mul", [h, rsqrt2], [p + ".g.s"])], [p + ".g.erf"])
        gelu = node("Mul", [node("Mul", [h, half], [p + ".g.h"]), node("Add", [erf, one], [p + ".g.1"])], [p + ".gelu"])
        x = layernorm(node("Add", [x, dense(gelu, p + ".ffn2", F, H)], [p + ".res2"]), p + ".ln2")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))

    graph = helper.make_graph(nodes, "bert_like", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["N", S])],
                              [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["N", S, H])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, a.out)
    print(a.out)


if __name__ == "__main__":
    main()
