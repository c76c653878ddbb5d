#!/usr/bin/env bash
# Fuzz the GGUF reader with libFuzzer (+ASan+UBSan).
#
#   tools/fuzz-gguf.sh [seconds]        (default 60)
#
# Builds tests/fuzz in build-fuzz with clang, seeds a corpus from the repo's
# GGUF files (their first 64 KiB: header, metadata, tensor infos) and from
# small synthetic files written by the GGUF writer, then runs the fuzzer.
# The corpus persists in build-fuzz/fuzz-gguf/corpus between runs; crashes
# land in build-fuzz/fuzz-gguf/artifacts.  Env: CC (default clang-14 or
# clang), BUILD_DIR (default build-fuzz), FUZZ_JOBS (default 1).
set -euo pipefail

secs=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
cc=${CC:-$(command -v clang-14 || command -v clang || true)}
if [[ -z "$cc" ]]; then
  echo "fuzz-gguf: clang not found (install clang and libclang-rt-14-dev)" >&2
  exit 1
fi

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER="$cc" -DHC_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHC_CUDA=OFF -DHC_ROCM=OFF -DHC_VULKAN=OFF >/dev/null
cmake --build "$build" --target fuzz_gguf fuzz_gguf_seeds -j2

work=$build/fuzz-gguf
seeds=$work/seeds
mkdir -p "$seeds" "$work/corpus" "$work/artifacts"
for f in "$root"/models/*.gguf "$root"/tests/data/tokenizer/*.gguf; do
  [[ -f "$f" ]] || continue
  head -c 65536 "$f" >"$seeds/$(basename "$f").head"
done
"$build/bin/fuzz_gguf_seeds" "$seeds"

jobs=${FUZZ_JOBS:-1}
parallel=()
if (( jobs > 1 )); then
  # libFuzzer then writes one fuzz-N.log per worker into the current
  # directory: keep those in the work dir, out of the source tree.
  parallel=(-jobs="$jobs" -workers="$jobs")
fi
echo "fuzz-gguf: running for ${secs}s; seeds: $(ls "$seeds" | wc -l), corpus: $(ls "$work/corpus" | wc -l) files" >&2
status=0
(cd "$work" && "$build/bin/fuzz_gguf" "$work/corpus" "$seeds" \
  -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -dict="$root/tests/fuzz/gguf.dict" -artifact_prefix="$work/artifacts/" \
  -print_final_stats=1 "${parallel[@]}") || status=$?
echo "fuzz-gguf: corpus now $(ls "$work/corpus" | wc -l) files; artifacts: $(ls "$work/artifacts" | wc -l)" >&2
exit $status
