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
tteps_require(Torch libtorch-dev)

# LibTorch's config adds its flags globally through TORCH_CXX_FLAGS; keep them on the targets
# that use LibTorch only (worker/ and scheduler/), so server/ and common/ never see them.
add_library(tteps_torch_deps INTERFACE)
target_link_libraries(tteps_torch_deps INTERFACE ${TORCH_LIBRARIES})
separate_arguments(_tteps_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(tteps_torch_deps INTERFACE ${_tteps_torch_flags})
