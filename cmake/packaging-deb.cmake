# cmake -DBUILD=<configured build tree> -DOUT=<empty folder> -DCPACK=<cpack> -DDPKG=<dpkg>
#       -DDPKG_DEB=<dpkg-deb> -DVERSION=<project version> -P packaging-deb.cmake
#
# The packaging.deb test: `cpack -G DEB` in BUILD, then checks the .deb the way a user sees it:
# `dpkg -c` lists the headers, the CMake package, the pkg-config files and tsan.supp under /usr;
# its control fields name the version and the Debian dependencies; `dpkg -x` unpacks it into
# OUT/root, where packaging.deb.consumer builds a program against it.
foreach(var IN ITEMS BUILD OUT CPACK DPKG DPKG_DEB VERSION)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "packaging-deb.cmake: -D${var}=... is missing")
  endif()
endforeach()
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")

# The package is the install rules' output (headers, generated CMake and pkg-config files, docs).
execute_process(
  COMMAND "${CPACK}" -G DEB --config "${BUILD}/CPackConfig.cmake" -B "${OUT}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpack -G DEB failed (${rc}):\n${out}")
endif()
set(deb "${OUT}/librcubatch-dev_${VERSION}_all.deb")
if(NOT EXISTS "${deb}")
  file(GLOB made "${OUT}/*.deb")
  message(FATAL_ERROR "cpack made no ${deb}; it made: ${made}\n${out}")
endif()

execute_process(COMMAND "${DPKG}" -c "${deb}" RESULT_VARIABLE rc OUTPUT_VARIABLE listing ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "dpkg -c ${deb} failed: ${err}")
endif()
set(errors "")
foreach(path IN ITEMS
    ./usr/include/rcubatch.hpp
    ./usr/include/rcubatch/registry.hpp
    ./usr/include/rcubatch/rollback_many.hpp
    ./usr/include/rcubatch/async_unregister.hpp
    ./usr/include/rcubatch/index/lfht_index.hpp
    ./usr/share/cmake/rcubatch/rcubatchConfig.cmake
    ./usr/share/cmake/rcubatch/rcubatchConfigVersion.cmake
    ./usr/share/pkgconfig/rcubatch.pc
    ./usr/share/rcubatch/tsan.supp
    ./usr/share/doc/rcubatch/README.md
    ./usr/share/doc/rcubatch/CHANGELOG.md
    ./usr/share/doc/rcubatch/docs/guide.md)
  string(FIND "${listing}" " ${path}\n" at)
  if(at EQUAL -1)
    string(APPEND errors "  dpkg -c does not list ${path}\n")
  endif()
endforeach()
# Control fields: field, then a regex its value must match.
foreach(field_regex IN ITEMS "Version|^${VERSION}$" "Architecture|^all$"
                             "Depends|(^|, )liburcu-dev( |,|$)" "Depends|(^|, )libboost-dev( |,|$)")
  string(REPLACE "|" ";" pair "${field_regex}")
  list(GET pair 0 field)
  list(SUBLIST pair 1 -1 regex)
  list(JOIN regex "|" regex)
  execute_process(COMMAND "${DPKG_DEB}" -f "${deb}" ${field} OUTPUT_VARIABLE value OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT value MATCHES "${regex}")
    string(APPEND errors "  control field ${field} is '${value}', which does not match '${regex}'\n")
  endif()
endforeach()
if(errors)
  message(FATAL_ERROR "${deb}:\n${errors}")
endif()

execute_process(COMMAND "${DPKG}" -x "${deb}" "${OUT}/root" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "dpkg -x ${deb} failed: ${err}")
endif()
string(REGEX MATCHALL "\n" lines "${listing}")
list(LENGTH lines count)
message(STATUS "${deb}: ${count} entries, headers, CMake package, pkg-config and docs listed; unpacked into ${OUT}/root")
