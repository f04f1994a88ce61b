# Packaging tests, in the style of fmt's find-package-test and add-subdirectory-test.
# include() this from tests/CMakeLists.txt; it registers these ctest tests (label `packaging`):
#
#   packaging.clean_prefix, packaging.install
#                      cmake --install <build> --prefix <build>/packaging-prefix, from empty
#   packaging.install_layout
#                      what that installed: share/cmake/rcubatch, share/pkgconfig, tsan.supp, no examples
#   packaging.find_package
#                      builds and runs tests/find-package against that prefix (no COMPONENTS)
#   packaging.components.qsbr_cds
#                      tests/find-package-components: COMPONENTS qsbr cds with only liburcu-qsbr.pc
#                      and liburcu-cds.pc on the pkg-config path; the program links no liburcu-memb
#   packaging.components.memb_missing, packaging.components.unknown
#                      the same path with COMPONENTS memb / nosuch: configure fails, naming why
#   packaging.components.unknown_flavor
#                      rcubatch_select_flavor(<target> nosuch): configure fails, naming it and the flavors
#   packaging.components.tsan
#                      the qsbr consumer built with -fsanitize=thread, run with the installed tsan.supp
#   packaging.pkg_config
#                      tests/pkg-config/Makefile: make + pkg-config only, rcubatch.pc and rcubatch-qsbr.pc
#   packaging.add_subdirectory
#                      builds and runs tests/add-subdirectory (rcubatch as a subproject)
#   packaging.deb      cpack -G DEB; dpkg -c lists the headers, CMake package, pkg-config files, tsan.supp
#                      and docs; the control fields; dpkg -x into a scratch root
#                      (cmake/packaging-deb.cmake)
#   packaging.deb.find_package, packaging.deb.pkg_config
#                      tests/find-package and tests/pkg-config built against that root's /usr
#   example.template.<name>.copy, example.template.<name>
#                      examples/<name> copied to an empty folder (with examples/common when it uses
#                      median.hpp), configured, built and its ctest tests run against that prefix
#
# The consumer projects are configured from scratch by `ctest --build-and-test`. They get the
# parent's compiler and build type but not its CMAKE_CXX_FLAGS: a sanitizer preset's flags are
# meant for our tests, and the consumers only have to prove the packaging works.
include_guard(GLOBAL)

set(_rcubatch_pkg_src ${rcubatch_SOURCE_DIR})
set(_rcubatch_pkg_bin ${rcubatch_BINARY_DIR})
set(_rcubatch_pkg_prefix ${_rcubatch_pkg_bin}/packaging-prefix)

get_property(_rcubatch_pkg_multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
if(_rcubatch_pkg_multi_config)
  set(_rcubatch_pkg_install_config --config $<CONFIG>)
  set(_rcubatch_pkg_config_args --build-config $<CONFIG>)
  set(_rcubatch_pkg_ctest_config -C $<CONFIG>)
  set(_rcubatch_pkg_build_type)
else()
  set(_rcubatch_pkg_install_config)
  set(_rcubatch_pkg_config_args)
  set(_rcubatch_pkg_ctest_config)
  set(_rcubatch_pkg_build_type -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE})
endif()

set(_rcubatch_pkg_generator_args --build-generator ${CMAKE_GENERATOR})
if(CMAKE_GENERATOR_PLATFORM)
  list(APPEND _rcubatch_pkg_generator_args --build-generator-platform ${CMAKE_GENERATOR_PLATFORM})
endif()
if(CMAKE_GENERATOR_TOOLSET)
  list(APPEND _rcubatch_pkg_generator_args --build-generator-toolset ${CMAKE_GENERATOR_TOOLSET})
endif()
if(CMAKE_MAKE_PROGRAM)
  list(APPEND _rcubatch_pkg_generator_args --build-makeprogram ${CMAKE_MAKE_PROGRAM})
endif()

# Start from an empty prefix so that a file dropped from the install rules cannot be masked by
# a copy left over from an earlier run.
add_test(NAME packaging.clean_prefix
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${_rcubatch_pkg_prefix})
set_tests_properties(packaging.clean_prefix PROPERTIES
  FIXTURES_SETUP rcubatch_prefix_clean)

add_test(NAME packaging.install
  COMMAND ${CMAKE_COMMAND} --install ${_rcubatch_pkg_bin} ${_rcubatch_pkg_install_config}
          --prefix ${_rcubatch_pkg_prefix})
set_tests_properties(packaging.install PROPERTIES
  FIXTURES_REQUIRED rcubatch_prefix_clean
  FIXTURES_SETUP rcubatch_installed)

