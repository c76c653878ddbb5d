# The CUDA plugin where it is built (HC_CUDA, plugins/CMakeLists.txt): on a
# machine without a GPU (CI) it must load, report zero devices with the
# runtime's reason and export nothing but hc_plugin_entry.  The kernels are
# tested by the conformance suite on a machine with a device:
# build/bin/test_conformance build/lib/hotcold/libhc-cuda.so.
if(TARGET hc-cuda)
  hc_add_check_test(test_cuda WHITEBOX SOURCES test_cuda.c LABELS unit TIMEOUT 120)
  target_link_libraries(test_cuda PRIVATE ${CMAKE_DL_LIBS})
  add_dependencies(test_cuda hc-cuda)
  if(CMAKE_NM AND CMAKE_READELF)
    add_test(NAME test_cuda_links COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cuda_links.sh
             ${CMAKE_NM} ${CMAKE_READELF} ${HC_PLUGIN_BUILD_DIR}/libhc-cuda.so)
  else()
    add_test(NAME test_cuda_links COMMAND sh -c "echo 'skipped: no nm or readelf'; exit 77")
  endif()
  set_tests_properties(test_cuda_links PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
endif()
