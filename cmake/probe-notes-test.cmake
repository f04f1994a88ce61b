# The probes-in-a-binary test: `readelf -n BINARY` must list each of the probes named in PROBES
# (provider rcubatch), every site of each with the argument count below, and no rcubatch probe
# this table does not know. The table is the probes' reference (docs/observability.md lists the
# same, from readelf's output); add a row with each new probe site.
#   cmake -DREADELF=... -DBINARY=... -DPROBES=name;name... -DSDT_FOUND=ON|OFF -DPROBES_ON=ON|OFF -P probe-notes-test.cmake
# Prints "rcubatch-probes: skipped: <why>" (the test's SKIP_REGULAR_EXPRESSION) without readelf,
# without <sys/sdt.h>, or with the probes compiled out (RCUBATCH_PROBES=OFF).
set(kProbeArgs
  batch_start=2         # batch_id, objects
  phase_end=4           # batch_id, phase id, phase name, ns
  grace_period=3        # batch_id, the domain's GP number, ns
  drain_stall=4         # batch_id, object address, name (or type name), usage count
  batch_end=4           # batch_id, objects, grace periods, ns
  async_submit=3        # reclaimer id, ticket, bytes
  async_budget_block=3  # reclaimer id, bytes, charged bytes
  async_batch_start=3   # reclaimer id, last ticket, requests
  async_complete=3      # reclaimer id, last ticket, requests
  index_resize=3)       # index address, old buckets (0: unknown), new buckets

if(NOT PROBES_ON)
  message("rcubatch-probes: skipped: the probes are compiled out (RCUBATCH_PROBES=OFF)")
  return()
endif()
if(NOT SDT_FOUND)
  message("rcubatch-probes: skipped: <sys/sdt.h> was not found (apt-get install systemtap-sdt-dev), so no probe is compiled in")
  return()
endif()
if(NOT READELF OR NOT EXISTS "${READELF}")
  message("rcubatch-probes: skipped: readelf was not found (apt-get install binutils)")
  return()
endif()

execute_process(COMMAND ${READELF} -n ${BINARY} OUTPUT_VARIABLE notes RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -n ${BINARY} failed (${rc})")
endif()

# One "name|argument count" per rcubatch probe site, from the notes' Provider/Name/Arguments lines.
string(REPLACE "\n" ";" lines "${notes}")
set(sites "")
set(provider "")
set(name "")
foreach(line IN LISTS lines)
  if(line MATCHES "^ *Provider: (.*)$")
    set(provider "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^ *Name: (.*)$")
    set(name "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^ *Arguments:(.*)$" AND provider STREQUAL "rcubatch")
    string(STRIP "${CMAKE_MATCH_1}" args)
    set(count 0)
    if(NOT args STREQUAL "")
      string(REGEX REPLACE " +" ";" arg_list "${args}")
      list(LENGTH arg_list count)
    endif()
    list(APPEND sites "${name}|${count}")
  endif()
endforeach()

set(failures "")
foreach(site IN LISTS sites)
  string(REPLACE "|" ";" parts "${site}")
  list(GET parts 0 site_name)
  list(GET parts 1 site_count)
  set(known "")
  foreach(row IN LISTS kProbeArgs)
    if(row MATCHES "^${site_name}=([0-9]+)$")
      set(known "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  if(known STREQUAL "")
    list(APPEND failures "rcubatch:${site_name} is in the binary but not in the table of cmake/probe-notes-test.cmake")
  elseif(NOT known EQUAL site_count)
    list(APPEND failures "rcubatch:${site_name} has a site with ${site_count} arguments, the table says ${known}")
  endif()
endforeach()
foreach(wanted IN LISTS PROBES)
  if(NOT "${sites}" MATCHES "(^|;)${wanted}\\|")
    list(APPEND failures "rcubatch:${wanted} is not among the binary's probes (readelf -n ${BINARY})")
  endif()
endforeach()

list(LENGTH sites site_count_total)
if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "rcubatch probes in ${BINARY}:\n  ${text}")
endif()
message(STATUS "rcubatch probes in ${BINARY}: ${site_count_total} sites of ${PROBES}, each with its argument count")
