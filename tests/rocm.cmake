# The ROCm/HIP plugin where it is built (HC_ROCM, plugins/CMakeLists.txt):
# on a machine without an AMD GPU (every build machine here) it must load
# as "rocm", report zero devices with the HIP runtime's reason, stay mapped
# when dlclosed, export nothing but hc_plugin_entry, and `hotcold devices`
# must say why.  No HIP kernel runs here: the kernels are the CUDA
# plugin's, run by the conformance suite on an NVIDIA GPU.
if(TARGET hc-rocm)
  hc_add_check_test(test_rocm WHITEBOX SOURCES test_rocm.c ${CMAKE_CURRENT_SOURCE_DIR}/cli_util.c
                    LABELS unit TIMEOUT 300)
  target_link_libraries(test_rocm PRIVATE ${CMAKE_DL_LIBS})
  add_dependencies(test_rocm hc-rocm hotcold_cli)
  if(CMAKE_NM AND CMAKE_READELF)
    add_test(NAME test_rocm_links COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rocm_links.sh
             ${CMAKE_NM} ${CMAKE_READELF} ${HC_PLUGIN_BUILD_DIR}/libhc-rocm.so)
  else()
    add_test(NAME test_rocm_links COMMAND sh -c "echo 'skipped: no nm or readelf'; exit 77")
  endif()
  set_tests_properties(test_rocm_links PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
endif()