# _rcubatch_pkg_consumer_test(<test> <source dir> <binary dir> <prefix> [ctest args...]): a consumer
# project configured, built and tested from scratch against the rcubatch installed under <prefix>.
function(_rcubatch_pkg_consumer_test name source binary prefix)
  add_test(NAME ${name}
    COMMAND ${CMAKE_CTEST_COMMAND}
      --build-and-test ${source} ${binary}
      ${_rcubatch_pkg_generator_args}
      ${_rcubatch_pkg_config_args}
      --build-options
        -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
        -DCMAKE_PREFIX_PATH=${prefix}
        -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON
        ${_rcubatch_pkg_build_type}
      --test-command ${CMAKE_CTEST_COMMAND} --output-on-failure ${_rcubatch_pkg_ctest_config} ${ARGN})
endfunction()

_rcubatch_pkg_consumer_test(packaging.find_package ${_rcubatch_pkg_src}/tests/find-package
                            ${_rcubatch_pkg_bin}/packaging-find-package ${_rcubatch_pkg_prefix})
set_tests_properties(packaging.find_package PROPERTIES
  FIXTURES_REQUIRED rcubatch_installed
  LABELS packaging
  TIMEOUT 600)

add_test(NAME packaging.add_subdirectory
  COMMAND ${CMAKE_CTEST_COMMAND}
    --build-and-test ${_rcubatch_pkg_src}/tests/add-subdirectory
                     ${_rcubatch_pkg_bin}/packaging-add-subdirectory
    ${_rcubatch_pkg_generator_args}
    ${_rcubatch_pkg_config_args}
    --build-options
      -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
      ${_rcubatch_pkg_build_type}
    --test-command ${CMAKE_CTEST_COMMAND} --output-on-failure ${_rcubatch_pkg_ctest_config})
set_tests_properties(packaging.add_subdirectory PROPERTIES
  LABELS packaging
  TIMEOUT 600)

list(JOIN RCUBATCH_FLAVORS "," _rcubatch_pkg_flavors)  # a ';' would split the -D argument
add_test(NAME packaging.install_layout
  COMMAND ${CMAKE_COMMAND} -DPREFIX=${_rcubatch_pkg_prefix} -DFLAVORS=${_rcubatch_pkg_flavors}
          -DINCLUDEDIR=${CMAKE_INSTALL_INCLUDEDIR} -DDATADIR=${CMAKE_INSTALL_DATADIR}
          -DBINDIR=${CMAKE_INSTALL_BINDIR} -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
          -DCMAKEDIR=${RCUBATCH_INSTALL_CMAKEDIR} -DPKGCONFIGDIR=${RCUBATCH_INSTALL_PKGCONFIGDIR}
          -P ${_rcubatch_pkg_src}/cmake/packaging-check-layout.cmake)
set_tests_properties(packaging.install_layout PROPERTIES
  FIXTURES_REQUIRED rcubatch_installed
  LABELS packaging)

# A pkg-config search path with only the two liburcu modules a qsbr + rculfhash consumer needs.
# PKG_CONFIG_LIBDIR replaces pkg-config's default path, so liburcu-memb.pc is out of sight.
set(_rcubatch_pkg_pcdir ${_rcubatch_pkg_bin}/packaging-pkgconfig-qsbr-cds)
file(MAKE_DIRECTORY ${_rcubatch_pkg_pcdir})
foreach(_rcubatch_pkg_module IN ITEMS liburcu-qsbr liburcu-cds)
  pkg_get_variable(_rcubatch_pkg_module_dir ${_rcubatch_pkg_module} pcfiledir)
  file(COPY ${_rcubatch_pkg_module_dir}/${_rcubatch_pkg_module}.pc DESTINATION ${_rcubatch_pkg_pcdir})
endforeach()
set(_rcubatch_pkg_only_qsbr_cds
  ${CMAKE_COMMAND} -E env PKG_CONFIG_LIBDIR=${_rcubatch_pkg_pcdir} PKG_CONFIG_PATH=)

set(_rcubatch_pkg_components_options
  -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
  -DCMAKE_PREFIX_PATH=${_rcubatch_pkg_prefix}
  -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON
  ${_rcubatch_pkg_build_type})

add_test(NAME packaging.components.qsbr_cds
  COMMAND ${_rcubatch_pkg_only_qsbr_cds} ${CMAKE_CTEST_COMMAND}
    --build-and-test ${_rcubatch_pkg_src}/tests/find-package-components
                     ${_rcubatch_pkg_bin}/packaging-components
    ${_rcubatch_pkg_generator_args}
    ${_rcubatch_pkg_config_args}
    --build-options ${_rcubatch_pkg_components_options}
    --test-command ${CMAKE_CTEST_COMMAND} --output-on-failure ${_rcubatch_pkg_ctest_config})

