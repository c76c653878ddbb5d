#!/bin/sh
# No include circle among the core's modules (issue 13): a module is a core
# header together with the .c files that define what it declares, so a .c
# that includes header B on behalf of header A (defines A's functions) makes
# A depend on B.  A -> B -> ... -> A would mean that neither can be built,
# read or tested without the other (the old runtime/model.h <-> exec/context.h
# circle: model_place.c, defining model.h's hc_model_place_gpu, used the
# context's activation layout while the context used the model).
#
# Edges come from `#include "x/y.h"` lines naming files under core/; what a
# .c defines from its non-static definitions at the start of a line
# (functions, and variables such as an architecture's hc_arch), matched to
# the core headers that declare them.  A header x_internal.h is the private
# half of module x.h (runtime/placement_internal.h).  tsort finds the
# circles.
#
#   tests/include_cycles.sh [CORE_DIR]     exit 0: none; 1: a circle (listed)
set -eu
core=${1:-$(dirname "$0")/../core}
cd "$core"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Declarations: "name header" for every hc_ identifier a header declares.
for h in $(find . -name '*.h' | sed 's|^\./||' | sort); do
    grep -oE '\bhc_[A-Za-z0-9_]+[[:space:]]*\(|\bhc_[A-Za-z0-9_]+;' "$h" |
        sed -E 's/[[:space:]]*[(;]$//' | sort -u | sed "s|\$| $h|"
done > "$tmp/decl"

# Edges: header -> what it includes; for each .c, every header declaring
# one of its definitions -> what the .c includes.
for f in $(find . -name '*.[ch]' | sed 's|^\./||' | sort); do
    grep -oE '^#include "[^"]+"' "$f" | sed -E 's/^#include "(.*)"$/\1/' |
        while read -r inc; do if [ -f "$inc" ]; then echo "$inc"; fi; done > "$tmp/inc"
    case $f in
    *.h) echo "$f" > "$tmp/owners" ;;
    *.c)
        grep -E '^[A-Za-z_][A-Za-z0-9_ *]*\bhc_[A-Za-z0-9_]+[[:space:]]*(\(|=|\[)' "$f" |
            grep -vE '^(static|typedef|extern|struct [A-Za-z0-9_]+ \{)' |
            grep -oE '\bhc_[A-Za-z0-9_]+[[:space:]]*(\(|=|\[)' |
            sed -E 's/[[:space:]]*[(=[]$//' | sort -u > "$tmp/defs"
        awk 'NR == FNR { d[$1] = 1; next } ($1 in d) { print $2 }' "$tmp/defs" "$tmp/decl" |
            sort -u > "$tmp/owners"
        ;;
    esac
    while read -r owner; do
        while read -r inc; do
            if [ "$inc" != "$owner" ]; then echo "$owner $inc"; fi
        done < "$tmp/inc"
    done < "$tmp/owners"
done | sed 's/_internal\.h\b/.h/g' | awk '$1 != $2' | sort -u > "$tmp/edges"

if ! tsort < "$tmp/edges" > /dev/null 2> "$tmp/loops"; then
    echo "include circle among core modules (each needs the next, the last the first):" >&2
    sed -e 's/^tsort: -: input contains a loop:/circle:/' -e 's/^tsort: /  /' "$tmp/loops" >&2
    exit 1
fi
echo "no include circle: $(wc -l < "$tmp/edges") edges among $(tr ' ' '\n' < "$tmp/edges" | sort -u | wc -l) core modules"
