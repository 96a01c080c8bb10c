// The ONNX Runtime side of the memory benchmark (bench/memory/memory_bench.py,
// docs/memory.md): the counterpart of harness-mem-probe.
//
//   node bench/memory/ort_probe.js MODEL.onnx RUNS THREADS MANIFEST.json [--no-arena]
//
// Creates a CPU session (graph optimisations "all", the default memory arena
// and memory patterns on: ONNX Runtime's production defaults; --no-arena
// turns the CPU memory arena off, so every tensor is its own allocation),
// allocates the
// inputs and the outputs (the signature comes from the Harness manifest of
// the same model, so both engines see the same shapes), fills the inputs with
// the values harness-mem-probe uses, then runs RUNS times (0 = load only)
// writing into the preallocated outputs. Around the runs it resets the peak-RSS
// counter (/proc/self/clear_refs) and prints peak minus the resident set before
// them: the memory the inference itself needed (activations, ONNX Runtime's
// arena growth and any scratch). /usr/bin/time -v reports the whole process.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, '..', '..', 'test', 'reference', 'node_modules', 'onnxruntime-node'));

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array, uint8: Uint8Array,
  int8: Int8Array, bool: Uint8Array,
};

// Same values as harness-mem-probe's fill(): a hash ramp for float32, zeros otherwise.
function makeTensor(spec, fillValues) {
  const Arr = ARRAYS[spec.dtype];
  if (!Arr) throw new Error(`unsupported dtype ${spec.dtype}`);
  const n = spec.shape.reduce((a, b) => a * b, 1);
  const data = new Arr(n);
  if (fillValues && spec.dtype === 'float32') {
    for (let i = 0; i < n; ++i) data[i] = Number((BigInt(i) * 2654435761n) % 4294967296n % 1000n) / 1000 - 0.5;
  }
  return new ort.Tensor(spec.dtype, data, spec.shape);
}

// A line of /proc/self/status in KiB ("VmHWM", "VmRSS").
function statusKib(key) {
  const m = new RegExp(`${key}:\\s*(\\d+)`).exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : -1;
}

async function main() {
  const args = process.argv.slice(2);
  const noArena = args.includes('--no-arena');
  const [model, runsText, threadsText, manifestPath] = args.filter((a) => a !== '--no-arena');
  if (!manifestPath) throw new Error('usage: ort_probe.js MODEL.onnx RUNS THREADS MANIFEST.json');
  const runs = Number(runsText);
  const threads = Number(threadsText);
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all', intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
    enableCpuMemArena: !noArena, enableMemPattern: true,
  });
  const feeds = {};
  manifest.inputs.forEach((spec, i) => { feeds[session.inputNames[i]] = makeTensor(spec, true); });
  const fetches = {};
  manifest.outputs.forEach((spec, i) => { fetches[session.outputNames[i]] = makeTensor(spec, false); });
  const loadPeak = statusKib('VmHWM');
  let reset = true;
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5'); // peak RSS := current RSS (Linux >= 4.0)
  } catch (e) {
    reset = false;
  }
  const before = statusKib('VmRSS');
  for (let r = 0; r < runs; ++r) await session.run(feeds, fetches);
  const peak = statusKib('VmHWM');
  console.log(`load_peak_kib ${loadPeak}\nrss_before_kib ${before}\npeak_after_kib ${peak}\n` +
              `inference_kib ${reset ? peak - before : -1}`);
}

main().catch((e) => {
  console.error(`ort_probe: ${e.message}`);
  process.exit(1);
});
