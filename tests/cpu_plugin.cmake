# The CPU plugin's own suite: both builds (avx2, generic) dlopen'ed from the
# build directory; determinism across thread counts, argument checks, a few
# spot checks against core/ref.
hc_add_check_test(test_cpu_plugin WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_cpu_plugin.c
                  LABELS unit TIMEOUT 600)
target_link_libraries(test_cpu_plugin PRIVATE m)
# The plugin's internal helpers that are checked directly (cpu_kernels.h).
target_include_directories(test_cpu_plugin PRIVATE ${PROJECT_SOURCE_DIR}/plugins/cpu-avx2)
if(TARGET hc-cpu-avx2)
  add_dependencies(test_cpu_plugin hc-cpu-avx2)
endif()
add_dependencies(test_cpu_plugin hc-cpu-generic)
