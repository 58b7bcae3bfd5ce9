#!/usr/bin/env bash
# Issue 15: every CUDA measurement in one run (~4-5 min typical, at most ~7 min: per-step time limits;
# one H100/H200, 16 CPU cores).
# Usage (repository root, on the device):  OUT=/some/dir bash verify/bench/device_script.sh
# Writes into $OUT: env.json, nvidia-smi.txt, pip.log, pytest_cuda.txt, bench_samplers_*.{txt,json},
# bench_online_cuda.{txt,json}, gpu_unbiasedness.{txt,json}, steps.log (what ran, how long, exit codes).
set -u
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
STEPS="$OUT/steps.log"
run() {  # run NAME TIMEOUT CMD...: log, time limit, exit code; never abort the script
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  echo "[$(date +%T)] start $name (limit ${limit}s): $*" >>"$STEPS"
  timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  echo "[$(date +%T)] end   $name rc=$rc in $((SECONDS - t0))s" >>"$STEPS"
}

pip install --no-deps --no-build-isolation --no-index -e . >"$OUT/pip.log" 2>&1
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
python - >"$OUT/env.json" 2>&1 <<'EOF'
import json, torch
from verify.hardware import device_record
d = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda, "device": device_record(d)}, indent=1, default=str))
EOF

# Ordered by priority (a cut-short run keeps the first results; every bench writes its JSON row by row).
# 1. fast paths = generic on CUDA (float64, float32), fused samplers, CUDA-graph replay   [~40 s]
run pytest_cuda 70 python -m pytest -p no:benchmark -p no:cacheprovider -q -rs \
  tests/estimators/test_fast_paths.py tests/estimators/test_graphs.py -k "cuda"

# 2. the claim: UORO unbiased at n = 256, T = 16, delta = 0.02 (float32 draws, rounding accounted)  [~60-100 s]
run gpu_unbiasedness 130 python -m verify run --profile full --device cuda --claims device.gpu-unbiasedness \
  --no-report --json "$OUT/gpu_unbiasedness.json"

# 3. roofline: sample-steps/s, GB/s and GFLOP/s vs the card's triad bandwidth and matmul peak (TF32 off)
#    measured in the same run; generic path beside; outputs projected on 32 directions (the claim's form)
#    3a. the must-show sampler: n = 256, T = 4, float64 and float32                              [~60 s]
run bench_samplers_n256_T4_f64 45 python -m verify.bench.samplers --device cuda --ns 256 --ms 1000 10000 100000 \
  --T 4 --samplers uoro uoro-r4 --project 32 --max-s 4 --max-generic-s 8 --json "$OUT/bench_samplers_n256_T4_f64.json"
run bench_samplers_n256_T4_f32 45 python -m verify.bench.samplers --device cuda --ns 256 --ms 1000 10000 100000 \
  --T 4 --samplers uoro uoro-r4 --project 32 --dtype float32 --max-s 4 --max-generic-s 8 \
  --json "$OUT/bench_samplers_n256_T4_f32.json"

#    3b. issue 27: the gated cells of the statistical claims (LSTM, GRU) beside Elman-tanh, fused vs generic  [~40 s]
run bench_samplers_cells_f64 50 python -m verify.bench.samplers --device cuda --cells elman-tanh lstm gru --ns 64 256 \
  --ms 1000 10000 --T 16 --samplers uoro --project 32 --max-s 3 --max-generic-s 4 \
  --json "$OUT/bench_samplers_cells_f64.json"

# 4. batch-1 online runs: fast vs generic; RTRL step eager vs CUDA graph vs its O(n^2 p) product    [~30 s]
run bench_online_cuda 40 python -m verify.bench.online --device cuda --ns 64 256 --steps 64 \
  --json "$OUT/bench_online_cuda.json"

# 5. the grid n in {8, 64, 256, 1024} x M in {1, 1e3, 1e4, 1e5}, T = 16, float64 (as far as 60 s go)
run bench_samplers_grid_f64 60 python -m verify.bench.samplers --device cuda --ns 8 64 256 1024 \
  --samplers uoro uoro-r4 uoro-preact rtrl --ms 1 1000 10000 100000 --T 16 --project 32 --max-s 3 \
  --max-generic-s 4 --json "$OUT/bench_samplers_grid_f64.json"

echo "done; see $STEPS" >>"$STEPS"
