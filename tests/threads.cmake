# Two contexts of one model evaluated from two threads at once
# (tests/test_threads.c): on the CPU, and split between the Vulkan plugin
# (Mesa's lavapipe forced where it is installed, as in hybrid.cmake) and
# the CPU; the Vulkan cases say "skipped" without a Vulkan device.
# Labels golden and hybrid: the sanitizer pass of tools/test.sh runs it.
hc_add_check_test(test_threads SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_threads.c
                  LABELS golden hybrid TIMEOUT 600)
file(GLOB HC_THREADS_LVP /usr/share/vulkan/icd.d/lvp_icd.*.json)
set(HC_THREADS_ENV "HOTCOLD_PLUGIN_PATH=${HC_PLUGIN_BUILD_DIR}" "CK_DEFAULT_TIMEOUT=600")
if(HC_THREADS_LVP)
  list(GET HC_THREADS_LVP 0 HC_THREADS_LVP)
  list(APPEND HC_THREADS_ENV "VK_DRIVER_FILES=${HC_THREADS_LVP}" "VK_ICD_FILENAMES=${HC_THREADS_LVP}")
endif()
set_tests_properties(test_threads PROPERTIES ENVIRONMENT "${HC_THREADS_ENV}" SKIP_RETURN_CODE 77)
# lavapipe under AddressSanitizer: the small quarantine of hybrid.cmake, for
# the same reason (its per-workgroup allocations).
if(HC_SANITIZE MATCHES "address")
  set_property(TEST test_threads PROPERTY ENVIRONMENT_MODIFICATION
    "ASAN_OPTIONS=string_prepend:quarantine_size_mb=1:thread_local_quarantine_size_kb=64:")
endif()
