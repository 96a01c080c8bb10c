"""Small torch.nn architectures for test/real_models/zoo.py beside the
torchvision ones: the layer types of text, audio, generative and
super-resolution models that torchvision's classifiers do not contain
(recurrent layers, attention blocks, transposed and 1-D/3-D convolutions,
PixelShuffle, GroupNorm/InstanceNorm, embeddings). Each builder returns
(module, example inputs); the weights come from torch's seeded initialisers
and zoo.randomise. Imported only in the export child process (needs torch).
"""
import torch
from torch import nn


class LstmTagger(nn.Module):
    """Token ids -> embedding -> 2-layer bidirectional LSTM -> per-token logits."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 64)
        self.lstm = nn.LSTM(64, 96, num_layers=2, bidirectional=True, batch_first=True)
        self.out = nn.Linear(192, 17)

    def forward(self, ids):
        h, _ = self.lstm(self.emb(ids))
        return self.out(h).log_softmax(-1)


class GruRegressor(nn.Module):
    """Float sequence -> GRU (with an initial state input) -> last step."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(40, 128, num_layers=2, batch_first=True)
        self.head = nn.Linear(128, 8)

    def forward(self, x, h0):
        y, h = self.gru(x, h0)
        return self.head(y[:, -1]), h


class TextEncoder(nn.Module):
    """Token ids -> embedding + learned positions -> pre-norm Transformer
    encoder (GELU) -> mean pooling -> classes."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5000, 128)
        self.pos = nn.Parameter(torch.randn(1, 64, 128) * 0.02)
        layer = nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(128)
        self.cls = nn.Linear(128, 5)

    def forward(self, ids):
        h = self.enc(self.emb(ids) + self.pos[:, :ids.shape[1]])
        return self.cls(self.norm(h).mean(1))


class DcganGenerator(nn.Module):
    """Latent (N, 100, 1, 1) -> 64x64 RGB: ConvTranspose2d + BatchNorm + ReLU, Tanh."""

    def __init__(self):
        super().__init__()
        c = 64
        self.net = nn.Sequential(
            nn.ConvTranspose2d(100, c * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(c * 8), nn.ReLU(True),
            nn.ConvTranspose2d(c * 8, c * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(c * 4), nn.ReLU(True),
            nn.ConvTranspose2d(c * 4, c * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(c * 2), nn.ReLU(True),
            nn.ConvTranspose2d(c * 2, c, 4, 2, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU(True),
            nn.ConvTranspose2d(c, 3, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, z):
        return self.net(z)


class Espcn(nn.Module):
    """Super-resolution x3: convolutions, then PixelShuffle (DepthToSpace)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 64, 5, padding=2), nn.Tanh(), nn.Conv2d(64, 32, 3, padding=1), nn.Tanh(),
                                 nn.Conv2d(32, 9, 3, padding=1), nn.PixelShuffle(3))

    def forward(self, x):
        return self.net(x)


class UNetSmall(nn.Module):
    """Two-level U-Net: GroupNorm + SiLU blocks, MaxPool down, bilinear
    upsampling and a ConvTranspose up, skip concatenations."""

    def __init__(self):
        super().__init__()

        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.GroupNorm(8, o), nn.SiLU(),
                                 nn.Conv2d(o, o, 3, padding=1), nn.GroupNorm(8, o), nn.SiLU())

        self.d1, self.d2, self.mid = block(3, 32), block(32, 64), block(64, 128)
        self.up2 = nn.ConvTranspose2d(128, 64, 2, stride=2)
        self.u2 = block(128, 64)
        self.u1 = block(96, 32)
        self.out = nn.Conv2d(32, 2, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(nn.functional.max_pool2d(a, 2))
        m = self.mid(nn.functional.max_pool2d(b, 2))
        b2 = self.u2(torch.cat([self.up2(m), b], 1))
        a2 = self.u1(torch.cat([nn.functional.interpolate(b2, scale_factor=2, mode="bilinear", align_corners=False),
                                a], 1))
        return self.out(a2)


class WaveNetLike(nn.Module):
    """Audio: dilated causal Conv1d stack with gated tanh * sigmoid units,
    residual and skip sums, InstanceNorm1d on the input."""

    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm1d(1, affine=True)
        self.inp = nn.Conv1d(1, 32, 1)
        self.filt = nn.ModuleList(nn.Conv1d(32, 32, 2, dilation=2 ** i) for i in range(6))
        self.gate = nn.ModuleList(nn.Conv1d(32, 32, 2, dilation=2 ** i) for i in range(6))
        self.res = nn.ModuleList(nn.Conv1d(32, 32, 1) for _ in range(6))
        self.out = nn.Conv1d(32, 8, 1)

    def forward(self, x):
        h = self.inp(self.norm(x))
        skip = 0
        for i, (f, g, r) in enumerate(zip(self.filt, self.gate, self.res)):
            p = nn.functional.pad(h, (2 ** i, 0))
            z = torch.tanh(f(p)) * torch.sigmoid(g(p))
            skip = skip + z
            h = h + r(z)
        return self.out(torch.relu(skip))


class Conv3dAutoencoder(nn.Module):
    """Volumes: Conv3d down, ConvTranspose3d up, AvgPool3d, LeakyReLU."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv3d(1, 16, 3, stride=2, padding=1), nn.LeakyReLU(0.1),
                                 nn.Conv3d(16, 32, 3, stride=2, padding=1), nn.LeakyReLU(0.1))
        self.dec = nn.Sequential(nn.ConvTranspose3d(32, 16, 4, stride=2, padding=1), nn.LeakyReLU(0.1),
                                 nn.ConvTranspose3d(16, 1, 4, stride=2, padding=1), nn.AvgPool3d(3, 1, 1))

    def forward(self, x):
        return self.dec(self.enc(x))


def ids(shape, high, gen):
    return torch.randint(0, high, shape, generator=gen)


# name -> (builder, example inputs(gen) -> tuple of tensors, input names, output names)
NN = {
    "lstm_tagger": (LstmTagger, lambda g: (ids((1, 32), 1000, g),), ["input"], ["logits"]),
    "gru_regressor": (GruRegressor, lambda g: (torch.rand(1, 50, 40, generator=g), torch.rand(2, 1, 128, generator=g)),
                      ["input", "h0"], ["y", "h"]),
    "text_encoder": (TextEncoder, lambda g: (ids((1, 64), 5000, g),), ["input"], ["logits"]),
    "dcgan_generator": (DcganGenerator, lambda g: (torch.randn(1, 100, 1, 1, generator=g),), ["input"], ["image"]),
    "espcn_x3": (Espcn, lambda g: (torch.rand(1, 1, 85, 120, generator=g),), ["input"], ["image"]),
    "unet_small": (UNetSmall, lambda g: (torch.rand(1, 3, 96, 128, generator=g),), ["input"], ["mask"]),
    "wavenet_like": (WaveNetLike, lambda g: (torch.randn(1, 1, 4000, generator=g),), ["input"], ["logits"]),
    "conv3d_autoencoder": (Conv3dAutoencoder, lambda g: (torch.rand(1, 1, 16, 32, 32, generator=g),), ["input"],
                           ["volume"]),
}
