hc_add_check_test(test_perplexity SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_perplexity.c
                  ${CMAKE_CURRENT_SOURCE_DIR}/cli_util.c LABELS cli TIMEOUT 600)
add_dependencies(test_perplexity hotcold_cli)
