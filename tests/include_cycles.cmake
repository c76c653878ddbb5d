# No include circle among the core's modules (tests/include_cycles.sh): a
# header and the .c files defining what it declares must not need, through
# other modules, that header again.  Source-only: runs in every build.
add_test(NAME test_include_cycles
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/include_cycles.sh ${PROJECT_SOURCE_DIR}/core)
set_tests_properties(test_include_cycles PROPERTIES LABELS "unit" TIMEOUT 60)
