# GPU placement end to end (tests/test_hybrid.c) on the Vulkan plugin, with
# Mesa's lavapipe forced where it is installed (see conformance_vulkan.cmake),
# once plainly and once under the Khronos validation layer.  Both plugins
# load: the CPU holds the cold neurons and runs what the GPU plugin lacks.
# Without a Vulkan device the binary exits 77 (skipped).
# Label "hybrid" too: the sanitizer pass of tools/test.sh runs it.
hc_add_check_test(test_hybrid SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_hybrid.c
                  LABELS golden hybrid TIMEOUT 900)
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
