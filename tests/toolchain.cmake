# The model toolchain: hotcold profile / train-predictor / pack (the binary and
# the library), PowerInfer .pt folders, and the shipped relu2M.powerinfer.gguf.
hc_add_check_test(test_toolchain WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_toolchain.c LABELS unit
                  TIMEOUT 900)
add_dependencies(test_toolchain hotcold_cli)
