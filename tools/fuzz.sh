#!/usr/bin/env bash
# Fuzz hotcold's file readers with libFuzzer (+ASan+UBSan).
#
#   tools/fuzz.sh [gguf|pt|all] [seconds per target]     (default: all, 60)
#
#   gguf  the GGUF/PWRI reader (core/format/gguf.c), seeded from the repo's models'
#         first 64 KiB (header, metadata, tensor infos) and from small files
#         written by the GGUF writer, with tests/fuzz/gguf.dict
#   pt    the torch .pt reader (core/format/torch_pt.c), seeded from tests/data/pt
#
# CI runs `tools/fuzz.sh all 30` on every submission, so the targets keep
# building; a long run is `tools/fuzz.sh gguf 3600` (FUZZ_JOBS=N for N
# workers).  Builds tests/fuzz in build-fuzz with clang.  Each target's corpus
# persists in build-fuzz/fuzz-<target>/corpus between runs; crashes land in
# build-fuzz/fuzz-<target>/artifacts and make the script exit non-zero.
# Env: CC (default clang-14 or clang), BUILD_DIR (default build-fuzz),
# FUZZ_JOBS (default 1).
set -euo pipefail

which_targets=${1:-all}
secs=${2:-60}
case "$which_targets" in
  gguf|pt) targets=("$which_targets") ;;
  all) targets=(gguf pt) ;;
  *) echo "usage: tools/fuzz.sh [gguf|pt|all] [seconds per target]" >&2; exit 2 ;;
esac
if ! [[ "$secs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: seconds must be a positive integer, got '$secs'" >&2
  exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
cc=${CC:-$(command -v clang-14 || command -v clang || true)}
if [[ -z "$cc" ]]; then
  echo "fuzz: clang not found (install clang and libclang-rt-14-dev)" >&2
  exit 1
fi

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER="$cc" -DHC_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHC_CUDA=OFF -DHC_ROCM=OFF -DHC_VULKAN=OFF >/dev/null
cmake --build "$build" --target fuzz_gguf fuzz_gguf_seeds fuzz_pt -j"$(nproc)"

jobs=${FUZZ_JOBS:-1}
parallel=()
if (( jobs > 1 )); then
  # libFuzzer then writes one fuzz-N.log per worker into the current
  # directory: the run happens in the work dir, out of the source tree.
  parallel=(-jobs="$jobs" -workers="$jobs")
fi

# Seeds are regenerated each run (they are inputs, not results); the corpus
# directory is what libFuzzer grows and keeps.
make_seeds() {
  local target=$1 seeds=$2
  rm -rf "$seeds"
  mkdir -p "$seeds"
  case "$target" in
    gguf)
      for f in "$root"/models/*.gguf "$root"/tests/data/tokenizer/*.gguf; do
        [[ -f "$f" ]] || continue
        head -c 65536 "$f" >"$seeds/$(basename "$f").head"
      done
      "$build/bin/fuzz_gguf_seeds" "$seeds"
      ;;
    pt)
      find "$root/tests/data/pt" -name '*.pt' -exec cp {} "$seeds/" \;
      ;;
  esac
}

status=0
for target in "${targets[@]}"; do
  work=$build/fuzz-$target
  mkdir -p "$work/corpus" "$work/artifacts"
  make_seeds "$target" "$work/seeds"
  opts=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$work/artifacts/")
  case "$target" in
    gguf) opts+=(-max_len=65536 -dict="$root/tests/fuzz/gguf.dict") ;;
    pt) opts+=(-max_len=8192) ;;
  esac
  echo "fuzz: $target for ${secs}s; seeds: $(ls "$work/seeds" | wc -l), corpus: $(ls "$work/corpus" | wc -l) files" >&2
  # libFuzzer reports every new input (thousands of lines a minute): that
  # goes to run.log, the closing statistics (and on a finding, the end of
  # the log with its report) to the terminal.
  rc=0
  (cd "$work" && "$build/bin/fuzz_$target" "$work/corpus" "$work/seeds" "${opts[@]}" \
    "${parallel[@]}") >"$work/run.log" 2>&1 || rc=$?
  grep -E '^(Done|stat::)' "$work/run.log" >&2 || true
  if (( rc != 0 )); then
    tail -n 60 "$work/run.log" >&2
    status=$rc
  fi
  echo "fuzz: $target: exit $rc; corpus now $(ls "$work/corpus" | wc -l) files; artifacts: $(ls "$work/artifacts" | wc -l); log: $work/run.log" >&2
done
exit $status
