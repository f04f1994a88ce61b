# rcubatch_select_flavor(<target> <memb|qsbr|mb|bp>)
#
# Builds <target> against one liburcu flavor and makes it the default flavor of the rcubatch
# headers in that target:
#   - links rcubatch::flavor_<flavor> PRIVATE (the matching liburcu-<flavor> library), and
#   - adds the PRIVATE compile definition RCUBATCH_DEFAULT_FLAVOR=<flavor>.
#
# Works the same after find_package(rcubatch) and after add_subdirectory(rcubatch): both
# provide the rcubatch::flavor_<flavor> targets. Call it at most once per target.
include_guard(GLOBAL)

function(rcubatch_select_flavor target flavor)
  set(known_flavors memb qsbr mb bp)
  if(ARGN)
    message(FATAL_ERROR
      "rcubatch_select_flavor(${target} ${flavor}): unexpected extra arguments '${ARGN}'. "
      "Usage: rcubatch_select_flavor(<target> <memb|qsbr|mb|bp>)")
  endif()
  if(NOT flavor IN_LIST known_flavors)
    message(FATAL_ERROR
      "rcubatch_select_flavor(${target} ${flavor}): unknown liburcu flavor '${flavor}'. "
      "Expected one of: memb, qsbr, mb, bp.")
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
