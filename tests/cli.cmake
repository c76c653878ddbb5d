hc_add_check_test(test_cli WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_cli.c
                  ${CMAKE_CURRENT_SOURCE_DIR}/cli_util.c LABELS cli TIMEOUT 600)
add_dependencies(test_cli hotcold_cli)
