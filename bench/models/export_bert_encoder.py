#!/usr/bin/env python3
"""Exports a BERT-like transformer encoder (random seeded weights) to ONNX for
the performance comparison (docs/performance.md).

    /usr/bin/python3 bench/models/export_bert_encoder.py OUT.onnx [--layers 4] [--d-model 256]
                     [--heads 4] [--ffn 1024] [--seq 128] [--opset 17]

Post-norm BERT layers written out in plain torch (so the exporter sees
MatMul, Softmax, LayerNormalization and the erf form of GELU rather than a
fused PyTorch fast path): multi-head self-attention with Q/K/V/output
projections, residual + LayerNorm, then Linear -> GELU -> Linear, residual +
LayerNorm. Input "x" is the already-embedded sequence, 1 x seq x d_model
float32; every shape is static. (bench/models/make_bert_like.py is a
different model: the serving benchmark's encoder with token embeddings and a
symbolic batch.)
"""
import argparse
import math

import torch


class Layer(torch.nn.Module):
    """One post-norm encoder layer."""

    def __init__(self, d, heads, ffn):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = torch.nn.LayerNorm(d, eps=1e-12), torch.nn.LayerNorm(d, eps=1e-12)
        self.ff1, self.ff2 = torch.nn.Linear(d, ffn), torch.nn.Linear(ffn, d)
        self.act = torch.nn.GELU()

    def forward(self, x):
        b, s, d = x.shape

        def split(t):
            return t.reshape(b, s, self.heads, self.dh).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.dh))
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.ff2(self.act(self.ff1(x))))


class Encoder(torch.nn.Module):
    def __init__(self, layers, d, heads, ffn):
        super().__init__()
        self.layers = torch.nn.ModuleList(Layer(d, heads, ffn) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--opset", type=int, default=17)
    a = ap.parse_args()
    torch.manual_seed(1234)
    model = Encoder(a.layers, a.d_model, a.heads, a.ffn).eval()
    x = torch.randn(1, a.seq, a.d_model)
    with torch.no_grad():
        torch.onnx.export(model, x, a.out, input_names=["x"], output_names=["y"], opset_version=a.opset,
                          do_constant_folding=True)
    print(a.out)


if __name__ == "__main__":
    main()
