#!/bin/sh
# rocm_links.sh NM READELF PLUGIN: the ROCm plugin exports hc_plugin_entry
# alone (plugins/cuda/exports.map), links the HIP runtime (Debian ships it
# shared only) and no CUDA library, and is marked NODELETE (-z nodelete:
# a dlclose leaves it and the HIP runtime mapped; the runtime leaks when
# unloaded).
nm=$1 readelf=$2 so=$3
exports=$("$nm" -D --defined-only "$so" | awk '{print $NF}' | sort | tr '\n' ' ')
if [ "$exports" != "hc_plugin_entry " ]; then
    echo "FAIL: $so exports: $exports(want hc_plugin_entry only)"
    exit 1
fi
dynamic=$("$readelf" -d "$so")
needed=$(echo "$dynamic" | grep NEEDED)
if ! echo "$needed" | grep -q 'libamdhip64\.'; then
    echo "FAIL: $so does not link the HIP runtime (libamdhip64):"
    echo "$needed"
    exit 1
fi
if echo "$needed" | grep -q 'libcuda\.\|libcudart\.'; then
    echo "FAIL: $so links a CUDA library:"
    echo "$needed"
    exit 1
fi
if ! echo "$dynamic" | grep 'FLAGS_1' | grep -q 'NODELETE'; then
    echo "FAIL: $so is not marked NODELETE (link it with -Wl,-z,nodelete)"
    exit 1
fi
echo "ok: exports hc_plugin_entry only; NODELETE; NEEDED:" $(echo "$needed" | sed 's/.*\[\(.*\)\]/\1/')
