# Install into a scratch prefix, build against it (pkg-config, find_package,
# an out-of-tree plugin), move it, and check the moved library finds its
# plugins (tests/packaging.sh).  Needs the whole build: it installs it.
add_test(NAME test_packaging
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/packaging.sh ${CMAKE_BINARY_DIR}
                 ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/packaging-scratch
                 ${CMAKE_INSTALL_LIBDIR} "${HC_SANITIZE}")
set_tests_properties(test_packaging PROPERTIES LABELS "unit" TIMEOUT 120)
