# Plugin loader tests: stub plugins built from ONE source (stubs/stub_plugin.c)
# with different -D options, plus the documentation's example plugin, all in
# a directory of their own that no real search path ever contains.
set(HC_STUB_DIR ${CMAKE_CURRENT_BINARY_DIR}/stubs)
set(HC_STUB_TARGETS "")

# hc_add_stub(<name> <source> [DEFINITIONS...]) -> ${HC_STUB_DIR}/libhc-<name>.so
function(hc_add_stub name source)
  set(target hc_stub_${name})
  add_library(${target} MODULE ${source})
  set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".so" OUTPUT_NAME "libhc-${name}"
                        LIBRARY_OUTPUT_DIRECTORY ${HC_STUB_DIR} C_VISIBILITY_PRESET hidden)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  if(ARGN)
    target_compile_definitions(${target} PRIVATE ${ARGN})
  endif()
  set(HC_STUB_TARGETS ${HC_STUB_TARGETS} ${target} PARENT_SCOPE)
endfunction()

set(stub_src ${CMAKE_CURRENT_SOURCE_DIR}/stubs/stub_plugin.c)
hc_add_stub(good ${stub_src} STUB_FAMILY="good")
hc_add_stub(major ${stub_src} STUB_FAMILY="major" STUB_ABI_MAJOR=2)
# Stops before op_cost: an older/leaner 1.0 table that must still load.
hc_add_stub(cut ${stub_src} STUB_FAMILY="cut" STUB_SIZE_UPTO=op_cost)
# Stops before axpy_rows, a required entry: too small.
hc_add_stub(small ${stub_src} STUB_FAMILY="small" STUB_SIZE_UPTO=axpy_rows)
hc_add_stub(noprobe ${stub_src} STUB_FAMILY="noprobe" STUB_PROBE=0)
hc_add_stub(nosym ${stub_src} STUB_FAMILY="nosym" STUB_NO_ENTRY)
hc_add_stub(nulltab ${stub_src} STUB_FAMILY="nulltab" STUB_ENTRY_NULL)
hc_add_stub(initfail ${stub_src} STUB_FAMILY="initfail" STUB_INIT_FAIL)
hc_add_stub(nullaxpy ${stub_src} STUB_FAMILY="nullaxpy" STUB_NULL_FIELD=axpy_rows)
# Well-formed ELF that dlopen(RTLD_NOW) refuses: an undefined symbol.
hc_add_stub(undef ${stub_src} STUB_FAMILY="undef" STUB_UNDEFINED)
hc_add_stub(nodev ${stub_src} STUB_FAMILY="nodev" STUB_N_DEVICES=0)
# ABI 1.3 no_device_reason: given; and set but past the table's size (a 1.2 table).
hc_add_stub(nodevwhy ${stub_src} STUB_FAMILY="nodevwhy" STUB_N_DEVICES=0
            STUB_NO_DEVICE_REASON="stub: no driver for the stub bus")
hc_add_stub(nodevold ${stub_src} STUB_FAMILY="nodevold" STUB_N_DEVICES=0
            STUB_NO_DEVICE_REASON="stub: not to be seen" STUB_SIZE_UPTO=no_device_reason)
hc_add_stub(misnamed ${stub_src} STUB_FAMILY="other")
hc_add_stub(duo-low ${stub_src} STUB_FAMILY="duo" STUB_VARIANT="low" STUB_PROBE=5)
hc_add_stub(duo-high ${stub_src} STUB_FAMILY="duo" STUB_VARIANT="high" STUB_PROBE=20)
# The best variant fails init(): the next one must be chosen.
hc_add_stub(trio-best ${stub_src} STUB_FAMILY="trio" STUB_VARIANT="best" STUB_PROBE=30
            STUB_INIT_FAIL)
hc_add_stub(trio-ok ${stub_src} STUB_FAMILY="trio" STUB_VARIANT="ok" STUB_PROBE=10)
hc_add_stub(example ${PROJECT_SOURCE_DIR}/docs/example-plugin/hc_example.c)

hc_add_check_test(test_loader WHITEBOX SOURCES test_loader.c LABELS unit TIMEOUT 120)
target_compile_definitions(test_loader PRIVATE HC_STUB_DIR="${HC_STUB_DIR}")
target_link_libraries(test_loader PRIVATE ${CMAKE_DL_LIBS})
# The suite dlopens the stubs and runs the `hotcold` command.
add_dependencies(test_loader ${HC_STUB_TARGETS} hotcold_cli)
