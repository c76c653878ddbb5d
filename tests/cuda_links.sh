#!/bin/sh
# cuda_links.sh NM READELF PLUGIN: the CUDA plugin exports hc_plugin_entry
# alone (static cudart included: plugins/cuda/exports.map) and needs no
# libcuda (the runtime dlopens the driver, so the plugin loads without it).
nm=$1 readelf=$2 so=$3
exports=$("$nm" -D --defined-only "$so" | awk '{print $NF}' | sort | tr '\n' ' ')
if [ "$exports" != "hc_plugin_entry " ]; then
    echo "FAIL: $so exports: $exports(want hc_plugin_entry only)"
    exit 1
fi
needed=$("$readelf" -d "$so" | grep NEEDED)
if echo "$needed" | grep -q 'libcuda\.\|libcudart\.'; then
    echo "FAIL: $so links the driver or a shared runtime:"
    echo "$needed"
    exit 1
fi
echo "ok: exports hc_plugin_entry only; NEEDED:" $(echo "$needed" | sed 's/.*\[\(.*\)\]/\1/')
