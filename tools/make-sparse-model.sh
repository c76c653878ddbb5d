#!/usr/bin/env bash
# Rebuild models/relu2M.powerinfer.gguf, the tiny PowerInfer model shipped in
# models/, from models/relu2M.gguf with hotcold's own toolchain:
#   1. hotcold profile          activation counts over the training text;
#   2. hotcold train-predictor  per-layer fc1/fc2 (auto rank, the smallest of
#                               16..128 reaching recall 0.97 on a slice of the
#                               training text, else the best), recall and
#                               precision measured on other stories;
#   3. hotcold pack             the PWRI file (ffn_down transposed, predictors,
#                               statistics, threshold 0).
# Every step is deterministic (fixed seed; the result does not depend on the
# thread count), so with the engine build of the commit that made it the
# output is bit for bit the committed file (kernel changes that move float
# rounding change the predictor's bits, not its quality).
#
#   tools/make-sparse-model.sh [OUT]     (default: models/relu2M.powerinfer.gguf)
# Environment: HOTCOLD=path/to/hotcold (default: build/bin/hotcold),
#              THREADS=N (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."

hotcold=${HOTCOLD:-build/bin/hotcold}
threads=${THREADS:-$(nproc)}
out=${1:-models/relu2M.powerinfer.gguf}
model=models/relu2M.gguf
train=tests/data/corpus/tinystories_train.txt
valid=tests/data/corpus/tinystories_valid.txt

if [ ! -x "$hotcold" ]; then
    echo "make-sparse-model: $hotcold not found; build first (cmake -S . -B build && cmake --build build)" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== profile: $train ==" >&2
"$hotcold" profile -m "$model" --text "$train" -t "$threads" -o "$work/relu2M.activation.gguf"

echo "== train-predictor: $train (held-out: $valid) ==" >&2
"$hotcold" train-predictor -m "$model" --text "$train" --valid "$valid" \
    --max-samples 32768 --rank auto --target-recall 0.97 --threshold 0 --seed 1234 \
    -t "$threads" -o "$work/relu2M.predictor.gguf"

echo "== pack: $out ==" >&2
"$hotcold" pack -m "$model" --predictor "$work/relu2M.predictor.gguf" \
    --profile "$work/relu2M.activation.gguf" --force -o "$out"

echo "== check: greedy 200 tokens, predictor mode with --sparse-check ==" >&2
"$hotcold" run -m "$out" --temp 0 -n 200 --sparse-check -t "$threads"
