#!/usr/bin/python3
"""Generates ONNX backend-style test folders for RNN, GRU and LSTM cases the
ONNX suite does not cover: bidirectional and reverse directions with
sequence_lens (including 0 and full lengths), layout=1, initial states,
peepholes, clip, input_forget, linear_before_reset, every activation
function with activation_alpha/activation_beta, omitted outputs, derived
hidden_size, constant weights (and a fully constant node, which constant
folding evaluates), opsets 7/14/22, float64, float16 and bfloat16.
Expected outputs come from the numpy reference below, computed in float64.

usage: make_recurrent_cases.py OUTPUT_DIR
then:  harness-test OUTPUT_DIR/*
"""
import numpy as np
from onnx import helper

import casekit
from casekit import BF16, bf16_round

RNG = np.random.default_rng(2024)


def write_case(root, name, nodes, inputs, outputs, opset, initializers=None):
    """inputs/outputs/initializers: lists of (name, value)."""
    casekit.write_case(root, name, nodes, inputs, outputs, opset, initializers or (),
                       producer="make_recurrent_cases")


# ---- numpy reference ---------------------------------------------------------

# name -> (uses alpha, uses beta, default alpha, default beta)
ACTS = {
    "relu": (False, False, 0.0, 0.0),
    "tanh": (False, False, 0.0, 0.0),
    "sigmoid": (False, False, 0.0, 0.0),
    "affine": (True, True, 1.0, 0.0),
    "leakyrelu": (True, False, 0.01, 0.0),
    "thresholdedrelu": (True, False, 1.0, 0.0),
    "scaledtanh": (True, True, 1.0, 1.0),
    "hardsigmoid": (True, True, 0.2, 0.5),
    "elu": (True, False, 1.0, 0.0),
    "softsign": (False, False, 0.0, 0.0),
    "softplus": (False, False, 0.0, 0.0),
}

DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def act_fn(name, alpha, beta):
    name = name.lower()
    if name == "relu":
        return lambda x: np.maximum(x, 0)
    if name == "tanh":
        return np.tanh
    if name == "sigmoid":
        return lambda x: 1 / (1 + np.exp(-x))
    if name == "affine":
        return lambda x: alpha * x + beta
    if name == "leakyrelu":
        return lambda x: np.where(x >= 0, x, alpha * x)
    if name == "thresholdedrelu":
        return lambda x: np.where(x > alpha, x, 0)
    if name == "scaledtanh":
        return lambda x: alpha * np.tanh(beta * x)
    if name == "hardsigmoid":
        return lambda x: np.clip(alpha * x + beta, 0, 1)
    if name == "elu":
        return lambda x: np.where(x >= 0, x, alpha * (np.exp(x) - 1))
    if name == "softsign":
        return lambda x: x / (1 + np.abs(x))
    if name == "softplus":
        return lambda x: np.log1p(np.exp(x))
    raise ValueError(name)


def parse_acts(op, D, names, alphas, betas):
    """Per direction lists of activation functions; alpha/beta are consumed
    in order by the functions that take them (as ONNX Runtime does)."""
    per = len(DEFAULT_ACTS[op])
    names = list(names) if names else DEFAULT_ACTS[op] * D
    if len(names) == per and D == 2:
        names = names * 2
        shared = True
    else:
        shared = False
    alphas, betas = list(alphas or []), list(betas or [])
    out = []
    for i, nm in enumerate(names):
        if shared and i >= per:
            out.append(out[i - per])
            continue
        ua, ub, da, db = ACTS[nm.lower()]
        a = alphas.pop(0) if ua and alphas else da
        b = betas.pop(0) if ub and betas else db
        out.append(act_fn(nm, a, b))
    return [out[d * per:(d + 1) * per] for d in range(D)]


