# include/hotcold/plugin_kit.h, the header-only helpers every plugin uses:
# its checks and messages against values worked out in the test.
hc_add_check_test(test_plugin_kit SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_plugin_kit.c
                  LABELS unit TIMEOUT 60)
