# cmake -DFILE=<template source> -DLIMIT=<n> -P count-template-lines.cmake
#
# A template's header comment states how many of its lines are specific to rcubatch ("N of the
# file's M"). This counts them as that comment says — lines, comments left out, that name
# rcubatch:: or indexed:: or call a member of the registry (t.), a batch (b.), the unregister
# queues (q.) or an owner_hook (.owner.) — and fails when the statement is stale or N > LIMIT.
cmake_minimum_required(VERSION 3.25)  # CMP0007: empty lines are list elements too
foreach(var IN ITEMS FILE LIMIT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "count-template-lines.cmake: -D${var}=... is missing")
  endif()
endforeach()
file(READ "${FILE}" text)
string(REPLACE ";" "<semicolon>" text "${text}")  # a list element per line, not per ';'
string(REPLACE "[" "<lb>" text "${text}")  # brackets would make CMake keep a ; inside a list element
string(REPLACE "]" "<rb>" text "${text}")
string(REGEX REPLACE "\n$" "" text "${text}")
string(REPLACE "\n" ";" lines "${text}")
list(LENGTH lines total)
set(specific 0)
foreach(line IN LISTS lines)
  if(line MATCHES "^[ \t]*//")
    continue()
  endif()
  if(line MATCHES "rcubatch::|indexed::|(^|[^A-Za-z0-9_])[tbq]\\.|\\.owner\\.")
    math(EXPR specific "${specific} + 1")
  endif()
endforeach()
string(REPLACE ";" "\n" header "${lines}")
if(NOT header MATCHES "// ([0-9]+) of the file's ([0-9]+)")
  message(FATAL_ERROR "${FILE}: no \"N of the file's M\" statement of its rcubatch-specific lines in its header comment")
endif()
set(stated "${CMAKE_MATCH_1}")
set(stated_total "${CMAKE_MATCH_2}")
message(STATUS "${FILE}: ${specific} rcubatch-specific lines of ${total} (stated: ${stated} of ${stated_total}, limit ${LIMIT})")
if(NOT specific EQUAL stated OR NOT total EQUAL stated_total)
  message(FATAL_ERROR "${FILE}: its header says ${stated} rcubatch-specific lines of ${stated_total}; counted ${specific} of ${total}: update the comment")
endif()
if(specific GREATER LIMIT)
  message(FATAL_ERROR "${FILE}: ${specific} rcubatch-specific lines, more than ${LIMIT}")
endif()
