#ifndef LOOM_CORE_DTYPE_H_
#define LOOM_CORE_DTYPE_H_

#include <cstdint>

#include "core/enum_names.h"

namespace loom {

// Numeric formats of tensors and of the tensor-core rates in GPU datasheets.
enum class Dtype { kBf16, kFp16, kFp8, kTf32, kFp32 };

inline constexpr EnumNames<Dtype, 5> kDtypeNames({{
    {Dtype::kBf16, "bf16"},
    {Dtype::kFp16, "fp16"},
    {Dtype::kFp8, "fp8"},
    {Dtype::kTf32, "tf32"},
    {Dtype::kFp32, "fp32"},
}});

// Bytes of one element in memory. TF32 is a tensor-core compute mode over fp32 storage.
inline constexpr int64_t BytesPerElement(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFp8:
      return 1;
    case Dtype::kBf16:
    case Dtype::kFp16:
      return 2;
    case Dtype::kTf32:
    case Dtype::kFp32:
      return 4;
  }
  return 4;
}

}  // namespace loom

#endif  // LOOM_CORE_DTYPE_H_