# Configure only, expected to fail: the message must say what is wrong (CMake wraps long error
# messages: match a line break as a space). Extra arguments go to cmake.
function(_rcubatch_pkg_expect_configure_failure name component expected)
  add_test(NAME packaging.components.${name}
    COMMAND ${_rcubatch_pkg_only_qsbr_cds} ${CMAKE_COMMAND}
      -S ${_rcubatch_pkg_src}/tests/find-package-components
      -B ${_rcubatch_pkg_bin}/packaging-components-${name}
      -G ${CMAKE_GENERATOR}
      ${_rcubatch_pkg_components_options}
      -DRCUBATCH_TEST_COMPONENTS=${component} ${ARGN})
  set_tests_properties(packaging.components.${name} PROPERTIES PASS_REGULAR_EXPRESSION "${expected}")
endfunction()
_rcubatch_pkg_expect_configure_failure(memb_missing memb "rcubatch component memb needs liburcu-memb")
_rcubatch_pkg_expect_configure_failure(unknown nosuch "unknown component 'nosuch'")
_rcubatch_pkg_expect_configure_failure(unknown_flavor "qsbr$<SEMICOLON>cds"
  "unknown liburcu flavor 'nosuch'\\.[ \n]+Expected one of: memb, qsbr, mb, bp\\." -DRCUBATCH_TEST_FLAVOR=nosuch)

add_test(NAME packaging.components.tsan
  COMMAND ${CMAKE_CTEST_COMMAND}
    --build-and-test ${_rcubatch_pkg_src}/tests/find-package-components
                     ${_rcubatch_pkg_bin}/packaging-components-tsan
    ${_rcubatch_pkg_generator_args}
    ${_rcubatch_pkg_config_args}
    --build-options ${_rcubatch_pkg_components_options} -DRCUBATCH_TEST_TSAN=ON
    --test-command ${CMAKE_CTEST_COMMAND} --output-on-failure ${_rcubatch_pkg_ctest_config})

find_program(RCUBATCH_MAKE_PROGRAM NAMES make gmake DOC "make, for the pkg-config packaging test")
mark_as_advanced(RCUBATCH_MAKE_PROGRAM)
add_test(NAME packaging.pkg_config
  COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${_rcubatch_pkg_prefix}/${CMAKE_INSTALL_DATADIR}/pkgconfig
    ${RCUBATCH_MAKE_PROGRAM} -B -C ${_rcubatch_pkg_src}/tests/pkg-config
    OUT=${_rcubatch_pkg_bin}/packaging-pkg-config CXX=${CMAKE_CXX_COMPILER} PKG_CONFIG=${PKG_CONFIG_EXECUTABLE}
    check)
if(NOT RCUBATCH_MAKE_PROGRAM)
  set_tests_properties(packaging.pkg_config PROPERTIES DISABLED TRUE)  # reported by ctest as not run
endif()

set_tests_properties(packaging.components.qsbr_cds packaging.components.memb_missing
                     packaging.components.unknown packaging.components.unknown_flavor packaging.components.tsan packaging.pkg_config PROPERTIES
  FIXTURES_REQUIRED rcubatch_installed
  LABELS packaging
  TIMEOUT 600)

set_tests_properties(packaging.clean_prefix packaging.install PROPERTIES LABELS packaging)

# The Debian package: built, listed, unpacked into a scratch root, and consumed from there.
find_program(RCUBATCH_DPKG NAMES dpkg DOC "dpkg, for the packaging.deb tests")
find_program(RCUBATCH_DPKG_DEB NAMES dpkg-deb DOC "dpkg-deb, for the packaging.deb tests")
mark_as_advanced(RCUBATCH_DPKG RCUBATCH_DPKG_DEB)
set(_rcubatch_pkg_deb ${_rcubatch_pkg_bin}/packaging-deb)
add_test(NAME packaging.deb
  COMMAND ${CMAKE_COMMAND} -DBUILD=${_rcubatch_pkg_bin} -DOUT=${_rcubatch_pkg_deb} -DCPACK=${CMAKE_CPACK_COMMAND}
          -DDPKG=${RCUBATCH_DPKG} -DDPKG_DEB=${RCUBATCH_DPKG_DEB} -DVERSION=${PROJECT_VERSION}
          -P ${_rcubatch_pkg_src}/cmake/packaging-deb.cmake)
