#!/usr/bin/env bash
# Fuzz the GGUF reader: `tools/fuzz-gguf.sh [seconds]` (default 60) is
# `tools/fuzz.sh gguf [seconds]`, which documents the options and a long run.
exec "$(dirname "$0")/fuzz.sh" gguf "${1:-60}"
