#include "op/op_json.h"

#include <cstdio>
#include <optional>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/formatted.h"

namespace loom {
namespace {

Dtype ReadDtype(JsonReader& r) {
  std::optional<std::string> name = ReadChoice(r, "dtype", kDtypeNames.Names());
  return name ? *kDtypeNames.Parse(*name) : Dtype::kBf16;
}

bool ReadBool(JsonReader& r, std::string_view key) {
  if (!r.Has(key)) {
    r.Allow(key);
    r.AddError(key, "is missing; add \"" + std::string(key) + "\": true or false");
    return false;
  }
  return r.OptionalBool(key).value_or(false);
}

// A measured kernel's dimensions: the largest a GPU can hold (2^24 rows of a GEMM, 2^22 tokens of
// attention, 2^50 bytes) and more; beyond them a sample is corrupt, and products of them would
// wrap.
constexpr IntRange kDimension{1, int64_t{1} << 24};
constexpr IntRange kBatch{1, int64_t{1} << 20};
constexpr IntRange kTokens{1, int64_t{1} << 22};
constexpr IntRange kBytes{0, int64_t{1} << 50};

GemmShape ReadGemm(JsonReader& r) {
  GemmShape g;
  g.m = r.Int("m", kDimension);
  g.n = r.Int("n", kDimension);
  g.k = r.Int("k", kDimension);
  g.batch = r.Int("batch", kBatch);
  g.dtype = ReadDtype(r);
  if (std::optional<bool> accumulate = r.OptionalBool("accumulate_fp32"))
    g.accumulate_fp32 = *accumulate;
  return g;
}

AttentionShape ReadAttention(JsonReader& r) {
  AttentionShape a;
  a.batch = r.Int("batch", kBatch);
  a.heads = r.Int("heads", kBatch);
  a.kv_heads = r.Int("kv_heads", kBatch);
  a.seq_q = r.Int("seq_q", kTokens);
  a.seq_kv = r.Int("seq_kv", kTokens);
  a.head_dim_qk = r.Int("head_dim_qk", kDimension);
  a.head_dim_v = r.Int("head_dim_v", kDimension);
  a.causal = ReadBool(r, "causal");
  a.backward = ReadBool(r, "backward");
  a.dtype = ReadDtype(r);
  if (r.Has("family")) a.family = ReadEnum(r, "family", kAttentionFamilyNames);
  a.window = r.OptionalInt("window", kTokens).value_or(0);
  if (a.heads % a.kv_heads != 0) {
    r.AddError("heads", "(" + std::to_string(a.heads) + ") is not a multiple of kv_heads (" +
                            std::to_string(a.kv_heads) +
                            "); grouped-query attention shares each KV head among "
                            "a whole number of query heads");
  }
  return a;
}

MemoryShape ReadMemory(JsonReader& r) {
  MemoryShape m;
  m.bytes_read = r.Int("bytes_read", kBytes);
  m.bytes_written = r.Int("bytes_written", kBytes);
  if (r.Has("access")) m.access = ReadEnum(r, "access", kMemoryAccessNames);
  return m;
}

// A collective's bytes: any size a file can state.
constexpr IntRange kCollectiveBytes{0, INT64_MAX};

}  // namespace

std::string DescribeShape(const KernelShape& shape) {
  char text[160];
  if (const GemmShape* g = std::get_if<GemmShape>(&shape)) {
    std::snprintf(text, sizeof text, "gemm %lldx%lldx%lld%s %s%s", static_cast<long long>(g->m),
                  static_cast<long long>(g->n), static_cast<long long>(g->k),
                  g->batch > 1 ? (" x" + std::to_string(g->batch)).c_str() : "",
                  std::string(kDtypeNames.Name(g->dtype)).c_str(),
                  g->accumulate_fp32 ? " +=fp32" : "");
  } else if (const AttentionShape* a = std::get_if<AttentionShape>(&shape)) {
    const std::string window = a->window > 0 ? " window " + std::to_string(a->window) : "";
    std::snprintf(text, sizeof text, "attention %s%s%s b%lld h%lld/%lld s%lld/%lld d%lld/%lld %s",
                  a->backward ? "bwd" : "fwd", a->causal ? " causal" : "", window.c_str(),
                  static_cast<long long>(a->batch), static_cast<long long>(a->heads),
                  static_cast<long long>(a->kv_heads), static_cast<long long>(a->seq_q),
                  static_cast<long long>(a->seq_kv), static_cast<long long>(a->head_dim_qk),
                  static_cast<long long>(a->head_dim_v),
                  std::string(kDtypeNames.Name(a->dtype)).c_str());
  } else {
    const MemoryShape& m = std::get<MemoryShape>(shape);
    std::snprintf(text, sizeof text, "memory %s read, %s written%s",
                  WholeBytes(m.bytes_read).c_str(), WholeBytes(m.bytes_written).c_str(),
                  m.access == MemoryAccess::kRowReduction ? ", row reduction" : "");
  }
  return text;
}

void AddKernelShapeFields(const KernelShape& shape, nlohmann::ordered_json& j) {
  if (const GemmShape* g = std::get_if<GemmShape>(&shape)) {
    j["m"] = g->m;
    j["n"] = g->n;
    j["k"] = g->k;
    j["batch"] = g->batch;
    j["dtype"] = kDtypeNames.Name(g->dtype);
    if (g->accumulate_fp32) j["accumulate_fp32"] = true;
  } else if (const AttentionShape* a = std::get_if<AttentionShape>(&shape)) {
    j["batch"] = a->batch;
    j["heads"] = a->heads;
    j["kv_heads"] = a->kv_heads;
    j["seq_q"] = a->seq_q;
    j["seq_kv"] = a->seq_kv;
    j["head_dim_qk"] = a->head_dim_qk;
    j["head_dim_v"] = a->head_dim_v;
    j["causal"] = a->causal;
    j["backward"] = a->backward;
    j["dtype"] = kDtypeNames.Name(a->dtype);
    j["family"] = kAttentionFamilyNames.Name(a->family);
    if (a->window > 0) j["window"] = a->window;
  } else {
    const MemoryShape& m = std::get<MemoryShape>(shape);
    j["bytes_read"] = m.bytes_read;
    j["bytes_written"] = m.bytes_written;
    if (m.access != MemoryAccess::kStreaming) j["access"] = kMemoryAccessNames.Name(m.access);
  }
}

KernelShape ReadKernelShape(OpKind kind, JsonReader& r) {
  if (kind == OpKind::kGemm) return ReadGemm(r);
  if (kind == OpKind::kAttention) return ReadAttention(r);
  return ReadMemory(r);
}

nlohmann::ordered_json OpShapeJson(const OpShape& shape) {
  if (const auto* c = std::get_if<CollectiveShape>(&shape)) {
    return {{"kind", kCollectiveKindNames.Name(c->kind)},
            {"group", kCommGroupNames.Name(c->group)},
            {"bytes", c->bytes}};
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  std::visit(
      [&j](const auto& kernel) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(kernel)>, CollectiveShape>)
          AddKernelShapeFields(kernel, j);
      },
      shape);
  return j;
}

OpShape ReadOpShape(OpKind kind, JsonReader& r) {
  if (kind == OpKind::kCollective) {
    return CollectiveShape{ReadEnum(r, "kind", kCollectiveKindNames),
                           ReadEnum(r, "group", kCommGroupNames), r.Int("bytes", kCollectiveBytes)};
  }
  return std::visit([](const auto& kernel) -> OpShape { return kernel; }, ReadKernelShape(kind, r));
}

}  // namespace loom