set_tests_properties(packaging.deb PROPERTIES FIXTURES_SETUP rcubatch_deb_unpacked)
_rcubatch_pkg_consumer_test(packaging.deb.find_package ${_rcubatch_pkg_src}/tests/find-package
                            ${_rcubatch_pkg_deb}/find-package ${_rcubatch_pkg_deb}/root/usr)
add_test(NAME packaging.deb.pkg_config
  COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${_rcubatch_pkg_deb}/root/usr/share/pkgconfig
    ${RCUBATCH_MAKE_PROGRAM} -B -C ${_rcubatch_pkg_src}/tests/pkg-config
    OUT=${_rcubatch_pkg_deb}/pkg-config CXX=${CMAKE_CXX_COMPILER} PKG_CONFIG=${PKG_CONFIG_EXECUTABLE}
    check)
set_tests_properties(packaging.deb.find_package packaging.deb.pkg_config PROPERTIES
  FIXTURES_REQUIRED rcubatch_deb_unpacked
  TIMEOUT 600)
set_tests_properties(packaging.deb packaging.deb.find_package packaging.deb.pkg_config PROPERTIES LABELS packaging)
if(NOT RCUBATCH_DPKG OR NOT RCUBATCH_DPKG_DEB OR NOT RCUBATCH_MAKE_PROGRAM)  # not a Debian system
  set_tests_properties(packaging.deb packaging.deb.find_package packaging.deb.pkg_config PROPERTIES DISABLED TRUE)
endif()

# Each example directory is a template: copied out of the tree, it builds and runs against the
# installed package alone. Entries: <name>;<sibling it needs or "">;<ctest regex of its tests>.
# netdev runs its smoke tests only (its seed scripts run in the tree's own build).
set(_rcubatch_pkg_templates
  "demo\;common\;."
  "sessions\;\;."
  "fib\;\;."
  "netdev\;common\;^netdev\\.smoke\\.")
foreach(_rcubatch_pkg_entry IN LISTS _rcubatch_pkg_templates)
  list(GET _rcubatch_pkg_entry 0 _rcubatch_pkg_name)
  list(GET _rcubatch_pkg_entry 1 _rcubatch_pkg_with)
  list(GET _rcubatch_pkg_entry 2 _rcubatch_pkg_regex)
  set(_rcubatch_pkg_dest ${_rcubatch_pkg_bin}/example-templates/${_rcubatch_pkg_name})
  add_test(NAME example.template.${_rcubatch_pkg_name}.copy
    COMMAND ${CMAKE_COMMAND} -DEXAMPLES=${_rcubatch_pkg_src}/examples -DNAME=${_rcubatch_pkg_name}
            -DWITH=${_rcubatch_pkg_with} -DDEST=${_rcubatch_pkg_dest}/src
            -P ${_rcubatch_pkg_src}/cmake/example-template-copy.cmake)
  set_tests_properties(example.template.${_rcubatch_pkg_name}.copy PROPERTIES
    FIXTURES_SETUP rcubatch_template_${_rcubatch_pkg_name}
    LABELS packaging)
  _rcubatch_pkg_consumer_test(example.template.${_rcubatch_pkg_name}
    ${_rcubatch_pkg_dest}/src/${_rcubatch_pkg_name} ${_rcubatch_pkg_dest}/build ${_rcubatch_pkg_prefix}
    --no-tests=error -R ${_rcubatch_pkg_regex})
  set_tests_properties(example.template.${_rcubatch_pkg_name} PROPERTIES
    FIXTURES_REQUIRED "rcubatch_installed;rcubatch_template_${_rcubatch_pkg_name}"
    LABELS packaging
    TIMEOUT 900)
endforeach()

unset(_rcubatch_pkg_src)
unset(_rcubatch_pkg_bin)
unset(_rcubatch_pkg_prefix)
unset(_rcubatch_pkg_multi_config)
unset(_rcubatch_pkg_install_config)
unset(_rcubatch_pkg_config_args)
unset(_rcubatch_pkg_ctest_config)
unset(_rcubatch_pkg_build_type)
unset(_rcubatch_pkg_generator_args)
unset(_rcubatch_pkg_flavors)
unset(_rcubatch_pkg_pcdir)
unset(_rcubatch_pkg_module)
unset(_rcubatch_pkg_module_dir)
unset(_rcubatch_pkg_only_qsbr_cds)
unset(_rcubatch_pkg_components_options)
unset(_rcubatch_pkg_templates)
unset(_rcubatch_pkg_deb)
unset(_rcubatch_pkg_entry)
unset(_rcubatch_pkg_name)
unset(_rcubatch_pkg_with)
unset(_rcubatch_pkg_regex)
unset(_rcubatch_pkg_dest)
