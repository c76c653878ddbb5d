/*
 * The one place the plugin's host C files name a GPU runtime: they are
 * written over the CUDA runtime API, and this header gives those names to
 * HIP's runtime when the plugin is built for AMD (plugins/rocm, which
 * compiles with -D__HIP_PLATFORM_AMD__ and /usr/include/hip on the path).
 * The kernels' side is gpu_vendor.h.
 *
 * The table below is one line per runtime name the host files use, each
 * with the HIP 5.2 call or type of the same meaning (checked against
 * hip_runtime_api.h of ROCm 5.2.3).  A name missing here makes the HIP
 * build fail, which is the point: a new runtime call gets its line, or
 * (where HIP has none) an HC_E_UNSUPPORTED path so the core's default
 * runs.  Every graph and capture call has a HIP 5.2 twin today.
 *
 *  - HC_GPU_FAMILY: the plugin's family, as the loader and `--device` see it
 *  - HC_GPU_ENV:    the family in the HOTCOLD_<FAMILY>_... variables
 *  - HC_GPU_RT:     the prefix of the runtime's function names, for messages
 */
#ifndef HC_GPU_RUNTIME_H
#define HC_GPU_RUNTIME_H

#if defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime_api.h>

#define HC_GPU_FAMILY "rocm"
#define HC_GPU_ENV "ROCM"
#define HC_GPU_RT "hip"

/* types and constants */
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaStream_t hipStream_t
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaDeviceProp hipDeviceProp_t
#define cudaDevAttrMemoryClockRate hipDeviceAttributeMemoryClockRate
#define cudaDevAttrGlobalMemoryBusWidth hipDeviceAttributeMemoryBusWidth
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define cudaHostAllocPortable hipHostMallocPortable

/* errors */
#define cudaGetLastError hipGetLastError
#define cudaGetErrorString hipGetErrorString
#define cudaGetErrorName hipGetErrorName

/* devices */
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaSetDevice hipSetDevice
#define cudaMemGetInfo hipMemGetInfo

/* memory and copies */
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaHostAlloc hipHostMalloc /* hipHostAlloc is deprecated in 5.2 */
#define cudaFreeHost hipHostFree    /* hipFreeHost likewise */
#define cudaMemcpyAsync hipMemcpyAsync

/* streams */
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamDestroy hipStreamDestroy

/* capture and graphs; CUDA 12's three-argument instantiate is HIP's
 * ...WithFlags (HIP's own hipGraphInstantiate has CUDA 11's five) */
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaGraphInstantiate hipGraphInstantiateWithFlags
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy

/* events (ABI 1.4) */
#define cudaEvent_t hipEvent_t
#define cudaErrorNotReady hipErrorNotReady
#define cudaEventCreate hipEventCreate
#define cudaEventDestroy hipEventDestroy
#define cudaEventRecord hipEventRecord
#define cudaEventQuery hipEventQuery
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime

#else
#include <cuda_runtime_api.h>

#define HC_GPU_FAMILY "cuda"
#define HC_GPU_ENV "CUDA"
#define HC_GPU_RT "cuda"
#endif

#endif /* HC_GPU_RUNTIME_H */
