#!/usr/bin/env bash
# The GPU backend's benchmark for a lent GPU machine (issue 37): one release build, then the
# standard scene at N = 64, 128, 256, 512 and the 100k-vertex cloth (317 × 317) on the CPU and
# the GPU in the same run, with the adapter's name. Output: ms/frame, last-frame and peak max
# stretch, penetrations, per backend and size (stderr of `cargo bench --bench gpu`), saved
# under $OUT (or target/gpu-bench) as bench.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-target/gpu-bench}"
mkdir -p "$out"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$out/gpu.txt"
export DRAPE_GPU_BENCH_SIZES="${DRAPE_GPU_BENCH_SIZES:-64,128,256,512,317}"
export DRAPE_GPU_BENCH_ITERATIONS="${DRAPE_GPU_BENCH_ITERATIONS:-4}"
cargo bench --no-default-features --features gpu --bench gpu -- --noplot 2>&1 | tee "$out/bench.log"