def reference(op, X, W, R, B=None, seq=None, h0=None, c0=None, P=None, direction="forward", layout=0, clip=None,
              lbr=0, input_forget=0, activations=None, alphas=None, betas=None):
    X, W, R = [np.asarray(v, np.float64) for v in (X, W, R)]
    if layout:
        X = X.swapaxes(0, 1)
        h0 = None if h0 is None else np.asarray(h0).swapaxes(0, 1)
        c0 = None if c0 is None else np.asarray(c0).swapaxes(0, 1)
    S, Bt, _ = X.shape
    D, H = W.shape[0], R.shape[-1]
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    B = np.zeros((D, 2 * G * H)) if B is None else np.asarray(B, np.float64)
    acts = parse_acts(op, D, activations, alphas, betas)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    Y = np.zeros((S, D, Bt, H))
    Yh = np.zeros((D, Bt, H))
    Yc = np.zeros((D, Bt, H))
    for d in range(D):
        rev = direction == "reverse" or d == 1
        Wd, Rd, wb, rb = W[d], R[d], B[d, :G * H], B[d, G * H:]
        f = acts[d]
        for b in range(Bt):
            L = S if seq is None else int(min(max(seq[b], 0), S))
            h = np.zeros(H) if h0 is None else np.asarray(h0, np.float64)[d, b].copy()
            c = np.zeros(H) if c0 is None else np.asarray(c0, np.float64)[d, b].copy()
            for t in (range(S - 1, -1, -1) if rev else range(S)):
                if t >= L:
                    continue
                x = X[t, b]
                if op == "RNN":
                    h = f[0](cl(Wd @ x + Rd @ h + wb + rb))
                elif op == "GRU":
                    xw = Wd @ x
                    z = f[0](cl(xw[:H] + Rd[:H] @ h + wb[:H] + rb[:H]))
                    r = f[0](cl(xw[H:2 * H] + Rd[H:2 * H] @ h + wb[H:2 * H] + rb[H:2 * H]))
                    if lbr:
                        hh = f[1](cl(xw[2 * H:] + r * (Rd[2 * H:] @ h + rb[2 * H:]) + wb[2 * H:]))
                    else:
                        hh = f[1](cl(xw[2 * H:] + Rd[2 * H:] @ (r * h) + rb[2 * H:] + wb[2 * H:]))
                    h = (1 - z) * hh + z * h
                else:
                    gates = Wd @ x + Rd @ h + wb + rb
                    gi, go, gf, gc = np.split(gates, 4)
                    pi, po, pf = (np.zeros(H),) * 3 if P is None else np.split(np.asarray(P, np.float64)[d], 3)
                    i = f[0](cl(gi + pi * c))
                    fg = 1 - i if input_forget else f[0](cl(gf + pf * c))
                    cc = f[1](cl(gc))
                    c = fg * c + i * cc
                    o = f[0](cl(go + po * c))
                    h = o * f[2](c)
                Y[t, d, b] = h
            Yh[d, b] = h
            Yc[d, b] = c
    if layout:
        Y = Y.transpose(2, 0, 1, 3)
        Yh = Yh.swapaxes(0, 1)
        Yc = Yc.swapaxes(0, 1)
    return Y, Yh, Yc


# ---- case builder ------------------------------------------------------------


def rnn_case(root, name, op, S, Bt, I, H, direction="forward", layout=0, dtype=np.float32, opset=14, bias=True,
             seq=None, init_h=False, init_c=False, peep=False, outputs=("Y", "Y_h", "Y_c"), const_weights=False,
             all_const=False, hidden_attr=True, scale=0.5, **attrs):
    """Builds one node with the given optional inputs; outputs not listed
    are omitted (empty names)."""
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    D = 2 if direction == "bidirectional" else 1
    bf16 = dtype == "bfloat16"
    npdt = np.float32 if bf16 else dtype

    def rand(*shape):
        v = (scale * RNG.standard_normal(shape)).astype(npdt)
        return bf16_round(v) if bf16 else v

    X = rand(*((Bt, S, I) if layout else (S, Bt, I)))
    W, R = rand(D, G * H, I), rand(D, G * H, H)
    vals = {"X": X, "W": W, "R": R}
    if bias:
        vals["B"] = rand(D, 2 * G * H)
    if seq is not None:
        vals["sequence_lens"] = np.asarray(seq, np.int32)
    state_shape = (Bt, D, H) if layout else (D, Bt, H)
    if init_h:
        vals["initial_h"] = rand(*state_shape)
    if init_c:
        vals["initial_c"] = rand(*state_shape)
    if peep:
        vals["P"] = rand(D, 3 * H)
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    last = max(i for i, k in enumerate(order) if k in vals)
    in_names = [k if k in vals else "" for k in order[:last + 1]]

    node_attrs = dict(attrs)
    if direction != "forward":
        node_attrs["direction"] = direction
    if layout:
        node_attrs["layout"] = layout
    if hidden_attr:
        node_attrs["hidden_size"] = H
    out_order = ["Y", "Y_h", "Y_c"][:2 if op != "LSTM" else 3]
    lastout = max(i for i, k in enumerate(out_order) if k in outputs)
    out_names = [k if k in outputs else "" for k in out_order[:lastout + 1]]
    node = helper.make_node(op, in_names, out_names, **node_attrs)

    ref = reference(op, X, W, R, vals.get("B"), vals.get("sequence_lens"), vals.get("initial_h"),
                    vals.get("initial_c"), vals.get("P"), direction=direction, layout=layout,
                    clip=attrs.get("clip"), lbr=attrs.get("linear_before_reset", 0),
                    input_forget=attrs.get("input_forget", 0), activations=attrs.get("activations"),
                    alphas=attrs.get("activation_alpha"), betas=attrs.get("activation_beta"))
    wrap = (lambda v: BF16(v)) if bf16 else (lambda v: v)
    outs = [(k, wrap(ref[i].astype(npdt))) for i, k in enumerate(out_order) if k in outputs]
    feed = [(k, wrap(vals[k]) if k != "sequence_lens" else vals[k]) for k in order if k in vals]
    if all_const:
        inputs, inits = [], feed
    elif const_weights:
        inputs = [(k, v) for k, v in feed if k in ("X", "sequence_lens", "initial_h", "initial_c")]
        inits = [(k, v) for k, v in feed if k not in ("X", "sequence_lens", "initial_h", "initial_c")]
    else:
        inputs, inits = feed, []
    write_case(root, name, [node], inputs, outs, opset, inits)


