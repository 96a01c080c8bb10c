#!/usr/bin/python3
"""ResNet-50 in parts, and chains of its convolution shapes, as ONNX models
for `bench/compare/kernel_vs_ort.py`: where in the model Harness stands
against ONNX Runtime, measured in interleaved rounds without either
engine's profiler (`layer_compare.py` reads ORT's profiler, which adds its
own cost per node).

    /usr/bin/python3 bench/models/export_resnet_parts.py OUTDIR [NAME ...]

Parts (torchvision's resnet50, random weights, eval mode, opset 17):
  stem      conv1 + bn1 + relu + maxpool            1x3x224x224
  layer1-4  one stage each                          its input shape in the model
  layer3_0  layer3's first block (stride 2, downsample)   1x512x28x28
  layer3_r  layer3's other five blocks              1x1024x14x14
Chains (four residual pairs of 1x1 convolutions C -> C/4 -> C + x, or six
3x3 convolutions with a Relu each):
  chain1x1_56, _28, _14, _7   C = 256, 512, 1024, 2048 on 56, 28, 14, 7
  chain3x3_28, _14            128 and 256 channels on 28 and 14

Each part costs ORT a layout change at its input and output (NCHW to its
NCHWc and back) that the whole model pays once, so a part's ratio reads a
little lower than the same layers inside the model.
"""
import os
import sys

import torch
import torchvision


class Pairs1x1(torch.nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.reduce = torch.nn.ModuleList([torch.nn.Conv2d(c, c // 4, 1) for _ in range(n)])
        self.expand = torch.nn.ModuleList([torch.nn.Conv2d(c // 4, c, 1) for _ in range(n)])

    def forward(self, x):
        for a, b in zip(self.reduce, self.expand):
            x = torch.relu(b(torch.relu(a(x))) + x)
        return x


class Chain3x3(torch.nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.convs = torch.nn.ModuleList([torch.nn.Conv2d(c, c, 3, padding=1) for _ in range(n)])

    def forward(self, x):
        for conv in self.convs:
            x = torch.relu(conv(x))
        return x


def parts():
    torch.manual_seed(0)
    m = torchvision.models.resnet50().eval()
    blocks3 = list(m.layer3.children())
    return {
        "stem": (torch.nn.Sequential(m.conv1, m.bn1, m.relu, m.maxpool), (1, 3, 224, 224)),
        "layer1": (m.layer1, (1, 64, 56, 56)),
        "layer2": (m.layer2, (1, 256, 56, 56)),
        "layer3": (m.layer3, (1, 512, 28, 28)),
        "layer4": (m.layer4, (1, 1024, 14, 14)),
        "layer3_0": (blocks3[0], (1, 512, 28, 28)),
        "layer3_r": (torch.nn.Sequential(*blocks3[1:]), (1, 1024, 14, 14)),
        "chain1x1_56": (Pairs1x1(256, 4), (1, 256, 56, 56)),
        "chain1x1_28": (Pairs1x1(512, 4), (1, 512, 28, 28)),
        "chain1x1_14": (Pairs1x1(1024, 4), (1, 1024, 14, 14)),
        "chain1x1_7": (Pairs1x1(2048, 4), (1, 2048, 7, 7)),
        "chain3x3_28": (Chain3x3(128, 6), (1, 128, 28, 28)),
        "chain3x3_14": (Chain3x3(256, 6), (1, 256, 14, 14)),
    }


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    todo = parts()
    names = sys.argv[2:] or list(todo)
    for name in names:
        if name not in todo:
            sys.exit(f"unknown part '{name}'; one of: {', '.join(todo)}")
        module, shape = todo[name]
        path = os.path.join(out, name + ".onnx")
        with torch.no_grad():
            torch.onnx.export(module.eval(), torch.randn(*shape), path, input_names=["x"], output_names=["y"],
                              opset_version=17)
        print(path)


if __name__ == "__main__":
    main()
