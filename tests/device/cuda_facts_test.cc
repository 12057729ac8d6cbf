#include <gtest/gtest.h>

#include <string>

#include <nccl.h>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_facts.h"

// The parts of the CUDA runtime that need no GPU: the device facts' parsing and formatting, and the
// mapping of library codes to Status.

namespace loom::cuda {
namespace {

// /proc/driver/nvidia/version of the proprietary kernel module.
constexpr char kProprietaryModule[] =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.216.03  Thu Apr  3 01:14:19 UTC 2025\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14) \n";
// ... and of the open kernel module.
constexpr char kOpenModule[] =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.195.03  Release Build  "
    "(dvs-builder@U22-I3-H04-03-1)  Sat Sep 20 00:47:16 UTC 2025\n"
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n";

TEST(DriverVersionFromProc, ReadsTheProprietaryModulesVersion) {
  EXPECT_EQ(DriverVersionFromProc(kProprietaryModule), "535.216.03");
}

TEST(DriverVersionFromProc, ReadsTheOpenModulesVersionPastItsArchitecture) {
  EXPECT_EQ(DriverVersionFromProc(kOpenModule), "570.195.03");
}

TEST(DriverVersionFromProc, ReadsTwoPartVersions) {
  EXPECT_EQ(DriverVersionFromProc(
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.142  Release Build  "
                "(dvs-builder@U22-I3-AD05-51-5)  Tue Mar  3 19:14:46 UTC 2026\n"),
            "580.142");
}

TEST(DriverVersionFromProc, IgnoresTheCompilersVersion) {
  EXPECT_EQ(DriverVersionFromProc("GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"), "");
  EXPECT_EQ(
      DriverVersionFromProc("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64 malformed\n"
                            "GCC version:  gcc version 13.3.0\n"),
      "");
}

TEST(DriverVersionFromProc, IsEmptyForAnEmptyFile) { EXPECT_EQ(DriverVersionFromProc(""), ""); }

TEST(CudaVersionString, FormatsMajorAndMinor) {
  EXPECT_EQ(CudaVersionString(13000), "13.0");
  EXPECT_EQ(CudaVersionString(12080), "12.8");
}

TEST(CublasLtVersionString, FormatsTheHeadersVersion) {
  EXPECT_EQ(CublasLtVersionString(130100), "13.1.0");
  EXPECT_EQ(CublasLtVersionString(CUBLAS_VERSION), std::to_string(CUBLAS_VER_MAJOR) + "." +
                                                       std::to_string(CUBLAS_VER_MINOR) + "." +
                                                       std::to_string(CUBLAS_VER_PATCH));
}

TEST(DecodeNcclVersion, ReadsBothOfNcclsEncodings) {
  EXPECT_EQ(DecodeNcclVersion(22809), "2.28.9");
  EXPECT_EQ(DecodeNcclVersion(21903), "2.19.3");
  EXPECT_EQ(DecodeNcclVersion(20900), "2.9.0");
  EXPECT_EQ(DecodeNcclVersion(2708), "2.7.8");  // before 2.9: major*1000 + minor*100 + patch
}

TEST(NcclVersionString, IsTheLinkedLibrarysVersion) {
  // ncclGetVersion needs no GPU; the library linked here is the one whose header was compiled.
  EXPECT_EQ(NcclVersionString(), std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) +
                                     "." + std::to_string(NCCL_PATCH));
}

TEST(CheckCuda, NamesTheCallTheLineAndCudasError) {
  EXPECT_TRUE(CheckCuda(cudaSuccess, "cudaFree(p)", "a.cc", 1).ok());
  Status status = CheckCuda(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "gemm_bench.cc", 12);
  EXPECT_EQ(status.code(), Status::Code::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "cudaMalloc(&p, n) failed at gemm_bench.cc:12: cudaErrorMemoryAllocation: " +
                std::string(cudaGetErrorString(cudaErrorMemoryAllocation)));
}

