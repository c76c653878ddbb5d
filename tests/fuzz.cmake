# libFuzzer targets, only with -DHC_FUZZ=ON (clang).  See tools/fuzz.sh.
if(HC_FUZZ)
  add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/fuzz ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
endif()
