# cmake -DEXAMPLES=<examples dir> -DNAME=<example> -DDEST=<empty folder> [-DWITH=common] -P example-template-copy.cmake
#
# Copies examples/<NAME> (and examples/<WITH>, a sibling it names by ../<WITH>) into DEST, emptied
# first, as a user copies a template out of the tree: nothing else of the tree comes along.
foreach(var IN ITEMS EXAMPLES NAME DEST)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "example-template-copy.cmake: -D${var}=... is missing")
  endif()
endforeach()
file(REMOVE_RECURSE "${DEST}")
file(MAKE_DIRECTORY "${DEST}")
foreach(dir IN ITEMS ${NAME} ${WITH})
  if(NOT IS_DIRECTORY "${EXAMPLES}/${dir}")
    message(FATAL_ERROR "example-template-copy.cmake: ${EXAMPLES}/${dir} is not a directory")
  endif()
  file(COPY "${EXAMPLES}/${dir}" DESTINATION "${DEST}")
endforeach()
message(STATUS "copied ${NAME} ${WITH} to ${DEST}")
