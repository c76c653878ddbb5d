hc_add_check_test(test_cli SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_cli.c LABELS golden TIMEOUT 600)
add_dependencies(test_cli hotcold_cli)
