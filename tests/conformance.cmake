# Plugin conformance: every op of a plugin's devices against core/ref.
# test_conformance takes the CPU plugin the loader picks (the GPU plugins
# have their own entries: conformance_vulkan.cmake); a second entry runs
# the same binary on the portable CPU variant only (HOTCOLD_PLUGINS=
# cpu-generic selects family-variant).  Out of CTest, the binary tests
# whatever HOTCOLD_PLUGINS selects (everything that loads when unset).
hc_add_check_test(test_conformance WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_conformance.c
                  LABELS conformance TIMEOUT 600)
set_tests_properties(test_conformance PROPERTIES
  ENVIRONMENT "HOTCOLD_PLUGIN_PATH=${HC_PLUGIN_BUILD_DIR};HOTCOLD_PLUGINS=cpu;CK_DEFAULT_TIMEOUT=60")
add_test(NAME test_conformance_generic COMMAND test_conformance)
set_tests_properties(test_conformance_generic PROPERTIES
  ENVIRONMENT "HOTCOLD_PLUGIN_PATH=${HC_PLUGIN_BUILD_DIR};HOTCOLD_PLUGINS=cpu-generic;CK_DEFAULT_TIMEOUT=60"
  LABELS conformance TIMEOUT 600)
