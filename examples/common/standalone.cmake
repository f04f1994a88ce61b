# include()d by the demo and netdev, in their own scope: what a measuring example needs when it is
# built on its own against an installed rcubatch (the tree's build already has all of it).
#   - the installed package, every flavor and cds;
#   - ctest, and the install directories (netsim's installed scripts dir);
#   - Threads, and median.hpp (this directory: copy it next to the example).
if(NOT TARGET rcubatch::rcubatch)
  find_package(rcubatch 0.2 REQUIRED)
endif()
if(PROJECT_IS_TOP_LEVEL)
  include(GNUInstallDirs)
  enable_testing()
endif()
find_package(Threads REQUIRED)
if(NOT TARGET rcubatch_examples_common)
  add_subdirectory(${CMAKE_CURRENT_LIST_DIR} examples_common)
endif()
