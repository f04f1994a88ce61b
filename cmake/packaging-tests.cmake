# Packaging tests, in the style of fmt's find-package-test and add-subdirectory-test.
# include() this from tests/CMakeLists.txt; it registers four ctest tests:
#
#   packaging.install          cmake --install <build> --prefix <build>/packaging-prefix
#   packaging.find_package     builds and runs tests/find-package against that prefix
#   packaging.add_subdirectory builds and runs tests/add-subdirectory (rcubatch as a subproject)
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

add_test(NAME packaging.find_package
  COMMAND ${CMAKE_CTEST_COMMAND}
    --build-and-test ${_rcubatch_pkg_src}/tests/find-package
                     ${_rcubatch_pkg_bin}/packaging-find-package
    ${_rcubatch_pkg_generator_args}
    ${_rcubatch_pkg_config_args}
    --build-options
      -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
      -DCMAKE_PREFIX_PATH=${_rcubatch_pkg_prefix}
      -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON
      ${_rcubatch_pkg_build_type}
    --test-command ${CMAKE_CTEST_COMMAND} --output-on-failure ${_rcubatch_pkg_ctest_config})
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

set_tests_properties(packaging.clean_prefix packaging.install PROPERTIES LABELS packaging)

unset(_rcubatch_pkg_src)
unset(_rcubatch_pkg_bin)
unset(_rcubatch_pkg_prefix)
unset(_rcubatch_pkg_multi_config)
unset(_rcubatch_pkg_install_config)
unset(_rcubatch_pkg_config_args)
unset(_rcubatch_pkg_ctest_config)
unset(_rcubatch_pkg_build_type)
unset(_rcubatch_pkg_generator_args)
