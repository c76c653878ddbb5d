# The conformance suite on the Vulkan plugin alone (HOTCOLD_PLUGINS=vulkan).
# In CI there is no GPU: Mesa's lavapipe (a Vulkan driver running on the
# CPU) is forced with VK_DRIVER_FILES, so the real Vulkan code path -- the
# plugin, the SPIR-V, the driver -- is tested end to end.  Where no Vulkan
# device exists (or the plugin was not built) the binary prints "skipped"
# and exits 77.  HOTCOLD_CONF_REQUIRE_LAYER=1: the plugin provides the layer
# ops (rmsnorm, rope, attention, unary, binary, glu) and stream_flush, so
# every case of them must run on the device; a missing op or an
# HC_E_UNSUPPORTED answer fails instead of being skipped.
#
#   test_conformance_vulkan             the device's own features
#   test_conformance_vulkan_validation  the same under the Khronos validation
#                                       layer with synchronization validation
#                                       (any message fails the test), and with
#                                       64-wide reduction workgroups: several
#                                       subgroups each, as on a GPU, so the
#                                       cross-subgroup reductions run
#   test_conformance_vulkan_fallbacks   every optional feature off (subgroups,
#                                       8/16-bit storage, push descriptors,
#                                       mapped buffers) and bindings capped at
#                                       256 KiB, so the fallback shaders, the
#                                       staging path and the weight/token
#                                       splits run; also under validation
# Each takes ~25-40 s on 2 cores.
file(GLOB HC_LVP_ICD /usr/share/vulkan/icd.d/lvp_icd.*.json)
set(HC_VK_TEST_ENV
  "HOTCOLD_PLUGIN_PATH=${HC_PLUGIN_BUILD_DIR}" "HOTCOLD_PLUGINS=vulkan" "CK_DEFAULT_TIMEOUT=120"
  "HOTCOLD_CONF_REQUIRE_LAYER=1")
if(HC_LVP_ICD)
  list(GET HC_LVP_ICD 0 HC_LVP_ICD)
  # VK_DRIVER_FILES for loaders >= 1.3.234, VK_ICD_FILENAMES for older ones.
  list(APPEND HC_VK_TEST_ENV "VK_DRIVER_FILES=${HC_LVP_ICD}" "VK_ICD_FILENAMES=${HC_LVP_ICD}")
endif()

add_test(NAME test_conformance_vulkan COMMAND test_conformance)
set_tests_properties(test_conformance_vulkan PROPERTIES
  ENVIRONMENT "${HC_VK_TEST_ENV}" LABELS conformance TIMEOUT 600 SKIP_RETURN_CODE 77)

file(GLOB HC_VK_VALIDATION_LAYER
  /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json
  /usr/local/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json)
set(HC_VK_VALIDATION_ENV ${HC_VK_TEST_ENV} "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation"
  "VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT")
# The layer prints its messages (errors, and synchronization hazards, which
# it reports as errors) to stdout.
set(HC_VK_VALIDATION_FAIL "Validation (Error|Warning)|VUID-|SYNC-HAZARD")
foreach(t validation fallbacks)
  if(HC_VK_VALIDATION_LAYER)
    add_test(NAME test_conformance_vulkan_${t} COMMAND test_conformance)
  else()
    add_test(NAME test_conformance_vulkan_${t} COMMAND sh -c
      "echo 'skipped: VK_LAYER_KHRONOS_validation is not installed (vulkan-validationlayers)'; exit 77")
  endif()
  set_tests_properties(test_conformance_vulkan_${t} PROPERTIES
    ENVIRONMENT "${HC_VK_VALIDATION_ENV}" FAIL_REGULAR_EXPRESSION "${HC_VK_VALIDATION_FAIL}"
    LABELS conformance TIMEOUT 600 SKIP_RETURN_CODE 77)
endforeach()
# Under AddressSanitizer the two layer runs do not check for leaks: the
# validation layer itself leaks a few KiB at vkDestroyDevice when
# synchronization validation is on (its own C++ objects, even for a device
# that ran nothing), and the loader unloads it before LeakSanitizer looks,
# so there is no module to suppress by (and preloading it would interpose
# its vk* symbols).  test_conformance_vulkan keeps leak detection.
if(HC_VK_VALIDATION_LAYER AND HC_SANITIZE MATCHES "address")
  foreach(t validation fallbacks)
    set_property(TEST test_conformance_vulkan_${t} APPEND PROPERTY ENVIRONMENT
      "LSAN_OPTIONS=detect_leaks=0")
  endforeach()
endif()
set_property(TEST test_conformance_vulkan_validation APPEND PROPERTY ENVIRONMENT
  "HOTCOLD_VULKAN_WG=64")
set_property(TEST test_conformance_vulkan_fallbacks APPEND PROPERTY ENVIRONMENT
  "HOTCOLD_VULKAN_DISABLE=subgroup,storage16_8,push_descriptors,host_map"
  "HOTCOLD_VULKAN_WINDOW=262144")
# Under AddressSanitizer, a small quarantine: lavapipe's shaders allocate and
# free a 4096-aligned 24-byte chunk per workgroup, which ASan's quarantine
# undercounts (see tests/hybrid.cmake); without it these runs peak at 2.6 GB.
if(HC_SANITIZE MATCHES "address")
  set_property(TEST test_conformance_vulkan test_conformance_vulkan_validation
    test_conformance_vulkan_fallbacks PROPERTY ENVIRONMENT_MODIFICATION
    "ASAN_OPTIONS=string_prepend:quarantine_size_mb=1:thread_local_quarantine_size_kb=64:")
endif()
