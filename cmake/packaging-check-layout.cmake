# cmake -DPREFIX=<install prefix> -DINCLUDEDIR=.. -DDATADIR=.. -DBINDIR=.. -DLIBDIR=..
#       -DCMAKEDIR=.. -DPKGCONFIGDIR=.. -P packaging-check-layout.cmake
#
# What `cmake --install` put under PREFIX (the directories are the build's, relative to it): the
# headers, the CMake package and pkg-config files (by default under the architecture-independent
# data dir), the TSan suppressions; no example programs (RCUBATCH_INSTALL_EXAMPLES is off by
# default) and nothing under LIBDIR.
foreach(var IN ITEMS PREFIX INCLUDEDIR DATADIR BINDIR LIBDIR CMAKEDIR PKGCONFIGDIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "packaging-check-layout.cmake: -D${var}=... is missing")
  endif()
endforeach()

set(expected
  ${INCLUDEDIR}/rcubatch.hpp
  ${INCLUDEDIR}/rcubatch/index/lfht_index.hpp
  ${CMAKEDIR}/rcubatchConfig.cmake
  ${CMAKEDIR}/rcubatchConfigVersion.cmake
  ${CMAKEDIR}/rcubatch_coreTargets.cmake
  ${CMAKEDIR}/rcubatch_membTargets.cmake
  ${CMAKEDIR}/rcubatch_qsbrTargets.cmake
  ${CMAKEDIR}/rcubatch_mbTargets.cmake
  ${CMAKEDIR}/rcubatch_bpTargets.cmake
  ${CMAKEDIR}/rcubatch_cdsTargets.cmake
  ${CMAKEDIR}/rcubatchFlavor.cmake
  ${PKGCONFIGDIR}/rcubatch.pc
  ${PKGCONFIGDIR}/rcubatch-memb.pc
  ${PKGCONFIGDIR}/rcubatch-qsbr.pc
  ${PKGCONFIGDIR}/rcubatch-mb.pc
  ${PKGCONFIGDIR}/rcubatch-bp.pc
  ${DATADIR}/rcubatch/tsan.supp)
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
