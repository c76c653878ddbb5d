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
# Refuses (HC_E_UNSUPPORTED) lists of more than 64 rows, the 4096-row output
# head's matmul and attention over several tokens: relu2M's FFN lists are
# 46-150 of 384 rows, so some calls of each op run here and some fall back.
hc_add_stub_gpu(refusegpu STUB_GPU_MAX_LIST=64 STUB_GPU_MAX_ROWS=1024
                STUB_GPU_ONE_TOKEN_ATTENTION)

hc_add_check_test(test_fallback SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_fallback.c
                  LABELS unit hybrid TIMEOUT 600)
target_compile_definitions(test_fallback PRIVATE HC_STUB_GPU_DIR="${HC_STUB_GPU_DIR}")
add_dependencies(test_fallback ${HC_STUB_GPU_TARGETS} hc-cpu-generic)
if(TARGET hc-cpu-avx2)
  add_dependencies(test_fallback hc-cpu-avx2)
endif()
