#!/usr/bin/env python3
"""Exports torchvision's ViT-B/16 (random seeded weights, 346 MB of float32
parameters) to ONNX, for the compile-time benchmark in docs/performance.md.

    /usr/bin/python3 bench/models/export_vit.py OUT.onnx [--opset 14]

Input "input" is 1x3x224x224. torchvision initialises the classifier head
to zeros, which would make every logit 0 and a comparison with ONNX Runtime
vacuous, so the head gets seeded random weights too. Gradients stay enabled
during the export so that nn.MultiheadAttention takes its traceable path
instead of the fused inference kernel the ONNX exporter cannot translate.
"""
import argparse

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--opset", type=int, default=14)
    a = ap.parse_args()
    torch.manual_seed(1234)
    model = torchvision.models.vit_b_16(weights=None).eval()
    with torch.no_grad():
        model.heads.head.weight.normal_(0, 0.02)
        model.heads.head.bias.normal_(0, 0.02)
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(model, x, a.out, input_names=["input"], output_names=["logits"], opset_version=a.opset,
                      do_constant_folding=True)
    print(a.out)


if __name__ == "__main__":
    main()
