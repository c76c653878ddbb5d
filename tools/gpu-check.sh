#!/usr/bin/env bash
# The GPU machine's check, as one script that ends in under 8 minutes:
# conformance of the CUDA plugin (and a subset under compute-sanitizer),
# golden ids all on the GPU, hybrid runs equal to all-CPU at three budgets,
# the out-of-memory path, the bench figures, and the conformance suite once
# more on the wave64 emulation build.  Everything it prints goes
# to one folder; summary.txt has a line per step (status, seconds).
#
#   tools/gpu-check.sh [KIT]     KIT: what tools/gpu-prepare.sh made (gpu-kit)
#
# Output: $OUT (the device tool's folder) or ./gpu-out.  A step that cannot
# run says "skipped" in the summary; the script's status is 77 when there is
# no CUDA device, 1 when a step failed, else 0.  HC_GPU_CHECK_BUDGET (seconds, default 450) bounds the
# whole run: each step gets at most what is left, and the bench's large
# models are made only while time remains.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
kit=$(cd "${1:-gpu-kit}" && pwd)
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
budget=${HC_GPU_CHECK_BUDGET:-450}
start=$(date +%s)
failed=0

export LD_LIBRARY_PATH="$kit/lib:$kit/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export HOTCOLD_PLUGIN_PATH="$kit/lib/hotcold"
export CK_DEFAULT_TIMEOUT=600
hc="$kit/bin/hotcold"
cuda_so="$kit/lib/hotcold/libhc-cuda.so"

# The tests find their models through the source path they were built with.
src=$(cat "$kit/source-dir")
if [ "$src" != "$root" ] && [ ! -e "$src" ]; then
    mkdir -p "$(dirname "$src")" && ln -s "$root" "$src" ||
        echo "gpu-check: cannot link $src to $root: the tests' model paths will not resolve" >&2
fi

left() { echo $((budget - ($(date +%s) - start))); }

# step NAME TIMEOUT COMMAND...: run it with at most TIMEOUT (and what is
# left) seconds, output in NAME.txt, a line in summary.txt.
step() {
    local name=$1 limit=$2
    shift 2
    local l
    l=$(left)
    if [ "$l" -lt 10 ]; then
        echo "skipped  $name (no time left)" | tee -a "$out/summary.txt"
        return 0
    fi
    [ "$limit" -gt "$l" ] && limit=$l
    local t0 rc
    t0=$(date +%s)
    timeout -k 5 "$limit" "$@" >"$out/$name.txt" 2>&1
    rc=$?
    local dt=$(($(date +%s) - t0))
    local what=passed
    if [ $rc -eq 77 ]; then
        what=skipped
    elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        what="TIMED OUT after ${limit} s"
        failed=1
    elif [ $rc -ne 0 ]; then
        what="FAILED (status $rc)"
        failed=1
    fi
    printf '%-8s %-28s %4d s\n' "$what" "$name" "$dt" | tee -a "$out/summary.txt"
}

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)

: >"$out/summary.txt"
{
    date -u
    nvidia-smi 2>&1 || echo "no nvidia-smi"
    echo "cores: $(nproc)"
    free -g
} >"$out/machine.txt" 2>&1

step devices 30 "$hc" devices
if ! grep -qE '^  cuda:[0-9]' "$out/devices.txt"; then
    echo "skipped  everything else: no CUDA device (devices.txt says why)" | tee -a "$out/summary.txt"
    exit 77
fi
# HOTCOLD_CONF_REQUIRE_LAYER=1: the plugin has every layer op, so every
# case of them must run on the GPU (a refusal fails instead of skipping).
# The whole suite includes the ABI 1.3 selection cases (select_rows,
# matvec_rows_counted, axpy_rows_counted), which op_cost prices, so a
# refusal fails there too.
step conformance 200 env HOTCOLD_CONF_REQUIRE_LAYER=1 "$kit/bin/test_conformance" "$cuda_so"
if [ -n "$sanitizer" ]; then
    for op in matmul matvec_rows axpy_rows attention select_rows; do
        step "memcheck_$op" 90 env CK_RUN_CASE=$op CK_FORK=no "$sanitizer" --tool memcheck \
            --error-exitcode 1 "$kit/bin/test_conformance" "$cuda_so"
    done
    # Shared memory and barriers: the row dots, attention's softmax and
    # select_rows' block-wide scan (80 small calls: seconds).
    for op in matvec_rows attention select_rows; do
        step "racecheck_$op" 90 env CK_RUN_CASE=$op CK_FORK=no "$sanitizer" \
            --tool racecheck --error-exitcode 1 "$kit/bin/test_conformance" "$cuda_so"
    done
else
    echo "skipped  compute-sanitizer (not found)" | tee -a "$out/summary.txt"
fi
# Golden ids all on the GPU (stories260K, relu2M), hybrid relu2M equal to
# all-CPU at budgets of nothing, half and everything, the out-of-memory
# re-solve (HOTCOLD_CUDA_MEMORY_LIMIT), and an all-GPU sparse model that
# selects its rows on the device: exactly one host wait per pass
# (all_gpu_predictor_syncs, all_gpu_oracle_syncs; their figures go to the
# summary).
step hybrid 200 env HOTCOLD_TEST_GPU=cuda "$kit/bin/test_hybrid"
grep -h 'all on the GPU:' "$out/hybrid.txt" 2>/dev/null | sed 's/^/         /' |
    tee -a "$out/summary.txt"
