// Runs an ONNX model with ONNX Runtime (CPU) on .npy inputs and writes .npy
// outputs: the reference Harness is compared against.
//
//   node test/reference/ort_run.js MODEL.onnx OUTDIR NAME=input.npy ... [--threads N] [--opt LEVEL]
//
// Writes OUTDIR/output_<i>.npy in the model's output order. Graph
// optimisations are on (level "all"), as in production use; --opt disabled
// (or basic, extended) runs the graph more as written, e.g. a QDQ model's
// QuantizeLinear/DequantizeLinear in float instead of ORT's integer kernels.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const DTYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file} is not .npy`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const [type, Arr] = DTYPES[descr] || (() => { throw new Error(`unsupported dtype ${descr}`); })();
  const data = buf.subarray(hstart + hlen);
  const copy = new Uint8Array(data.length);
  copy.set(data);
  return new ort.Tensor(type, new Arr(copy.buffer, 0, data.length / Arr.BYTES_PER_ELEMENT), shape);
}

function writeNpy(file, tensor) {
  const descr = Object.keys(DTYPES).find((k) => DTYPES[k][0] === tensor.type);
  if (!descr) throw new Error(`cannot write ${tensor.type}`);
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${tensor.dims.join(', ')}${tensor.dims.length === 1 ? ',' : ''}), }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), data]));
}

async function main() {
  const args = process.argv.slice(2);
  let threads = 1;
  const ti = args.indexOf('--threads');
  if (ti >= 0) {
    threads = Number(args[ti + 1]);
    args.splice(ti, 2);
  }
  let level = 'all';
  const oi = args.indexOf('--opt');
  if (oi >= 0) {
    level = args[oi + 1];
    args.splice(oi, 2);
  }
  const [model, outDir, ...inputs] = args;
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: level, intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
  });
  const feeds = {};
  for (const spec of inputs) {
    const eq = spec.lastIndexOf('=');
    feeds[spec.slice(0, eq)] = readNpy(spec.slice(eq + 1));
  }
  const results = await session.run(feeds);
  fs.mkdirSync(outDir, { recursive: true });
  session.outputNames.forEach((name, i) => writeNpy(path.join(outDir, `output_${i}.npy`), results[name]));
}

main().catch((e) => {
  console.error(`ort_run: ${e.message}`);
  process.exit(1);
});
