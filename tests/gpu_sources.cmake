# The kernel sources the CUDA and ROCm plugins share (plugins/cuda/*.cu,
# *.cuh) name no vendor and assume no warp of 32 (tests/gpu_sources.sh):
# the HIP build compiles them for wavefronts of 64, and only gpu_vendor.h
# may differ per vendor.  Source-only: runs in every build, with or without
# nvcc or hipcc.  The self-test plants each kind of violation once.
add_test(NAME test_gpu_sources
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/gpu_sources.sh ${PROJECT_SOURCE_DIR}/plugins/cuda)
add_test(NAME test_gpu_sources_selftest
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/gpu_sources_selftest.sh)
set_tests_properties(test_gpu_sources test_gpu_sources_selftest PROPERTIES LABELS "unit" TIMEOUT 60)
