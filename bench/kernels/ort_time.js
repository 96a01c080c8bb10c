// Times ONNX Runtime (npm onnxruntime-node, CPU, graph optimisations "all",
// inter-op 1) on one model, for side-by-side checks of the kernel work in
// bench/kernels (the full A/B comparison is bench/compare's job).
//
//   node bench/kernels/ort_time.js MODEL.onnx NAME=1x3x224x224[:int64] ... [--threads N] [--iters N]
//
// Inputs are uniform random floats in [-1, 1) (or small integers with the
// :int64 suffix). Prints the median, p10 and p90 latency in milliseconds.
'use strict';
const path = require('path');
const ort = require(path.join(__dirname, '..', '..', 'test', 'reference', 'node_modules', 'onnxruntime-node'));

async function main() {
  const args = process.argv.slice(2);
  let threads = 1, iters = 30, warmup = 3;
  const opt = (name) => {
    const i = args.indexOf(name);
    if (i < 0) return null;
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
  threads = Number(opt('--threads') || threads);
  iters = Number(opt('--iters') || iters);
  warmup = Number(opt('--warmup') || warmup);
  const [model, ...specs] = args;
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all', intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
  });
  const feeds = {};
  let seed = 1;
  for (const spec of specs) {
    const [name, rest] = spec.split('=');
    const [dims, type] = rest.split(':');
    const shape = dims.split('x').map(Number);
    const n = shape.reduce((a, b) => a * b, 1);
    if (type === 'int64') {
      const a = new BigInt64Array(n);
      for (let i = 0; i < n; ++i) a[i] = BigInt((i * 7 + seed) % 100);
      feeds[name] = new ort.Tensor('int64', a, shape);
    } else {
      const a = new Float32Array(n);
      let s = seed * 2654435761 >>> 0;
      for (let i = 0; i < n; ++i) {
        s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
        a[i] = (s >>> 8) / 16777216 * 2 - 1;
      }
      feeds[name] = new ort.Tensor('float32', a, shape);
    }
    seed++;
  }
  const t = [], c = [];
  for (let it = -warmup; it < iters; ++it) {
    const a = process.hrtime.bigint(), ca = process.cpuUsage();
    await session.run(feeds);
    const b = process.hrtime.bigint(), cb = process.cpuUsage(ca);
    if (it >= 0) {
      t.push(Number(b - a) / 1e6);
      c.push((cb.user + cb.system) / 1e3);
    }
  }
  t.sort((x, y) => x - y);
  c.sort((x, y) => x - y);
  // CPU time of the process: under contention it counts only the time the
  // run really had a core (the runtime's other threads idle meanwhile).
  console.log(`ort: threads ${threads}  median ${t[t.length >> 1].toFixed(3)} ms  p10 ${t[Math.floor(t.length / 10)].toFixed(3)} ms` +
              `  p90 ${t[Math.floor(t.length * 9 / 10)].toFixed(3)} ms  cpu median ${c[c.length >> 1].toFixed(3)} ms  (${iters} iters)`);
}

main().catch((e) => {
  console.error(`ort_time: ${e.message}`);
  process.exit(1);
});
