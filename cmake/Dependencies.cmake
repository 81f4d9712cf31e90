# Finds every dependency with find_package; a missing one stops the configure step with the
# Debian package that provides it and the script that installs them all.
macro(tteps_require name debian_package)
  find_package(${name} ${ARGN} QUIET)
  if(NOT ${name}_FOUND)
    message(FATAL_ERROR
      "tteps: dependency '${name}' not found. It comes from the Debian package "
      "'${debian_package}'; run launch/install-deps.sh to install every dependency.")
  endif()
endmacro()

tteps_require(Threads libc6-dev)
tteps_require(gflags libgflags-dev)
tteps_require(glog libgoogle-glog-dev)
tteps_require(simdjson libsimdjson-dev)
tteps_require(cppzmq cppzmq-dev)
tteps_require(cereal libcereal-dev)
tteps_require(MPI libopenmpi-dev COMPONENTS CXX)
tteps_require(GTest libgtest-dev)
# cpp-httplib, for the scheduler's /metrics endpoint (Debian's compiled library: the header
# with the definitions it was built with). Without it (a machine install-deps did not set up,
# such as a lent GPU machine) --metrics_port is refused with the reason.
find_path(TTEPS_HTTPLIB_INCLUDE httplib.h)
find_library(TTEPS_HTTPLIB_LIB cpp-httplib)
add_library(tteps_httplib INTERFACE)
if(TTEPS_HTTPLIB_INCLUDE AND TTEPS_HTTPLIB_LIB)
  set(TTEPS_HAS_HTTPLIB 1)
  target_include_directories(tteps_httplib INTERFACE "${TTEPS_HTTPLIB_INCLUDE}")
  target_compile_definitions(tteps_httplib INTERFACE CPPHTTPLIB_OPENSSL_SUPPORT
                                                     CPPHTTPLIB_ZLIB_SUPPORT CPPHTTPLIB_BROTLI_SUPPORT)
  target_link_libraries(tteps_httplib INTERFACE "${TTEPS_HTTPLIB_LIB}")
else()
  set(TTEPS_HAS_HTTPLIB 0)
  message(WARNING "tteps: cpp-httplib not found (Debian package libcpp-httplib-dev, installed by "
                  "launch/install-deps.sh): the scheduler refuses --metrics_port")
endif()
add_compile_definitions(TTEPS_HAS_HTTPLIB=${TTEPS_HAS_HTTPLIB})
# Which LibTorch: system (Debian's libtorch-dev 1.13, CPU only; or whatever CMAKE_PREFIX_PATH
# names), python (the installed PyTorch wheel's, e.g. 2.x with CUDA) or the path of an unpacked
# libtorch zip.
set(TTEPS_TORCH "system" CACHE STRING "LibTorch to build against: system, python or a path")
if(TTEPS_TORCH STREQUAL "python")
  execute_process(COMMAND python3 -c "import torch; print(torch.utils.cmake_prefix_path)"
                  OUTPUT_VARIABLE _tteps_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _tteps_torch_rc ERROR_QUIET)
  if(NOT _tteps_torch_rc EQUAL 0 OR _tteps_torch_prefix STREQUAL "")
    message(FATAL_ERROR "tteps: -DTTEPS_TORCH=python, but python3 cannot import torch")
  endif()
  list(PREPEND CMAKE_PREFIX_PATH "${_tteps_torch_prefix}")
elseif(NOT TTEPS_TORCH STREQUAL "system")
  if(NOT EXISTS "${TTEPS_TORCH}/share/cmake/Torch/TorchConfig.cmake")
    message(FATAL_ERROR "tteps: -DTTEPS_TORCH=${TTEPS_TORCH}: no share/cmake/Torch/TorchConfig.cmake "
                        "there (expected an unpacked libtorch directory, or system, or python)")
  endif()
  list(PREPEND CMAKE_PREFIX_PATH "${TTEPS_TORCH}")
endif()
tteps_require(Torch libtorch-dev)
message(STATUS "tteps: LibTorch ${Torch_VERSION} (${TTEPS_TORCH})")

# LibTorch's config adds its flags globally through TORCH_CXX_FLAGS; keep them on the targets
# that use LibTorch only (worker/ and scheduler/), so server/ and common/ never see them.
add_library(tteps_torch_deps INTERFACE)
target_link_libraries(tteps_torch_deps INTERFACE ${TORCH_LIBRARIES})
separate_arguments(_tteps_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(tteps_torch_deps INTERFACE ${_tteps_torch_flags})

# The programs' allocator. LibTorch allocates and frees many small tensors in every step: glibc's
# malloc took 8-9% of a worker's CPU (perf), and with tcmalloc (Debian's libtcmalloc-minimal4) a
# worker trains 7-11% more trips/s, the same model. -DTTEPS_MALLOC=system keeps glibc's; so does
# a machine without the library (with a warning).
set(TTEPS_MALLOC "tcmalloc" CACHE STRING "allocator of tteps' programs: tcmalloc or system")
add_library(tteps_malloc INTERFACE)
if(TTEPS_MALLOC STREQUAL "tcmalloc")
  find_library(TTEPS_TCMALLOC_LIB NAMES tcmalloc_minimal libtcmalloc_minimal.so.4)
  if(TTEPS_TCMALLOC_LIB)
    # Linked although no symbol of it is named: its malloc then replaces glibc's in the process.
    target_link_libraries(tteps_malloc INTERFACE "-Wl,--push-state,--no-as-needed"
                                                 "${TTEPS_TCMALLOC_LIB}" "-Wl,--pop-state")
  else()
    message(WARNING "tteps: tcmalloc not found (Debian package libtcmalloc-minimal4, installed by "
                    "launch/install-deps.sh); the programs use glibc's malloc")
    set(TTEPS_MALLOC "system")
  endif()
elseif(NOT TTEPS_MALLOC STREQUAL "system")
  message(FATAL_ERROR "tteps: -DTTEPS_MALLOC=${TTEPS_MALLOC}: expected tcmalloc or system")
endif()
