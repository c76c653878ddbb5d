# Sampler: greedy, top-k/top-p/min-p, repetition penalty, seeding, frequencies.
hc_add_check_test(test_sampler SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_sampler.c
                  LABELS unit TIMEOUT 300)
