#!/bin/sh
# Issue 12 item 12: an installed hotcold can be built against, and finds its
# plugins from wherever its prefix is moved.
#   1. cmake --install into a scratch prefix;
#   2. build tests/packaging/list_plugins.c with pkg-config, and again with
#      find_package(hotcold) (hotcold::hotcold); build docs/example-plugin
#      out of tree with find_package (hotcold_add_plugin, hotcold::plugin);
#   3. move the prefix elsewhere, then: the programs linked to the moved
#      libhotcold.so list the cpu plugin from the moved <libdir>/hotcold,
#      the moved bin/hotcold does too, and it loads the example plugin.
# usage: packaging.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR LIBDIR [SANITIZE]
# (SANITIZE: the build's -fsanitize list, so programs linked to an
# instrumented library get the same runtime.)
set -eu
build=$1 src=$2 scratch=$3 libdir=$4 sanitize=${5:-}

fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "--- $*"; }

flags=""
[ -n "$sanitize" ] && flags="-fsanitize=$sanitize -fno-omit-frame-pointer"
rm -rf "$scratch"
mkdir -p "$scratch"
prefix=$scratch/prefix
moved=$scratch/elsewhere/moved-prefix
# Only what the installed tree says may be used: no build-tree plugins.
unset HOTCOLD_PLUGIN_PATH HOTCOLD_PLUGINS 2>/dev/null || true

step "install into $prefix"
cmake --install "$build" --prefix "$prefix" >"$scratch/install.log" || fail "cmake --install (see $scratch/install.log)"
for f in "$libdir/pkgconfig/hotcold.pc" "$libdir/cmake/hotcold/hotcoldConfig.cmake" \
         "$libdir/cmake/hotcold/hotcoldConfigVersion.cmake" "$libdir/cmake/hotcold/hotcoldTargets.cmake" \
         "include/hotcold/hotcold.h" "include/hotcold/plugin.h" "share/doc/hotcold/LICENSE"; do
    [ -f "$prefix/$f" ] || fail "not installed: $f"
done
ls "$prefix/$libdir/hotcold"/libhc-cpu-*.so >/dev/null 2>&1 || fail "no cpu plugin in $prefix/$libdir/hotcold"

step "pkg-config"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
pkg-config --exists hotcold || fail "pkg-config does not find hotcold.pc"
[ "$(pkg-config --modversion hotcold)" = "$(sed -n 's/^Version: //p' "$prefix/$libdir/pkgconfig/hotcold.pc")" ] ||
    fail "pkg-config --modversion"
plugindir=$(pkg-config --variable=plugindir hotcold)
[ "$(cd "$plugindir" && pwd -P)" = "$(cd "$prefix/$libdir/hotcold" && pwd -P)" ] ||
    fail "plugindir $plugindir is not $prefix/$libdir/hotcold"
# shellcheck disable=SC2046 # word splitting of pkg-config's output is the point
cc -std=c11 $flags -o "$scratch/list_plugins_pc" "$src/tests/packaging/list_plugins.c" \
    $(pkg-config --cflags --libs hotcold) || fail "build with pkg-config"

step "find_package(hotcold): a program and the example plugin"
cmake -S "$src/tests/packaging" -B "$scratch/cm-program" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_FLAGS="$flags" >"$scratch/cm-program.log" 2>&1 || fail "configure (see $scratch/cm-program.log)"
cmake --build "$scratch/cm-program" >>"$scratch/cm-program.log" 2>&1 || fail "build (see $scratch/cm-program.log)"
cmake -S "$src/docs/example-plugin" -B "$scratch/cm-plugin" -DCMAKE_PREFIX_PATH="$prefix" \
    >"$scratch/cm-plugin.log" 2>&1 || fail "configure the example plugin (see $scratch/cm-plugin.log)"
cmake --build "$scratch/cm-plugin" >>"$scratch/cm-plugin.log" 2>&1 || fail "build the example plugin (see $scratch/cm-plugin.log)"
[ -f "$scratch/cm-plugin/libhc-example.so" ] || fail "no libhc-example.so"

step "move the prefix to $moved"
mkdir -p "$(dirname "$moved")"
mv "$prefix" "$moved"
[ ! -e "$prefix" ] || fail "the old prefix still exists"

# The cpu plugin must come from the moved tree, found next to the library.
want="$moved/$libdir/hotcold/libhc-cpu-"
for prog in "$scratch/list_plugins_pc" "$scratch/cm-program/list_plugins"; do
    out=$(HOTCOLD_PLUGINS=cpu LD_LIBRARY_PATH="$moved/$libdir" "$prog") || fail "$prog: $out"
    echo "$out"
    echo "$out" | grep -q "^loaded cpu-[a-z0-9_-]* $want" ||
        fail "$(basename "$prog"): the cpu plugin was not loaded from $moved/$libdir/hotcold"
done

out=$(HOTCOLD_PLUGINS=cpu "$moved/bin/hotcold" devices) || fail "moved hotcold devices: $out"
echo "$out" | grep -q "loaded .* $want" || fail "moved hotcold devices:
$out"
out=$(HOTCOLD_PLUGIN_PATH="$scratch/cm-plugin" HOTCOLD_PLUGINS=cpu,example "$moved/bin/hotcold" devices) ||
    fail "hotcold devices with the example plugin: $out"
echo "$out" | grep -q "loaded .*example .*$scratch/cm-plugin/libhc-example.so" || fail "example plugin:
$out"
echo "$out" | grep -q "example:0" || fail "no example:0 device:
$out"
rm -rf "$scratch"
echo "packaging: ok"
