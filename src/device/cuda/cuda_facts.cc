#include "device/cuda/cuda_facts.h"

#include <cctype>
#include <sstream>

#include <cuda_runtime.h>
#include <nccl.h>

namespace loom::cuda {
namespace {

bool IsVersionToken(const std::string& token) {
  int dots = 0;
  bool digit_before = false;
  for (char c : token) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digit_before = true;
    } else if (c == '.' && digit_before) {
      ++dots;
      digit_before = false;
    } else {
      return false;
    }
  }
  return dots >= 1 && digit_before;
}

}  // namespace

Status CountDevices(int* count) {
  *count = 0;
  const cudaError_t code = cudaGetDeviceCount(count);
  std::string why;
  if (code != cudaSuccess) {
    cudaGetLastError();
    *count = 0;
    why = cudaGetErrorString(code);
  } else if (*count == 0) {
    why = "it found 0 devices";
  } else {
    return Status::Ok();
  }
  return Status::Unavailable(
      "no CUDA GPU is visible (cudaGetDeviceCount: " + why +
      "); loom probe measures GPUs and must run on a machine with an NVIDIA GPU and its driver");
}

std::string DriverVersionFromProc(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("NVRM version:", 0) != 0) continue;
    std::istringstream tokens(line);
    std::string token;
    while (tokens >> token) {
      if (IsVersionToken(token)) return token;
    }
  }
  return "";
}

std::string CudaVersionString(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string CublasLtVersionString(size_t version) {
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

std::string DecodeNcclVersion(int version_code) {
  // nccl.h's NCCL_VERSION: major*1000 + minor*100 + patch up to 2.8, major*10000 + minor*100 +
  // patch from 2.9 on.
  const bool wide = version_code >= 10000;
  const int major = wide ? version_code / 10000 : version_code / 1000;
  const int minor = wide ? version_code / 100 % 100 : version_code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(version_code % 100);
}

std::string NcclVersionString() {
  int version_code = 0;
  const ncclResult_t code = ncclGetVersion(&version_code);
  if (code != ncclSuccess)
    return std::string("unknown (ncclGetVersion: ") + ncclGetErrorString(code) + ")";
  return DecodeNcclVersion(version_code);
}

}  // namespace loom::cuda