TEST(CheckCuda, MapsCodesToStatus) {
  EXPECT_EQ(CheckCuda(cudaErrorNotSupported, "f()", "a.cc", 1).code(),
            Status::Code::kUnimplemented);
  EXPECT_EQ(CheckCuda(cudaErrorNoDevice, "f()", "a.cc", 1).code(), Status::Code::kUnavailable);
  EXPECT_EQ(CheckCuda(cudaErrorInsufficientDriver, "f()", "a.cc", 1).code(),
            Status::Code::kUnavailable);
  EXPECT_EQ(CheckCuda(cudaErrorIllegalAddress, "f()", "a.cc", 1).code(), Status::Code::kInternal);
}

TEST(CheckCublas, MapsCodesToStatus) {
  EXPECT_TRUE(CheckCublas(CUBLAS_STATUS_SUCCESS, "f()", "a.cc", 1).ok());
  EXPECT_EQ(CheckCublas(CUBLAS_STATUS_ALLOC_FAILED, "f()", "a.cc", 1).code(),
            Status::Code::kResourceExhausted);
  Status unsupported = CheckCublas(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmul(...)", "a.cc", 7);
  EXPECT_EQ(unsupported.code(), Status::Code::kUnimplemented);
  EXPECT_NE(unsupported.message().find(
                "cublasLtMatmul(...) failed at a.cc:7: CUBLAS_STATUS_NOT_SUPPORTED"),
            std::string::npos)
      << unsupported.message();
  EXPECT_EQ(CheckCublas(CUBLAS_STATUS_EXECUTION_FAILED, "f()", "a.cc", 1).code(),
            Status::Code::kInternal);
}

TEST(CheckCudnn, MapsEveryNotSupportedCodeToUnimplemented) {
  EXPECT_TRUE(CheckCudnn(CUDNN_STATUS_SUCCESS, "f()", "a.cc", 1).ok());
  EXPECT_EQ(CheckCudnn(CUDNN_STATUS_NOT_SUPPORTED, "f()", "a.cc", 1).code(),
            Status::Code::kUnimplemented);
  EXPECT_EQ(CheckCudnn(CUDNN_STATUS_NOT_SUPPORTED_SHAPE, "f()", "a.cc", 1).code(),
            Status::Code::kUnimplemented);
  EXPECT_EQ(
      CheckCudnn(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED, "f()", "a.cc", 1).code(),
      Status::Code::kResourceExhausted);
  EXPECT_EQ(CheckCudnn(CUDNN_STATUS_BAD_PARAM, "f()", "a.cc", 1).code(), Status::Code::kInternal);
}

// What cuDNN's status mapping tells the user to do when a library did not load.
constexpr char kLibraryPathFix[] =
    "run loom through the bundle's launcher, or add site-packages/nvidia/cudnn/lib and "
    "site-packages/nvidia/cu13/lib to LD_LIBRARY_PATH";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CudnnStatusToStatus, MissingNvrtcIsUnavailableWithTheLibraryPath) {
  Status status =
      CudnnStatusToStatus(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING,
                          "cudnnBackendFinalize(execution plan) failed at sdpa_graph.cc:92: x");
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_EQ(status.message().rfind(
                "cudnnBackendFinalize(execution plan) failed at sdpa_graph.cc:92: x; cuDNN could "
                "not load NVRTC (libnvrtc.so), which its runtime-compiled engines need: ",
                0),
            0u)
      << status.message();
  EXPECT_TRUE(Contains(status.message(), kLibraryPathFix)) << status.message();
  EXPECT_EQ(static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING), 3008);
}

TEST(CudnnStatusToStatus, SublibraryLoadFailureIsUnavailableWithTheLibraryPath) {
  Status status = CudnnStatusToStatus(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED, "f() failed");
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_TRUE(Contains(status.message(),
                       "could not load one of its sub-libraries "
                       "(libcudnn_engines_runtime_compiled.so.9"))
      << status.message();
  EXPECT_TRUE(Contains(status.message(), kLibraryPathFix)) << status.message();
  EXPECT_EQ(static_cast<int>(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED), 1008);
}

TEST(CudnnStatusToStatus, OtherLibraryProblemsAreUnavailableWithTheLibraryPath) {
  for (cudnnStatus_t code :
       {CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE, CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH,
        CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART}) {
    Status status = CudnnStatusToStatus(code, "f() failed");
    EXPECT_EQ(status.code(), Status::Code::kUnavailable) << code;
    EXPECT_TRUE(Contains(status.message(), kLibraryPathFix)) << status.message();
  }
}

