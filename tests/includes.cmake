# The tree's shape: tools and black-box suites use public headers only, no
# include cycle in core/, libhotcold.so exports exactly the HC_API functions.
hc_add_check_test(test_includes SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_includes.c LABELS unit
                  TIMEOUT 120)
target_compile_definitions(test_includes PRIVATE HC_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                           HC_SHARED_LIB="$<TARGET_FILE:hotcold>")
add_dependencies(test_includes hotcold)
