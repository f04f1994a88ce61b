# cmake -DPREFIX=<install prefix> -DFLAVORS=memb,qsbr,... -DINCLUDEDIR=.. -DDATADIR=.. -DBINDIR=..
#       -DLIBDIR=.. -DCMAKEDIR=.. -DPKGCONFIGDIR=.. -P packaging-check-layout.cmake
#
# What `cmake --install` put under PREFIX (the directories are the build's, relative to it): the
# headers, the CMake package and pkg-config files (by default under the architecture-independent
# data dir), the TSan suppressions; no example programs (RCUBATCH_INSTALL_EXAMPLES is off by
# default) and nothing under LIBDIR.
foreach(var IN ITEMS PREFIX FLAVORS INCLUDEDIR DATADIR BINDIR LIBDIR CMAKEDIR PKGCONFIGDIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "packaging-check-layout.cmake: -D${var}=... is missing")
  endif()
endforeach()

set(expected
  ${INCLUDEDIR}/rcubatch.hpp
  ${INCLUDEDIR}/rcubatch/flavor_list.hpp
  ${INCLUDEDIR}/rcubatch/index/lfht_index.hpp
  ${CMAKEDIR}/rcubatchConfig.cmake
  ${CMAKEDIR}/rcubatchConfigVersion.cmake
  ${CMAKEDIR}/rcubatch_coreTargets.cmake
  ${CMAKEDIR}/rcubatch_cdsTargets.cmake
  ${CMAKEDIR}/rcubatchFlavor.cmake
  ${PKGCONFIGDIR}/rcubatch.pc
  ${DATADIR}/rcubatch/tsan.supp)
# Per flavor (RCUBATCH_FLAVORS, passed comma-separated): its export set and its .pc file.
string(REPLACE "," ";" flavors "${FLAVORS}")
foreach(flavor IN LISTS flavors)
  list(APPEND expected ${CMAKEDIR}/rcubatch_${flavor}Targets.cmake ${PKGCONFIGDIR}/rcubatch-${flavor}.pc)
endforeach()
set(unexpected
  ${BINDIR}
  ${DATADIR}/rcubatch/netsim
  ${LIBDIR})

set(errors "")
foreach(path IN LISTS expected)
  if(NOT EXISTS "${PREFIX}/${path}")
    string(APPEND errors "  missing: ${path}\n")
  endif()
endforeach()
foreach(path IN LISTS unexpected)
  if(EXISTS "${PREFIX}/${path}")
    string(APPEND errors "  installed although it should not be: ${path}\n")
  endif()
endforeach()
if(errors)
  message(FATAL_ERROR "install layout under ${PREFIX}:\n${errors}")
endif()
file(GLOB_RECURSE installed RELATIVE "${PREFIX}" "${PREFIX}/*")
list(LENGTH installed count)
message(STATUS "install layout under ${PREFIX}: ${count} files, as expected")