TEST(CudnnStatusToStatus, AnOldDriverIsUnavailableWithADriverHint) {
  Status status = CudnnStatusToStatus(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER,
                                      "cudnnCreate(&h) failed");
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_TRUE(Contains(status.message(), "needs a newer NVIDIA driver")) << status.message();
  EXPECT_FALSE(Contains(status.message(), "LD_LIBRARY_PATH")) << status.message();
}

TEST(CudnnStatusToStatus, AShapeWithoutAnEngineIsUnimplementedWithoutAHint) {
  for (cudnnStatus_t code :
       {CUDNN_STATUS_NOT_SUPPORTED, CUDNN_STATUS_NOT_SUPPORTED_SHAPE,
        CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH}) {
    Status status = CudnnStatusToStatus(code, "cudnnBackendFinalize(plan) failed: why");
    EXPECT_EQ(status.code(), Status::Code::kUnimplemented) << code;
    EXPECT_EQ(status.message(), "cudnnBackendFinalize(plan) failed: why");
  }
}

TEST(CudnnStatusToStatus, AllocationFailuresAreResourceExhausted) {
  EXPECT_EQ(CudnnStatusToStatus(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED, "m").code(),
            Status::Code::kResourceExhausted);
  EXPECT_EQ(CudnnStatusToStatus(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "m").code(),
            Status::Code::kResourceExhausted);
}

TEST(CudnnStatusToStatus, TheRestAreInternalAndSuccessIsOk) {
  EXPECT_TRUE(CudnnStatusToStatus(CUDNN_STATUS_SUCCESS, "").ok());
  for (cudnnStatus_t code :
       {CUDNN_STATUS_BAD_PARAM, CUDNN_STATUS_NOT_INITIALIZED, CUDNN_STATUS_INTERNAL_ERROR,
        CUDNN_STATUS_EXECUTION_FAILED, CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED}) {
    Status status = CudnnStatusToStatus(code, "m");
    EXPECT_EQ(status.code(), Status::Code::kInternal) << code;
    EXPECT_EQ(status.message(), "m");
  }
}

TEST(CheckCudnn, NamesTheCallAndTheCodeBeforeTheHint) {
  Status status = CheckCudnn(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED,
                             "cudnnBackendFinalize(heuristics)", "a.cc", 3);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_EQ(status.message().rfind("cudnnBackendFinalize(heuristics) failed at a.cc:3: ", 0), 0u)
      << status.message();
  EXPECT_TRUE(Contains(status.message(), "cudnnStatus_t 1008")) << status.message();
  EXPECT_TRUE(Contains(status.message(), kLibraryPathFix)) << status.message();
}

TEST(CheckNccl, NamesTheResultAndTreatsInProgressAsOk) {
  EXPECT_TRUE(CheckNccl(ncclSuccess, "f()", "a.cc", 1).ok());
  EXPECT_TRUE(CheckNccl(ncclInProgress, "ncclAllReduce(...)", "a.cc", 1).ok());
  Status status = CheckNccl(ncclSystemError, "ncclCommInitRank(...)", "nccl_bench.cc", 40);
  EXPECT_EQ(status.code(), Status::Code::kInternal);
  EXPECT_EQ(status.message().rfind(
                "ncclCommInitRank(...) failed at nccl_bench.cc:40: ncclSystemError: ", 0),
            0u)
      << status.message();
}

// On a machine without a GPU (where the tests usually run) the message says so plainly; with one,
// it counts it.
TEST(CountDevices, SaysPlainlyWhenNoGpuIsVisible) {
  int count = -1;
  Status status = CountDevices(&count);
  if (status.ok()) {
    EXPECT_GT(count, 0);
    return;
  }
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_EQ(count, 0);
  EXPECT_EQ(status.message().rfind("no CUDA GPU is visible (cudaGetDeviceCount: ", 0), 0u)
      << status.message();
  EXPECT_NE(status.message().find(
                "); loom probe measures GPUs and must run on a machine with an NVIDIA GPU and its "
                "driver"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::cuda
