# torch .pt reader: fixtures written by a real torch (tests/data/pt/make_fixtures.py),
# PowerInfer-style activation/ directories, and malformed archives and pickles.
hc_add_check_test(test_torch_pt WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_torch_pt.c LABELS unit
                  TIMEOUT 300)
