# GGUF reader and writer: real files, malformed inputs, writer round trip.
hc_add_check_test(test_gguf WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gguf.c LABELS unit TIMEOUT 600)
