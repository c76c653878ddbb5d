# The placement solver, its gpuidx files, activation frequency sources and the
# `--print-plan` table (compiled in from the tool's sources).
hc_add_check_test(test_placement WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_placement.c
                  ${PROJECT_SOURCE_DIR}/tools/hotcold/plan_print.c LABELS unit TIMEOUT 120)
target_include_directories(test_placement PRIVATE ${PROJECT_SOURCE_DIR}/tools/hotcold)
