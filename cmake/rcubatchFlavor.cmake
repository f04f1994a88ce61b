# rcubatch_select_flavor(<target> <flavor>), <flavor> one of RCUBATCH_FLAVORS (below)
#
# Builds <target> against one liburcu flavor and makes it the default flavor of the rcubatch
# headers in that target:
#   - links rcubatch::flavor_<flavor> PRIVATE (the matching liburcu-<flavor> library), and
#   - adds the PRIVATE compile definition RCUBATCH_DEFAULT_FLAVOR=<flavor>.
#
# Works the same after find_package(rcubatch) and after add_subdirectory(rcubatch): both
# provide the rcubatch::flavor_<flavor> targets. Call it at most once per target.
#
# Also sets, in the including scope (find_package(rcubatch), rcubatch's own CMakeLists.txt, which
# passes them to an add_subdirectory parent):
#   RCUBATCH_FLAVORS         the liburcu flavors, the default (memb) first: the one CMake spelling
#                            of the list. It must match rcubatch::liburcu_flavors in
#                            include/rcubatch/flavor_list.hpp (tests/flavor_list_test.cpp checks).
#   RCUBATCH_FLAVOR_TARGETS  rcubatch::flavor_<f> for each of them: what a program links when it
#                            dispatches over all of them (rcubatch::with_flavor).
# Set before the include guard, so that every scope that includes this file gets them.
set(RCUBATCH_FLAVORS memb qsbr mb bp)
list(TRANSFORM RCUBATCH_FLAVORS PREPEND "rcubatch::flavor_" OUTPUT_VARIABLE RCUBATCH_FLAVOR_TARGETS)

include_guard(GLOBAL)

# The function may be called from a scope that never included this file (a project above an
# add_subdirectory(rcubatch)), so it reads the list from a global property, not the variable.
set_property(GLOBAL PROPERTY RCUBATCH_FLAVORS "${RCUBATCH_FLAVORS}")

function(rcubatch_select_flavor target flavor)
  get_property(known_flavors GLOBAL PROPERTY RCUBATCH_FLAVORS)
  list(JOIN known_flavors "|" usage_flavors)
  list(JOIN known_flavors ", " expected_flavors)
  if(ARGN)
    message(FATAL_ERROR
      "rcubatch_select_flavor(${target} ${flavor}): unexpected extra arguments '${ARGN}'. "
      "Usage: rcubatch_select_flavor(<target> <${usage_flavors}>)")
  endif()
  if(NOT flavor IN_LIST known_flavors)
    message(FATAL_ERROR
      "rcubatch_select_flavor(${target} ${flavor}): unknown liburcu flavor '${flavor}'. "
      "Expected one of: ${expected_flavors}.")
  endif()
  if(NOT TARGET "${target}")
    message(FATAL_ERROR
      "rcubatch_select_flavor(${target} ${flavor}): '${target}' is not a target. "
      "Call it after add_executable()/add_library().")
  endif()
  if(NOT TARGET "rcubatch::flavor_${flavor}")
    message(FATAL_ERROR
      "rcubatch_select_flavor(${target} ${flavor}): target rcubatch::flavor_${flavor} does not "
      "exist. Call find_package(rcubatch) or add_subdirectory(<rcubatch>) first.")
  endif()
  get_target_property(existing_definitions "${target}" COMPILE_DEFINITIONS)
  if(existing_definitions MATCHES "(^|;)RCUBATCH_DEFAULT_FLAVOR=")
    message(FATAL_ERROR
      "rcubatch_select_flavor(${target} ${flavor}): '${target}' already has a default flavor "
      "(RCUBATCH_DEFAULT_FLAVOR is set). Select one flavor per target.")
  endif()

  target_link_libraries("${target}" PRIVATE "rcubatch::flavor_${flavor}")
  target_compile_definitions("${target}" PRIVATE "RCUBATCH_DEFAULT_FLAVOR=${flavor}")
endfunction()
