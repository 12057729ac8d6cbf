#ifndef LOOM_OP_OP_JSON_H_
#define LOOM_OP_OP_JSON_H_

#include <string>
#include <variant>

#include <nlohmann/json_fwd.hpp>

#include "core/json_reader.h"
#include "op/op.h"

namespace loom {

// How loom's files spell an op's shape: the kernels of profiles' samples (cost/profile.h) and the
// ops of plan files (program/) share these fields, so a measured sample and a planned op of the
// same shape are written alike.

// The shape of a kernel: an op that is not a collective.
using KernelShape = std::variant<GemmShape, AttentionShape, MemoryShape>;

// "gemm 4096x4096x8192 bf16" ("gemm 12288x4608x2048 bf16 +=fp32" when it accumulates into fp32),
// "attention fwd causal b1 h32/8 s4096/4096 d128/128 bf16", "memory 256 MiB read, 256 MiB written":
// a kernel's shape for messages and reports.
std::string DescribeShape(const KernelShape& shape);

// A kernel's shape fields, added to |j| in this order: GEMM "m", "n", "k", "batch", "dtype", and
// "accumulate_fp32": true only when set; attention "batch", "heads", "kv_heads", "seq_q", "seq_kv",
// "head_dim_qk", "head_dim_v", "causal", "backward", "dtype"; memory-bound "bytes_read",
// "bytes_written".
void AddKernelShapeFields(const KernelShape& shape, nlohmann::ordered_json& j);

// Reads those fields of a kernel of |kind| from |r|'s object. Problems are recorded in |r|: a
// missing or out-of-range field, a dtype that is not one (with a "did you mean"), heads that are
// not a multiple of kv_heads. REQUIRES: kind is not OpKind::kCollective.
KernelShape ReadKernelShape(OpKind kind, JsonReader& r);

// Any op's shape as an object: a kernel's fields (AddKernelShapeFields); a collective's "kind"
// (kCollectiveKindNames), "group" (kCommGroupNames) and "bytes".
nlohmann::ordered_json OpShapeJson(const OpShape& shape);

// Reads an op shape of |kind| written by OpShapeJson; problems are recorded in |r|.
OpShape ReadOpShape(OpKind kind, JsonReader& r);

}  // namespace loom

#endif  // LOOM_OP_OP_JSON_H_
