# hc_mkmodel_write() and `hotcold mkmodel`: the written models against an
# independent reference forward pass, end to end through hc_model_load, and
# the command (the CLI case runs the binary).
hc_add_check_test(test_mkmodel WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_mkmodel.c LABELS unit
                  TIMEOUT 600)
add_dependencies(test_mkmodel hotcold_cli)
