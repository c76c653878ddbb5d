hc_add_check_test(test_hostile WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_hostile.c
                  ${CMAKE_CURRENT_SOURCE_DIR}/cli_util.c LABELS cli TIMEOUT 600)
add_dependencies(test_hostile hotcold_cli)