# reglu1M all on the GPU: the same greedy text (stdout) as the CPU's.
for dev in cpu cuda; do
    step "reglu1M_$dev" 30 sh -c '"$1" run -m models/reglu1M.gguf -n 64 --temp 0 \
        -p "Once upon a time" --device "$2" >"$3"' sh "$hc" "$dev" "$out/reglu1M_$dev.out"
done
if [ -s "$out/reglu1M_cpu.out" ] && cmp -s "$out/reglu1M_cpu.out" "$out/reglu1M_cuda.out"; then
    echo "passed   reglu1M_same_text" | tee -a "$out/summary.txt"
else
    echo "FAILED   reglu1M_same_text (reglu1M_cpu.out and reglu1M_cuda.out differ)" |
        tee -a "$out/summary.txt"
    failed=1
fi

# Perplexity on the GPU (every token's logits, hc_context_eval_all) against
# the CPU's on the same text: the same to 1e-3.
for dev in cpu cuda; do
    step "perplexity_$dev" 60 sh -c '"$1" perplexity -m models/stories260K.gguf \
        -f tests/data/corpus/tinystories_valid.txt -c 128 --chunks 20 --device "$2" >"$3"' \
        sh "$hc" "$dev" "$out/perplexity_$dev.out"
done
ppl() { sed -n 's/^Final estimate: PPL = \([0-9.]*\).*/\1/p' "$1" 2>/dev/null; }
p_cpu=$(ppl "$out/perplexity_cpu.out")
p_gpu=$(ppl "$out/perplexity_cuda.out")
if [ -n "$p_cpu" ] && [ -n "$p_gpu" ] &&
    awk -v a="$p_cpu" -v b="$p_gpu" 'BEGIN { d = a - b; exit !(d * d <= (1e-3 * a) ^ 2) }'; then
    echo "passed   perplexity_same (cpu $p_cpu, cuda $p_gpu)" | tee -a "$out/summary.txt"
else
    echo "FAILED   perplexity_same (cpu '$p_cpu', cuda '$p_gpu')" | tee -a "$out/summary.txt"
    failed=1
fi

# The bench: single ops (also at the 7B shape: matmul at 1 and 64 tokens,
# the sparse ops, select_rows, attention), then decode on models made here
# (they cannot travel).
step bench_ops 90 "$hc" bench --ops --device cuda
step bench_ops_7b 90 "$hc" bench --ops --device cuda --shape 7b --type q4_0,f16 -r 2 --mib 1024
models=${HC_GPU_CHECK_MODELS:-/tmp/hc-gpu-models}
mkdir -p "$models"
step mkmodel_tinyllama 60 "$hc" mkmodel --preset tinyllama --type q4_0 --sparsity 0.9 \
    -o "$models/tl.gguf" --force -q
step bench_tinyllama 90 "$hc" bench -m "$models/tl.gguf" --device cuda -p 64 -n 64 -r 2
# The same, every pass issued (no CUDA graph): the launch cost graphs save.
step bench_tinyllama_nographs 90 env HOTCOLD_CUDA_GRAPHS=0 "$hc" bench -m "$models/tl.gguf" \
    --device cuda -p 0 -n 64 -r 2
step bench_tinyllama_cpu 90 "$hc" bench -m "$models/tl.gguf" -p 0 -n 32 -r 1
if [ "$(left)" -gt 150 ]; then
    step mkmodel_7b 120 "$hc" mkmodel --preset 7b --type q4_0 --sparsity 0.9 \
        -o "$models/7b.gguf" --force -q
    [ -s "$models/7b.gguf" ] &&
        step bench_7b 120 "$hc" bench -m "$models/7b.gguf" --device cuda -p 0 -n 32 -r 1
fi

# The paper's comparison in one run: a 13B-shape Q4_0 PWRI file with a budget
# for attention and ~30% of the FFN (4 GiB of its ~7.3), split by neurons
# (PowerInfer) and by layers (llama.cpp's -ngl), and the CPU alone.
if [ "$(left)" -gt 200 ]; then
    step mkmodel_13b 90 "$hc" mkmodel --preset 13b --type q4_0 --sparsity 0.9 \
        -o "$models/13b.gguf" --force -q
    if [ -s "$models/13b.gguf" ]; then
        for split in neurons layers; do
            step "bench_13b_$split" 90 "$hc" bench -m "$models/13b.gguf" --device cuda \
                --vram-budget 4 --split "$split" --sparse predictor -p 0 -n 16 -r 1
        done
        step bench_13b_cpu 90 "$hc" bench -m "$models/13b.gguf" --sparse predictor -p 0 -n 8 -r 1
        grep -h '^predictor' "$out"/bench_13b_*.txt 2>/dev/null | sed 's/^/         /' |
            tee -a "$out/summary.txt"
    fi
fi

# The kernels with 64-lane wavefronts, two warps each (HC_CUDA_EMULATE_WAVE64):
# the ROCm plugin's wave64 paths (gfx90a, gfx906), which no AMD GPU here runs.
# Last, while time remains: the emulation is slow and the figures above come first.
if [ -f "$kit/wave64/libhc-cuda.so" ] && [ "$(left)" -gt 60 ]; then
    step conformance_wave64 200 env HOTCOLD_CONF_REQUIRE_LAYER=1 "$kit/bin/test_conformance" \
        "$kit/wave64/libhc-cuda.so"
else
    echo "skipped  conformance_wave64 (no KIT/wave64 or no time left)" | tee -a "$out/summary.txt"
fi

echo "total $(($(date +%s) - start)) s; output in $out" | tee -a "$out/summary.txt"
exit $failed
