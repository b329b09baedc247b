# The CUDA + NCCL backend, wired in only when this machine can compile it: a CUDA compiler
# (check_language), the toolkit's cuBLASLt/cuBLAS/cudart (CUDAToolkit) and NCCL (its header and
# library under the toolkit, /usr, or a Python package's nvidia/nccl folder). A machine without
# them (CI on plain Debian) builds everything else and `tandem run --backend cuda` reports that
# this build has no CUDA backend. MPI is optional: without it the backend runs one process
# (one rank). Sets TANDEM_HAVE_CUDA in the including scope.
set(TANDEM_HAVE_CUDA OFF)
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  message(STATUS "Tandem: no CUDA compiler found; the CUDA backend is not built")
  return()
endif()
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  message(STATUS "Tandem: no CUDA toolkit found; the CUDA backend is not built")
  return()
endif()

# NCCL ships with some toolkits (/usr/local/cuda), as a Debian package (libnccl-dev) or as the
# nvidia-nccl Python wheel; look in all three.
set(_tandem_nccl_hints ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR} $ENV{NCCL_HOME} $ENV{NCCL_ROOT})
file(GLOB _tandem_py_nccl /usr/lib/python3*/site-packages/nvidia/nccl /usr/local/lib/python3*/dist-packages/nvidia/nccl
     $ENV{HOME}/.local/lib/python3*/site-packages/nvidia/nccl)
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_tandem_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS} ${_tandem_py_nccl}
          PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_tandem_nccl_hints} ${CUDAToolkit_LIBRARY_DIR} ${_tandem_py_nccl}
             PATH_SUFFIXES lib lib64)
if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
  message(STATUS "Tandem: CUDA found but not NCCL; the CUDA backend is not built")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "80;90")  # A100 and H100/H200 (before enable_language sets nvcc's default)
endif()
enable_language(CUDA)
set(TANDEM_HAVE_CUDA ON)
set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 flag for nvcc; the .cu files are C++17
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
message(STATUS "Tandem: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES}, NCCL ${NCCL_LIBRARY})")

# Kernels: one family per .cu file, plus the dispatcher that runs any ComputeOp on a stream.
file(GLOB_RECURSE CUDA_KERNEL_SOURCES CONFIGURE_DEPENDS kernels/cuda/*.cu kernels/cuda/*.cpp)
add_library(tandem_cuda_kernels STATIC ${CUDA_KERNEL_SOURCES})
# Warnings flags of the C++ build are not nvcc's: pass them to the host compiler only.
set_target_properties(tandem_cuda_kernels PROPERTIES CUDA_SEPARABLE_COMPILATION OFF POSITION_INDEPENDENT_CODE ON)
target_compile_options(tandem_cuda_kernels PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo>)
target_link_libraries(tandem_cuda_kernels PUBLIC tandem_cpu_kernels CUDA::cudart_static CUDA::cublasLt CUDA::cublas)

# The runtime: device, caching allocator, NCCL collectives, the driver, microbenchmarks.
file(GLOB_RECURSE EXEC_CUDA_SOURCES CONFIGURE_DEPENDS exec/cuda/*.cpp)
add_library(tandem_exec_cuda STATIC ${EXEC_CUDA_SOURCES})
target_include_directories(tandem_exec_cuda PUBLIC ${NCCL_INCLUDE_DIR})
target_link_libraries(tandem_exec_cuda PUBLIC tandem_cuda_kernels tandem_exec_cpu ${NCCL_LIBRARY})
target_compile_definitions(tandem_exec_cuda PUBLIC TANDEM_HAVE_CUDA=1)

find_package(MPI QUIET COMPONENTS CXX)
if(MPI_CXX_FOUND)
  message(STATUS "Tandem: MPI found: multi-process (mpirun -np N) CUDA runs")
  target_link_libraries(tandem_exec_cuda PUBLIC MPI::MPI_CXX)
  target_compile_definitions(tandem_exec_cuda PUBLIC TANDEM_HAVE_MPI=1)
  # libsimgrid also exports MPI_* (its SMPI): OpenMPI must come first in `tandem`'s load order,
  # so that the bootstrap's MPI_Init is OpenMPI's.
  set_property(TARGET tandem PROPERTY LINK_LIBRARIES MPI::MPI_CXX tandem_cli)
else()
  message(STATUS "Tandem: no MPI: the CUDA backend runs single-process (one rank)")
endif()

target_link_libraries(tandem_cli PUBLIC tandem_exec_cuda)
