#!/usr/bin/env python3
"""Exports torchvision architectures with random (seeded) weights to ONNX.

    /usr/bin/python3 test/real_models/export_torchvision.py OUTDIR [NAME ...]

NAME is one of resnet18, resnet50, mobilenet_v2, efficientnet_b0 (default:
resnet18 mobilenet_v2). Weights are random but seeded, so the files are
reproducible; BatchNorm statistics are randomised too so that folding them
is actually tested. Uses Debian's python3-torch / python3-torchvision.
"""
import os
import sys

import torch
import torchvision

BUILDERS = {
    "resnet18": torchvision.models.resnet18,
    "resnet50": torchvision.models.resnet50,
    "mobilenet_v2": torchvision.models.mobilenet_v2,
    "efficientnet_b0": torchvision.models.efficientnet_b0,
}


def randomise_batchnorm(model, gen):
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
                m.weight.copy_(1 + 0.1 * torch.randn(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))


def export(name, out_dir):
    torch.manual_seed(1234)
    gen = torch.Generator().manual_seed(5678)
    model = BUILDERS[name](weights=None)
    randomise_batchnorm(model, gen)
    model.eval()
    x = torch.randn(1, 3, 224, 224, generator=gen)
    path = os.path.join(out_dir, f"{name}.onnx")
    torch.onnx.export(model, x, path, input_names=["input"], output_names=["logits"], opset_version=13,
                      do_constant_folding=True)
    print(path)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    names = sys.argv[2:] or ["resnet18", "mobilenet_v2"]
    for n in names:
        if n not in BUILDERS:
            sys.exit(f"unknown model {n}; choose from {', '.join(BUILDERS)}")
        export(n, out_dir)


if __name__ == "__main__":
    main()
