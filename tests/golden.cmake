hc_add_check_test(test_golden WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_golden.c
                  ${CMAKE_CURRENT_SOURCE_DIR}/q6k_models.c LABELS golden TIMEOUT 900)
