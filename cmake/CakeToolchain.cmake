# Finds the CUDA compilers the fatbins are built with. CAKE_NVCC (the toolkit's, 13.0) builds
# the sm_90 image (the H200's driver cannot JIT PTX from a newer nvcc) and the sm_100a/sm_103a
# images. CAKE_NVCC_SM107 builds the sm107 image: sm_107a when that compiler offers it (nvcc
# 13.5, installed pinned by tools/install-nvcc.sh), else sm_100f SASS + compute_100 PTX.
include_guard(GLOBAL)

find_program(CAKE_NVCC nvcc HINTS /usr/local/cuda/bin ENV CUDA_HOME PATH_SUFFIXES bin REQUIRED)
get_filename_component(_cake_nvcc_bin ${CAKE_NVCC} DIRECTORY)
find_path(CAKE_CUDA_INCLUDE_DIR cuda.h HINTS ${_cake_nvcc_bin}/../include /usr/local/cuda/include
                                             REQUIRED)

set(_cake_nvcc_new /opt/cake-nvcc-13.5.37/nvidia/cu13/bin/nvcc)
if(NOT DEFINED CAKE_NVCC_SM107)
  if(EXISTS ${_cake_nvcc_new})
    set(_cake_default_sm107 ${_cake_nvcc_new})
  else()
    set(_cake_default_sm107 ${CAKE_NVCC})
  endif()
  set(CAKE_NVCC_SM107 ${_cake_default_sm107} CACHE FILEPATH "nvcc for the sm107 image")
endif()

execute_process(COMMAND ${CAKE_NVCC_SM107} --list-gpu-code OUTPUT_VARIABLE _cake_sm107_codes
                ERROR_QUIET)
if(_cake_sm107_codes MATCHES "sm_107")
  set(CAKE_SM107_NATIVE ON)
  set(CAKE_SM107_NVCC ${CAKE_NVCC_SM107})
else()
  set(CAKE_SM107_NATIVE OFF)
  set(CAKE_SM107_NVCC ${CAKE_NVCC})
endif()
message(STATUS "Cake: nvcc ${CAKE_NVCC}; sm107 image native sm_107a: ${CAKE_SM107_NATIVE} "
               "(${CAKE_SM107_NVCC})")
