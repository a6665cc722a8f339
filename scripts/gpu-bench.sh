#!/usr/bin/env bash
# GPU check in one call (budget: 10 minutes) on a machine with an NVIDIA GPU and driver:
# builds with `--features cuda`, runs the golden tests and the determinism checks (two runs, two
# processes; and the segmentation example's --check-determinism) on CUDA, measures the matmul
# forward's error against the native kernel (TF32 shows up here), runs the per-shape benchmarks
# on CUDA with short measurement times, and prints a short table last.
#
#   scripts/gpu-bench.sh            # results under target/gpu-bench (or $OUT when set)
#
# Everything is built once, in the release profile (tests included), to stay inside the budget.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${OUT:-target/gpu-bench}"
mkdir -p "$OUT_DIR"
export BENCH_QUICK=1            # shorter criterion warm-up/measurement (see benches/)
START=$(date +%s)
stamp() { echo "[$(( $(date +%s) - START )) s] $*"; }
declare -A STATUS

run_step() { # name, command...
    local name=$1; shift
    stamp "$name"
    if "$@" > "$OUT_DIR/$name.log" 2>&1; then STATUS[$name]=pass; else STATUS[$name]="FAIL (see $OUT_DIR/$name.log)"; fi
    tail -n 6 "$OUT_DIR/$name.log"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT_DIR/gpu.txt" 2>&1 || true
run_step build cargo build --release --features cuda --tests --benches --examples
run_step golden cargo test --release --features cuda --test golden cuda
run_step determinism cargo test --release --features cuda --test determinism cuda
run_step example_determinism cargo run --release --features cuda --example segmentation -- \
    --backend cuda --epochs 2 --check-determinism --output-dir "$OUT_DIR/segmentation"
run_step accuracy cargo run --release --features cuda --example matmul_accuracy -- --backend cuda
run_step bench cargo bench --features cuda --bench resize_shapes -- cuda/
run_step report cargo run --release --example bench_report -- --output-dir "$OUT_DIR/report"

echo
echo "=== gpu-bench summary ($(( $(date +%s) - START )) s) ==="
echo "GPU: $(cat "$OUT_DIR/gpu.txt")"
for step in build golden determinism example_determinism accuracy bench report; do
    printf '%-20s %s\n' "$step" "${STATUS[$step]:-not run}"
done
grep -h "worst f32 error" "$OUT_DIR/accuracy.log" 2>/dev/null
grep -h "determinism check" "$OUT_DIR/example_determinism.log" 2>/dev/null | tail -n 1
if [ -f "$OUT_DIR/report/report.md" ]; then
    grep -E '^\| (backend|---|cuda) ' "$OUT_DIR/report/report.md"
fi
