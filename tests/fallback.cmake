# The core's CPU fallback end to end on stub GPU plugins (stubs/stub_gpu.c:
# host memory and the reference kernels of core/ref, compiled into the
# module), in a directory of their own that no real search path contains.
set(HC_STUB_GPU_DIR ${CMAKE_CURRENT_BINARY_DIR}/stubs-gpu)
file(GLOB HC_REF_SOURCES ${PROJECT_SOURCE_DIR}/core/ref/*.c)
set(HC_STUB_GPU_TARGETS "")

# hc_add_stub_gpu(<family> [DEFINITIONS...]) -> ${HC_STUB_GPU_DIR}/libhc-<family>.so
function(hc_add_stub_gpu family)
  set(target hc_stub_gpu_${family})
  add_library(${target} MODULE ${CMAKE_CURRENT_SOURCE_DIR}/stubs/stub_gpu.c ${HC_REF_SOURCES})
  set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".so" OUTPUT_NAME "libhc-${family}"
                        LIBRARY_OUTPUT_DIRECTORY ${HC_STUB_GPU_DIR} C_VISIBILITY_PRESET hidden)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include
                             ${PROJECT_SOURCE_DIR}/core)
  target_compile_definitions(${target} PRIVATE STUB_GPU_FAMILY="${family}" ${ARGN})
  target_link_libraries(${target} PRIVATE m)
  set(HC_STUB_GPU_TARGETS ${HC_STUB_GPU_TARGETS} ${target} PARENT_SCOPE)
endfunction()

# Takes every call.
hc_add_stub_gpu(refgpu)

hc_add_check_test(test_fallback SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_fallback.c
                  LABELS unit hybrid TIMEOUT 600)
target_compile_definitions(test_fallback PRIVATE HC_STUB_GPU_DIR="${HC_STUB_GPU_DIR}")
add_dependencies(test_fallback ${HC_STUB_GPU_TARGETS} hc-cpu-generic)
if(TARGET hc-cpu-avx2)
  add_dependencies(test_fallback hc-cpu-avx2)
endif()
