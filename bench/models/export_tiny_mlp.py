#!/usr/bin/env python3
"""Exports a tiny wake-word-classifier-shaped MLP (random seeded weights) to
ONNX: the model where framework overhead, not arithmetic, decides latency.

    /usr/bin/python3 bench/models/export_tiny_mlp.py OUT.onnx [--frames 25] [--features 96]
                     [--hidden 128] [--opset 17]

Input "x" is 1 x frames x features float32 (25 frames of 96 embedding
features); Flatten, then Gemm -> LayerNorm -> ReLU twice and a Gemm ->
Sigmoid head, as in small keyword-spotting classifiers.
"""
import argparse

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--frames", type=int, default=25)
    ap.add_argument("--features", type=int, default=96)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--opset", type=int, default=17)
    a = ap.parse_args()
    torch.manual_seed(1234)
    h = a.hidden
    model = torch.nn.Sequential(
        torch.nn.Flatten(),
        torch.nn.Linear(a.frames * a.features, h), torch.nn.LayerNorm(h), torch.nn.ReLU(),
        torch.nn.Linear(h, h), torch.nn.LayerNorm(h), torch.nn.ReLU(),
        torch.nn.Linear(h, 1), torch.nn.Sigmoid(),
    ).eval()
    x = torch.randn(1, a.frames, a.features)
    with torch.no_grad():
        torch.onnx.export(model, x, a.out, input_names=["x"], output_names=["score"], opset_version=a.opset,
                          do_constant_folding=True)
    print(a.out)


if __name__ == "__main__":
    main()
