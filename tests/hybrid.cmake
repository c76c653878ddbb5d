# GPU placement end to end (tests/test_hybrid.c) on the Vulkan plugin, with
# Mesa's lavapipe forced where it is installed (see conformance_vulkan.cmake),
# once plainly and once under the Khronos validation layer.  Both plugins
# load: the CPU holds the cold neurons and runs what the GPU plugin lacks.
# Without a Vulkan device the binary exits 77 (skipped).
# Label "hybrid" too: the sanitizer pass of tools/test.sh runs it.
hc_add_check_test(test_hybrid WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_hybrid.c
                  ${CMAKE_CURRENT_SOURCE_DIR}/q6k_models.c LABELS golden hybrid TIMEOUT 900)
file(GLOB HC_HYBRID_LVP /usr/share/vulkan/icd.d/lvp_icd.*.json)
set(HC_HYBRID_ENV "HOTCOLD_PLUGIN_PATH=${HC_PLUGIN_BUILD_DIR}" "CK_DEFAULT_TIMEOUT=600")
if(HC_HYBRID_LVP)
  list(GET HC_HYBRID_LVP 0 HC_HYBRID_LVP)
  list(APPEND HC_HYBRID_ENV "VK_DRIVER_FILES=${HC_HYBRID_LVP}" "VK_ICD_FILENAMES=${HC_HYBRID_LVP}")
endif()
set_tests_properties(test_hybrid PROPERTIES ENVIRONMENT "${HC_HYBRID_ENV}" SKIP_RETURN_CODE 77)

file(GLOB HC_HYBRID_LAYER
  /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json)
if(HC_HYBRID_LAYER)
  add_test(NAME test_hybrid_validation COMMAND test_hybrid)
else()
  add_test(NAME test_hybrid_validation COMMAND sh -c
    "echo 'skipped: VK_LAYER_KHRONOS_validation is not installed (vulkan-validationlayers)'; exit 77")
endif()
set_tests_properties(test_hybrid_validation PROPERTIES
  ENVIRONMENT "${HC_HYBRID_ENV};VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation"
  FAIL_REGULAR_EXPRESSION "Validation (Error|Warning)|VUID-|SYNC-HAZARD"
  LABELS golden TIMEOUT 900 SKIP_RETURN_CODE 77)

# The out-of-memory fallback again with device memory that the host cannot
# map (HOTCOLD_VULKAN_DISABLE=host_map), as on a discrete GPU: uploads then
# go through staging buffers and run after the call returns, so the
# placement that ran out of memory still has copies queued into the buffers
# it frees (until 2026-11 the core freed them under the running copies:
# use-after-free on lavapipe, a hang on an NVIDIA H200).
add_test(NAME test_hybrid_staging COMMAND test_hybrid)
set_tests_properties(test_hybrid_staging PROPERTIES
  ENVIRONMENT "${HC_HYBRID_ENV};HOTCOLD_VULKAN_DISABLE=host_map;CK_RUN_CASE=oom"
  LABELS "golden;hybrid" TIMEOUT 600 SKIP_RETURN_CODE 77)

# Under AddressSanitizer, a small quarantine for the two runs above.  Why:
# lavapipe's JIT-compiled compute shaders allocate each workgroup's
# coroutine frame with posix_memalign(4096, 24) and free it when the
# workgroup ends (about 3500 per decoded token of stories260K).  ASan's
# quarantine counts a freed chunk at its requested size (24 bytes) while
# the 4096-aligned chunk holds several KiB, so the default 256 MiB
# quarantine holds some 10 million of them before it recycles any: RSS
# grows ~30 MB per token (2.1 GB for `hotcold run -n 60`; test_hybrid, one
# process, reached 23 GB and was OOM-killed).  It is not a leak (all freed,
# LeakSanitizer is silent) and not ours: our code and a Debug build without
# ASan stay flat.  1 MiB (64 KiB per thread) bounds it to a few hundred MB
# and still catches use-after-free within the last ~12 tokens' worth of
# frees; measured: test_hybrid 22 s, 360 MB max RSS.  Prepended, so a
# caller's own ASAN_OPTIONS (detect_leaks, abort_on_error, or a quarantine
# of its own) still apply and win.
if(HC_SANITIZE MATCHES "address")
  set_property(TEST test_hybrid test_hybrid_validation test_hybrid_staging PROPERTY ENVIRONMENT_MODIFICATION
    "ASAN_OPTIONS=string_prepend:quarantine_size_mb=1:thread_local_quarantine_size_kb=64:")
endif()
