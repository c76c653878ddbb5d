# Plugin conformance: every entry of a plugin's table, on each of its
# devices, against core/ref.  test_conformance takes the CPU plugin the
# loader picks (the GPU plugins have their own entries:
# conformance_vulkan.cmake); a second entry runs the same binary on the
# portable CPU variant only (HOTCOLD_PLUGINS=cpu-generic selects
# family-variant).  Out of CTest, `test_conformance FILE` tests that
# plugin file alone, and without FILE the binary tests whatever
# HOTCOLD_PLUGIN_PATH and HOTCOLD_PLUGINS give (everything that loads).
hc_add_check_test(test_conformance WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_conformance.c
                  LABELS conformance TIMEOUT 600)
set_tests_properties(test_conformance PROPERTIES
  ENVIRONMENT "HOTCOLD_PLUGIN_PATH=${HC_PLUGIN_BUILD_DIR};HOTCOLD_PLUGINS=cpu;CK_DEFAULT_TIMEOUT=60")
add_test(NAME test_conformance_generic COMMAND test_conformance)
set_tests_properties(test_conformance_generic PROPERTIES
  ENVIRONMENT "HOTCOLD_PLUGIN_PATH=${HC_PLUGIN_BUILD_DIR};HOTCOLD_PLUGINS=cpu-generic;CK_DEFAULT_TIMEOUT=60"
  LABELS conformance TIMEOUT 600)

# Any plugin file, named at configure time or when ctest runs:
#   cmake -DHC_CONFORMANCE_PLUGIN=/path/to/libhc-foo.so build && ctest -R conformance_plugin
#   HOTCOLD_CONF_PLUGIN=/path/to/libhc-foo.so ctest --test-dir build -R conformance_plugin
# It tests that file alone (nothing else is loaded, HOTCOLD_PLUGINS is
# ignored) and fails if it does not load; with no file named it is skipped.
set(HC_CONFORMANCE_PLUGIN "" CACHE FILEPATH
    "A plugin file the CTest entry test_conformance_plugin runs the conformance suite on")
add_test(NAME test_conformance_plugin COMMAND test_conformance ${HC_CONFORMANCE_PLUGIN})
set_tests_properties(test_conformance_plugin PROPERTIES
  ENVIRONMENT "HOTCOLD_CONF_NEED_PLUGIN=1;CK_DEFAULT_TIMEOUT=600"
  LABELS conformance TIMEOUT 900 SKIP_RETURN_CODE 77)

# The guide's example plugin (docs/example-plugin, built for the loader
# tests into tests/stubs/), so that docs/PLUGINS.md's claim holds: a new plugin
# checks itself with this suite.  Scalar code: ~45 s here.
add_test(NAME test_conformance_example
         COMMAND test_conformance ${CMAKE_CURRENT_BINARY_DIR}/stubs/libhc-example.so)
set_tests_properties(test_conformance_example PROPERTIES
  ENVIRONMENT "CK_DEFAULT_TIMEOUT=600" LABELS conformance TIMEOUT 900)
add_dependencies(test_conformance hc_stub_example)
