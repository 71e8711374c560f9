# `cmake --install`: headers, libraries, tools and a CMake package, so that a
# project outside this tree uses fwp with
#
#   find_package(fwp REQUIRED)       # also finds MLIR 22 and fmt
#   target_link_libraries(app PRIVATE fwp::FwpJIT)
#
# Targets: fwp::FwpJIT (the C++ JIT API, fwp/JIT/JIT.h), fwp::FwpModule
# (fwp/FastWeightsAttention.h), fwp::FwpReference (the float64 reference),
# fwp::FwpRuntime (loading compiled modules, no MLIR), fwp::FwpCApi
# (libfwp.so, fwp/CApi.h) and what they link. test/install builds a small
# project against an installed copy.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FWP_INSTALLED_LIBRARIES FwpJIT FwpModule FwpReference FwpRuntime
  FwpSupport FwpPipelines FwpTransforms FwpConversion FwpDialect FwpTarget
  FwpCApi FwpCApiRuntime)

# The targets name their headers by build-tree paths; installed, they are
# all under include/.
foreach(library ${FWP_INSTALLED_LIBRARIES})
  get_target_property(directories ${library} INTERFACE_INCLUDE_DIRECTORIES)
  set(interface)
  foreach(directory ${directories})
    list(APPEND interface "$<BUILD_INTERFACE:${directory}>")
  endforeach()
  list(APPEND interface "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  set_target_properties(${library} PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${interface}")
endforeach()

# Installed programs and shared libraries find libMLIR.so and libLLVM.so
# where they were linked from (Debian's /usr/lib/llvm-22/lib).
set(FWP_INSTALLED_PROGRAMS fwp-opt fwp-compile fwp-run fwp-exec fwp-gpu-check)
set_target_properties(${FWP_INSTALLED_PROGRAMS} FwpCApi FwpCApiRuntime
  PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)

install(TARGETS ${FWP_INSTALLED_LIBRARIES} EXPORT fwpTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ${FWP_INSTALLED_PROGRAMS}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The stand-in CUDA driver, in a directory of its own as in the build tree:
# LD_LIBRARY_PATH=<prefix>/lib/fwp/emulated-cuda picks it.
install(TARGETS FwpEmulatedCuda
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/fwp/emulated-cuda)

foreach(headers ${PROJECT_SOURCE_DIR}/include/fwp
                ${PROJECT_SOURCE_DIR}/dialect/include/fwp
                ${PROJECT_SOURCE_DIR}/runtime/include/fwp
                ${PROJECT_BINARY_DIR}/include/fwp
                ${PROJECT_BINARY_DIR}/dialect/include/fwp)
  install(DIRECTORY ${headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.h" PATTERN "*.inc" PATTERN "*.td")
endforeach()

set(FWP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fwp)
install(EXPORT fwpTargets NAMESPACE fwp:: DESTINATION ${FWP_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fwpConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fwpConfig.cmake INSTALL_DESTINATION ${FWP_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fwpConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fwpConfig.cmake
  ${PROJECT_BINARY_DIR}/fwpConfigVersion.cmake DESTINATION ${FWP_CMAKE_DIR})
