// ONNX Runtime side of the Harness/ORT comparison (bench/compare/compare.py):
// loads a model in onnxruntime-node (CPU, graph optimisations "all", the
// given intra-op threads, one inter-op thread, sequential execution) and
// times session.run.
//
//   node bench/compare/ort_bench.js MODEL.onnx [--threads N] [--warmup W] [--input NAME=FILE.npy ...]
//        [--iters N | --serve] [--profile PREFIX]
//
// --serve answers stdin lines "run K" with one JSON line {"times_ns": [...]}
// (the protocol of `harness-bench --serve`), so the driver can interleave the
// two engines without reloading either; otherwise it prints one JSON object
// with the median of --iters runs. Inputs without a file are uniform [0,1)
// float32 (zeros for other types). --profile PREFIX turns on ORT's own
// profiler for the timed runs (warm-up included: ORT cannot start it later)
// and writes its Chrome-trace JSON to PREFIX*.json; the path is printed as
// "profile" (bench/compare/layer_compare.py reads it). Times include the Node binding's cost of
// a run, which is what a Node user of ONNX Runtime pays.
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const ort = require(path.join(__dirname, '..', '..', 'test', 'reference', 'node_modules', 'onnxruntime-node'));

const DTYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array], '|b1': ['bool', Uint8Array],
};
const ARRAYS = { float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  uint8: Uint8Array, int8: Int8Array, bool: Uint8Array };

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

// A tensor for an input without a file, from the model's input metadata.
function syntheticInput(meta) {
  const dims = meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
  const n = dims.reduce((a, b) => a * b, 1);
  const type = meta.type || 'float32';
  const Arr = ARRAYS[type];
  if (!Arr) throw new Error(`input ${meta.name}: no synthetic data for ${type}; pass --input`);
  const data = new Arr(n);
  if (type === 'float32' || type === 'float64') for (let i = 0; i < n; ++i) data[i] = Math.random();
  return new ort.Tensor(type, data, dims);
}

async function timeRuns(session, feeds, k) {
  const t = new Array(k);
  for (let i = 0; i < k; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    t[i] = Number(process.hrtime.bigint() - t0);
  }
  return t;
}

async function main() {
  const args = process.argv.slice(2);
  const opt = { threads: 1, warmup: 10, iters: 100, serve: false, inputs: [], profile: null };
  let model = null;
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    if (a === '--threads') opt.threads = Number(args[++i]);
    else if (a === '--warmup') opt.warmup = Number(args[++i]);
    else if (a === '--iters') opt.iters = Number(args[++i]);
    else if (a === '--input') opt.inputs.push(args[++i]);
    else if (a === '--serve') opt.serve = true;
    else if (a === '--profile') opt.profile = args[++i];
    else if (!model) model = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  if (!model) throw new Error('usage: ort_bench.js MODEL.onnx [--threads N] [--warmup W] [--input NAME=F] [--iters N | --serve]');
  const sessionOptions = {
    graphOptimizationLevel: 'all', intraOpNumThreads: opt.threads, interOpNumThreads: 1, executionMode: 'sequential',
  };
  if (opt.profile) Object.assign(sessionOptions, { enableProfiling: true, profileFilePrefix: opt.profile });
  const session = await ort.InferenceSession.create(model, sessionOptions);
  const feeds = {};
  for (const spec of opt.inputs) {
    const eq = spec.lastIndexOf('=');
    feeds[spec.slice(0, eq)] = readNpy(spec.slice(eq + 1));
  }
  const metas = session.inputMetadata || [];
  session.inputNames.forEach((name, i) => {
    if (!feeds[name]) {
      if (!metas[i] || !metas[i].shape) throw new Error(`input ${name}: pass --input (no metadata in this ORT)`);
      feeds[name] = syntheticInput({ name, ...metas[i] });
    }
  });
  await timeRuns(session, feeds, opt.warmup);
  if (!opt.serve) {
    const t = (await timeRuns(session, feeds, opt.iters)).sort((a, b) => a - b);
    const median = t.length % 2 ? t[(t.length - 1) / 2] : (t[t.length / 2 - 1] + t[t.length / 2]) / 2;
    const result = { model, threads: opt.threads, iters: opt.iters, median_ms: median / 1e6 };
    if (opt.profile) {
      session.endProfiling();
      const dir = path.dirname(path.resolve(opt.profile));
      const base = path.basename(opt.profile);
      // ORT appends a timestamp to the prefix; the newest such file is this run's.
      const files = fs.readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.json'))
        .map((f) => path.join(dir, f)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
      result.profile = files[0] || null;
    }
    console.log(JSON.stringify(result));
    return;
  }
  process.stdout.write('{"ready": true}\n');
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (line.startsWith('quit')) break;
    const m = /^run (\d+)/.exec(line);
    if (!m) {
      process.stdout.write('{"error": "expected \'run K\' or \'quit\'"}\n');
      continue;
    }
    const t = await timeRuns(session, feeds, Number(m[1]));
    process.stdout.write(`{"times_ns": [${t.join(', ')}]}\n`);
  }
  rl.close();
}

main().catch((e) => {
  console.error(`ort_bench: ${e.message}`);
  process.exit(1);
});