def main():
    root = casekit.out_dir(__doc__)
    seq4 = [5, 2, 0, 3]

    # RNN
    rnn_case(root, "hc_rnn_bidir_seqlens", "RNN", 5, 4, 3, 6, direction="bidirectional", seq=seq4, init_h=True)
    rnn_case(root, "hc_rnn_reverse_relu", "RNN", 4, 2, 5, 7, direction="reverse", activations=["Relu"])
    rnn_case(root, "hc_rnn_layout1_bidir", "RNN", 5, 4, 3, 6, direction="bidirectional", layout=1, seq=seq4,
             init_h=True)
    rnn_case(root, "hc_rnn_affine", "RNN", 3, 2, 4, 5, direction="bidirectional",
             activations=["Affine", "ScaledTanh"], activation_alpha=[0.7, 1.5], activation_beta=[0.1, 0.4])
    rnn_case(root, "hc_rnn_opset7_clip", "RNN", 4, 3, 4, 5, opset=7, clip=0.6, init_h=True, scale=1.5)
    rnn_case(root, "hc_rnn_f64", "RNN", 6, 3, 4, 9, direction="bidirectional", dtype=np.float64, seq=[6, 4, 1],
             init_h=True)
    rnn_case(root, "hc_rnn_bidir_all_lens0", "RNN", 3, 2, 4, 5, direction="bidirectional", seq=[0, 0], init_h=True)
    rnn_case(root, "hc_rnn_no_hidden_attr_yh_only", "RNN", 4, 2, 3, 5, hidden_attr=False, outputs=("Y_h",))

    # GRU
    rnn_case(root, "hc_gru_bidir_seqlens_lbr", "GRU", 5, 4, 3, 6, direction="bidirectional", seq=seq4,
             init_h=True, linear_before_reset=1)
    rnn_case(root, "hc_gru_bidir_seqlens", "GRU", 5, 4, 3, 6, direction="bidirectional", seq=seq4, init_h=True)
    rnn_case(root, "hc_gru_reverse_clip", "GRU", 4, 2, 5, 7, direction="reverse", clip=0.5, scale=1.5)
    rnn_case(root, "hc_gru_layout1", "GRU", 4, 3, 5, 6, layout=1, init_h=True, seq=[4, 1, 3])
    rnn_case(root, "hc_gru_layout1_lbr_reverse", "GRU", 4, 3, 5, 6, layout=1, direction="reverse",
             linear_before_reset=1, seq=[2, 4, 3])
    rnn_case(root, "hc_gru_acts", "GRU", 4, 2, 3, 5, direction="bidirectional",
             activations=["HardSigmoid", "Softsign", "LeakyRelu", "Elu"], activation_alpha=[0.3, 0.05, 0.8],
             activation_beta=[0.45])
    rnn_case(root, "hc_gru_opset7_lbr", "GRU", 3, 2, 4, 5, opset=7, linear_before_reset=1, init_h=True)
    rnn_case(root, "hc_gru_f64_lbr", "GRU", 5, 2, 7, 8, dtype=np.float64, linear_before_reset=1,
             direction="bidirectional", init_h=True, seq=[3, 5])
    rnn_case(root, "hc_gru_f16", "GRU", 4, 2, 6, 5, dtype=np.float16, init_h=True)
    rnn_case(root, "hc_gru_const_weights_wide", "GRU", 7, 3, 50, 37, const_weights=True, seq=[7, 6, 2],
             scale=0.2)
    rnn_case(root, "hc_gru_lbr_wide_bidir", "GRU", 5, 3, 45, 37, direction="bidirectional", const_weights=True,
             linear_before_reset=1, init_h=True, scale=0.2)
    rnn_case(root, "hc_gru_seq0", "GRU", 0, 3, 4, 5, init_h=True)

    # LSTM
    rnn_case(root, "hc_lstm_bidir_peep_seqlens", "LSTM", 5, 4, 3, 6, direction="bidirectional", seq=seq4,
             init_h=True, init_c=True, peep=True)
    rnn_case(root, "hc_lstm_clip_input_forget", "LSTM", 4, 3, 4, 5, clip=0.7, input_forget=1, peep=True,
             init_c=True, scale=1.5)
    rnn_case(root, "hc_lstm_layout1_bidir", "LSTM", 5, 4, 3, 6, direction="bidirectional", layout=1, seq=seq4,
             init_h=True, init_c=True, peep=True)
    rnn_case(root, "hc_lstm_reverse_acts", "LSTM", 4, 2, 3, 5, direction="reverse",
             activations=["HardSigmoid", "ThresholdedRelu", "Softplus"], activation_alpha=[0.25, 0.1],
             activation_beta=[0.55])
    rnn_case(root, "hc_lstm_bidir_shared_acts", "LSTM", 4, 2, 3, 5, direction="bidirectional",
             activations=["Sigmoid", "Relu", "Softsign"])
    rnn_case(root, "hc_lstm_opset7_yc_only", "LSTM", 3, 2, 4, 5, opset=7, outputs=("Y_c",), init_h=True,
             init_c=True)
    rnn_case(root, "hc_lstm_no_bias_y_only", "LSTM", 3, 2, 4, 5, bias=False, outputs=("Y",), hidden_attr=False)
    rnn_case(root, "hc_lstm_f64_bidir", "LSTM", 6, 3, 5, 7, direction="bidirectional", dtype=np.float64,
             seq=[6, 0, 4], init_h=True, init_c=True, peep=True)
    rnn_case(root, "hc_lstm_f16", "LSTM", 4, 2, 6, 5, dtype=np.float16, peep=True, init_c=True)
    rnn_case(root, "hc_lstm_bf16_opset22", "LSTM", 4, 2, 6, 5, dtype="bfloat16", opset=22, init_h=True)
    rnn_case(root, "hc_lstm_const_weights_wide", "LSTM", 6, 3, 40, 33, direction="bidirectional",
             const_weights=True, seq=[6, 3, 5], init_h=True, init_c=True, scale=0.2)
    # More batch entries than one recurrence task's block (8): blocks of 8 and 3.
    # 70 rows of X: the tiled projection's column chunks of 64 and a ragged
    # 6 (AVX-512; 32 + 32 + 6 on AVX2), without bias, and GRU's Rbh kept for
    # the recurrence in layout 1.
    rnn_case(root, "hc_lstm_long_seq_no_bias", "LSTM", 70, 1, 24, 20, direction="bidirectional", bias=False,
             init_h=True)
    rnn_case(root, "hc_gru_long_seq_layout1_lbr", "GRU", 35, 2, 16, 12, layout=1, linear_before_reset=1,
             direction="bidirectional", seq=[35, 20])
    rnn_case(root, "hc_lstm_batch11_bidir_lens", "LSTM", 3, 11, 4, 6, direction="bidirectional",
             seq=[3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1], init_h=True, init_c=True)
    rnn_case(root, "hc_lstm_batch1_bidir_lens", "LSTM", 6, 1, 4, 5, direction="bidirectional", seq=[4], init_h=True,
             init_c=True)
    rnn_case(root, "hc_lstm_all_const_folded", "LSTM", 3, 2, 4, 5, all_const=True, direction="bidirectional",
             seq=[3, 1], init_h=True, init_c=True, peep=True)


if __name__ == "__main__":
    main()
