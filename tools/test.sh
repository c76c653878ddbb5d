#!/usr/bin/env bash
# The README's test command: install the packages, build everything with
# warnings as errors, run every suite, then run the unit, conformance and
# hybrid suites once more under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh

jobs=$(nproc)
echo "== build (Release, -Werror) =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHC_WERROR=ON
cmake --build build -j"$jobs"
echo "== tests =="
ctest --test-dir build --output-on-failure --no-tests=error

echo "== sanitizers: unit, conformance and hybrid suites under ASan+UBSan =="
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHC_WERROR=ON -DHC_SANITIZE=address,undefined
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -L 'unit|conformance|hybrid' --output-on-failure --no-tests=error
echo "== all tests passed =="
