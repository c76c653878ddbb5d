# hc_quantize_file() and `hotcold quantize` (the CLI case runs the binary).
hc_add_check_test(test_quantize WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_quantize.c LABELS unit TIMEOUT 600)
add_dependencies(test_quantize hotcold_cli)
