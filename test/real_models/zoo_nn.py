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


class GptDecoder(nn.Module):
    """Text generation: token + learned position embeddings, 2 pre-norm
    decoder blocks with a causal mask (triu -> masked_fill(-inf)), the
    tanh form of GELU, tied output projection."""

    def __init__(self, vocab=2000, d=128, heads=4, layers=2, ctx=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.heads = heads
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(d), "qkv": nn.Linear(d, 3 * d), "proj": nn.Linear(d, d),
                "ln2": nn.LayerNorm(d), "fc": nn.Linear(d, 4 * d), "out": nn.Linear(4 * d, d)}))
        self.lnf = nn.LayerNorm(d)

    def forward(self, ids):
        b, t = ids.shape
        pos = torch.arange(t, device=ids.device).unsqueeze(0)
        x = self.tok(ids) + self.pos(pos)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        for blk in self.blocks:
            q, k, v = blk["qkv"](blk["ln1"](x)).chunk(3, dim=-1)
            hd = q.shape[-1] // self.heads
            q, k, v = (z.reshape(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / hd ** 0.5
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, -1)
            x = x + blk["proj"](y)
            x = x + blk["out"](nn.functional.gelu(blk["fc"](blk["ln2"](x)), approximate="tanh"))
        return self.lnf(x) @ self.tok.weight.t()


class ConformerBlock(nn.Module):
    """Speech recognition: a Conformer block (half-step feed-forward with
    SiLU, multi-head self-attention (nn.MultiheadAttention), a convolution
    module with GLU, depthwise Conv1d, BatchNorm1d and SiLU) on 80-band
    features subsampled by two stride-2 Conv2d."""

    def __init__(self, d=144, heads=4):
        super().__init__()
        self.sub = nn.Sequential(nn.Conv2d(1, d, 3, 2), nn.ReLU(), nn.Conv2d(d, d, 3, 2), nn.ReLU())
        self.lin = nn.Linear(d * 19, d)
        self.ff1 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
        self.ln_att = nn.LayerNorm(d)
        self.att = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln_conv = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, 15, padding=7, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)
        self.ff2 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
        self.ln_out = nn.LayerNorm(d)
        self.head = nn.Linear(d, 32)

    def forward(self, feats):  # (1, T, 80)
        x = self.sub(feats.unsqueeze(1))  # (1, d, T', 19)
        b, c, t, f = x.shape
        x = self.lin(x.permute(0, 2, 1, 3).reshape(b, t, c * f))
        x = x + 0.5 * self.ff1(x)
        h = self.ln_att(x)
        x = x + self.att(h, h, h, need_weights=False)[0]
        h = self.ln_conv(x).transpose(1, 2)
        h = nn.functional.glu(self.pw1(h), dim=1)
        h = self.pw2(nn.functional.silu(self.bn(self.dw(h))))
        x = x + h.transpose(1, 2)
        x = self.ln_out(x + 0.5 * self.ff2(x))
        return self.head(x).log_softmax(-1)


class HifiganLike(nn.Module):
    """Speech synthesis: a HiFi-GAN-style generator (mel -> waveform):
    Conv1d, ConvTranspose1d upsampling by 8 and 4, multi-receptive-field
    residual blocks of dilated Conv1d with LeakyReLU, tanh output."""

    def __init__(self, mels=80, ch=128):
        super().__init__()
        self.pre = nn.Conv1d(mels, ch, 7, padding=3)
        self.ups = nn.ModuleList([nn.ConvTranspose1d(ch, ch // 2, 16, 8, padding=4),
                                  nn.ConvTranspose1d(ch // 2, ch // 4, 8, 4, padding=2)])
        self.res = nn.ModuleList()
        for c in (ch // 2, ch // 4):
            self.res.append(nn.ModuleList(nn.Conv1d(c, c, 3, dilation=dl, padding=dl) for dl in (1, 3, 5)))
        self.post = nn.Conv1d(ch // 4, 1, 7, padding=3)

    def forward(self, mel):
        x = self.pre(mel)
        for up, convs in zip(self.ups, self.res):
            x = up(nn.functional.leaky_relu(x, 0.1))
            for conv in convs:
                x = x + conv(nn.functional.leaky_relu(x, 0.1))
        return torch.tanh(self.post(nn.functional.leaky_relu(x, 0.1)))


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
    "gpt_decoder": (GptDecoder, lambda g: (ids((1, 64), 2000, g),), ["input"], ["logits"]),
    "conformer_block": (ConformerBlock, lambda g: (torch.randn(1, 200, 80, generator=g),), ["input"], ["logprobs"]),
    "hifigan_like": (HifiganLike, lambda g: (torch.randn(1, 80, 50, generator=g),), ["input"], ["audio"]),
}
