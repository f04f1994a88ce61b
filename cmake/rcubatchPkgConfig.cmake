# rcubatch_write_pkgconfig_files(<dir>): writes rcubatch.pc and rcubatch-<flavor>.pc into <dir>,
# for installation into RCUBATCH_INSTALL_PKGCONFIGDIR (included by the top-level CMakeLists.txt).
#
#   pkg-config --cflags --libs rcubatch        memb, the default flavor (as rcubatch::rcubatch)
#   pkg-config --cflags --libs rcubatch-qsbr   qsbr only: liburcu-qsbr, RCUBATCH_DEFAULT_FLAVOR=qsbr
#   pkg-config --variable=tsan_suppressions rcubatch
#
# rculfhash (rcubatch/index/lfht_index.hpp): add liburcu-cds to the pkg-config line.
include_guard(GLOBAL)

function(rcubatch_write_pkgconfig_files dir)
  # The prefix as seen from the installed .pc file, so that `cmake --install --prefix <p>` and
  # DESTDIR staging give a working file.
  if(IS_ABSOLUTE "${RCUBATCH_INSTALL_PKGCONFIGDIR}")
    set(RCUBATCH_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  else()
    file(RELATIVE_PATH up "/prefix/${RCUBATCH_INSTALL_PKGCONFIGDIR}" "/prefix")
    string(REGEX REPLACE "/$" "" up "${up}")
    set(RCUBATCH_PC_PREFIX "\${pcfiledir}/${up}")
  endif()
  set(RCUBATCH_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
  set(RCUBATCH_PC_TSAN_SUPPRESSIONS "${RCUBATCH_INSTALL_TSAN_SUPPRESSIONS}")
  foreach(var IN ITEMS RCUBATCH_PC_INCLUDEDIR RCUBATCH_PC_TSAN_SUPPRESSIONS)
    if(NOT IS_ABSOLUTE "${${var}}")
      set(${var} "\${prefix}/${${var}}")
    endif()
  endforeach()

  # Boost.Intrusive ships no .pc file: name its directory unless the compiler searches it anyway.
  set(RCUBATCH_PC_EXTRA_CFLAGS "")
  get_target_property(boost_include_dirs Boost::headers INTERFACE_INCLUDE_DIRECTORIES)
  foreach(d IN LISTS boost_include_dirs)
    if(d AND NOT d IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
      string(APPEND RCUBATCH_PC_EXTRA_CFLAGS " -I${d}")
    endif()
  endforeach()

  foreach(flavor IN ITEMS default ${RCUBATCH_FLAVORS})  # rcubatchFlavor.cmake's list
    if(flavor STREQUAL "default")
      set(RCUBATCH_PC_FLAVOR memb)
      set(RCUBATCH_PC_NAME "rcubatch")
      set(file_name rcubatch.pc)
      set(RCUBATCH_PC_SUMMARY "rcubatch with its default flavor, memb (as CMake's rcubatch::rcubatch)")
    else()
      set(RCUBATCH_PC_FLAVOR ${flavor})
      set(RCUBATCH_PC_NAME "rcubatch-${flavor}")
      set(file_name rcubatch-${flavor}.pc)
      set(RCUBATCH_PC_SUMMARY "rcubatch on liburcu-${flavor} only, ${flavor} the default flavor (as rcubatch_select_flavor(<target> ${flavor}))")
    endif()
    # memb is the headers' own default: no define, so rcubatch.pc combines with any -D the user adds.
    if(RCUBATCH_PC_FLAVOR STREQUAL "memb")
      set(RCUBATCH_PC_DEFINE "")
    else()
      set(RCUBATCH_PC_DEFINE " -DRCUBATCH_DEFAULT_FLAVOR=${RCUBATCH_PC_FLAVOR}")
    endif()
    configure_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/rcubatch.pc.in ${dir}/${file_name} @ONLY)
  endforeach()
endfunction()
