# Reference kernels (core/ref): hand-derived expectations.
hc_add_check_test(test_ref WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_ref.c LABELS unit TIMEOUT 120)
