# Sparse FFN modes: oracle vs the golden dense reference, mode/threshold rules.
hc_add_check_test(test_sparse SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_sparse.c LABELS golden
                  TIMEOUT 600)
