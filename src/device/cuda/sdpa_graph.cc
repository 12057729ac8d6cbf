#include "device/cuda/sdpa_graph.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <cudnn.h>

#include "core/dtype.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/sdpa_support.h"

// Which graph, and why. cuDNN 9.19's native SDPA operations (CUDNN_BACKEND_OPERATION_SDPA_FWD_ and
// _BWD_DESCRIPTOR, cudnn_graph_v9.h) take Q, K, V, O, the statistics, the scale, sequence lengths,
// page tables and a block mask, but no causal or diagonal-band attribute: masks reach them as a
// score-modifier subgraph (CUDNN_ATTR_OPERATION_SDPA_FWD_SUBGRAPH) only from cuDNN 9.21. So
// cudnn-frontend lowers a causal SDPA on an older backend to the decomposed ("composite") graph
// (include/cudnn_frontend/node/sdpa_support_surface.h: "Left bound or right bound for unified SDPA
// node requires cuDNN 9.21.0"), which cuDNN matches to its fused flash-attention engines (cuDNN
// developer guide, Graph API, "Fused Flash Attention fprop" and "bprop"). This file builds that
// graph, operation for operation and with the tensor types and layouts cudnn-frontend gives it
// (node/scaled_dot_product_flash_attention.h: CompositeSDPANode, CompositeSDPABackwardNode;
// node/softmax.h: CompositeSoftmaxNode; node/diagonal_band_mask.h: CompositeDiagonalBandMaskNode),
// for causal and full attention alike, so that both masks run on the same engines.

namespace loom::cuda {
namespace {

using Desc = cudnnBackendDescriptor_t;
using Dims = std::array<int64_t, 4>;

// A 4-d tensor's dims and strides in elements, outermost first, as cuDNN's descriptors take them.
struct Layout {
  Dims dims;
  Dims strides;
};

// [b, h, s, d] over memory laid out [b, s, h, d] (BSHD), the layout of Q, K, V, O and their
// gradients; cuDNN runs BHSD and BSHD alike (cuDNN frontend developer guide, Attention, support
// matrix), and the last stride must be 1.
Layout Bshd(int64_t b, int64_t h, int64_t s, int64_t d) {
  return {{b, h, s, d}, {s * h * d, d, h * d, 1}};
}

// [b, h, d, s], the transpose of a BSHD tensor: the backend takes K^T (and, in the backward, V^T)
// where the frontend takes K and V (CompositeSDPANode: "cuDNN backend API attention requires Q, KT,
// V").
Layout BshdTransposed(int64_t b, int64_t h, int64_t s, int64_t d) {
  return {{b, h, d, s}, {s * h * d, d, 1, h * d}};
}

// [b, h, r, c] packed row-major: the scores (c = s_kv), per-row statistics (c = 1), dQ's
// accumulator.
Layout Packed(int64_t b, int64_t h, int64_t r, int64_t c) {
  return {{b, h, r, c}, {h * r * c, r * c, c, 1}};
}

// [b, h, c, r], the transpose of a Packed(b, h, r, c) tensor.
Layout PackedTransposed(int64_t b, int64_t h, int64_t r, int64_t c) {
  return {{b, h, c, r}, {h * r * c, r * c, 1, c}};
}

// The attention's sizes, named as in the graphs.
struct AttentionDims {
  int64_t b, h, hk, sq, skv, dqk, dv;
};

AttentionDims DimsOf(const AttentionShape& s) {
  return {s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_kv, s.head_dim_qk, s.head_dim_v};
}

// "b=2 h=32 h_kv=8 s_q=4096 s_kv=4096 d_qk=128 d_v=128 causal bf16".
std::string Describe(const AttentionShape& s) {
  return "b=" + std::to_string(s.batch) + " h=" + std::to_string(s.heads) +
         " h_kv=" + std::to_string(s.kv_heads) + " s_q=" + std::to_string(s.seq_q) +
         " s_kv=" + std::to_string(s.seq_kv) + " d_qk=" + std::to_string(s.head_dim_qk) +
         " d_v=" + std::to_string(s.head_dim_v) + (s.causal ? " causal " : " full ") +
         std::string(kDtypeNames.Name(s.dtype));
}

// cuDNN 9.8 made the graph's handle optional and 9.19 deprecates the attribute; cudnn-frontend
// still sets it when it has a handle (cudnn_frontend_OperationGraph.h), as here, so that the graph
// is planned for the handle's device.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kOperationGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
#pragma GCC diagnostic pop

// The first of |configs| (in the heuristics' order) that cuDNN finalizes into an execution plan. A
// config it cannot build is skipped, as cudnn-frontend's plan building does. When none builds, the
// first failure that says a library did not load (Unavailable: that engine might have run with
// it), else the first config's failure; either names cuDNN's reason.
Result<BackendDescriptor> FirstPlan(const std::vector<Desc>& configs) {
  Status first_failure =
      Status::Unimplemented("cuDNN's heuristics (CUDNN_HEUR_MODE_A) offered no engine config");
  for (size_t i = 0; i < configs.size(); ++i) {
    LOOM_ASSIGN_OR_RETURN(BackendDescriptor plan,
                          MakeDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
    Status finalized = SetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs[i]);
    if (finalized.ok()) {
      finalized = CheckCudnn(cudnnBackendFinalize(plan.get()),
                             "cudnnBackendFinalize(execution plan)", __FILE__, __LINE__);
    }
    if (finalized.ok()) return plan;
    const bool first_unavailable = finalized.code() == Status::Code::kUnavailable &&
                                   first_failure.code() != Status::Code::kUnavailable;
    if (i == 0 || first_unavailable) first_failure = finalized;
  }
  return first_failure;
}

// The precision and axis of a pointwise operation.
struct PointwiseMath {
  cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  int64_t axis = -1;  // CUDNN_POINTWISE_GEN_INDEX only: the dimension whose index it generates
};

// Builds one operation graph and plans it. After the first failure every call does nothing (the
// tensor calls return null) and Finish returns that failure, so that a graph reads as a list of
// operations. The builder owns every descriptor it makes.
class GraphBuilder {
 public:
  // A tensor in device memory, which the variant pack gives an address by |uid|.
  Desc Tensor(SdpaUid uid, const Layout& layout, cudnnDataType_t type) {
    return Add(uid, layout, type, false, false);
  }
  // An fp32 scalar that cuDNN reads by value from host memory at each launch.
  Desc Scalar(SdpaUid uid) {
    return Add(uid, {{1, 1, 1, 1}, {1, 1, 1, 1}}, CUDNN_DATA_FLOAT, false, true);
  }
  // A tensor that exists only inside the fused kernel.
  Desc Virtual(const Layout& layout, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    return Add(next_virtual_uid_++, layout, type, true, false);
  }

  // y = mode(inputs), the inputs being the X, B and T operands in that order (T: BINARY_SELECT's
  // condition); into |y|, or into a new virtual tensor that it returns.
  void PointwiseInto(cudnnPointwiseMode_t mode, std::initializer_list<Desc> inputs, Desc y,
                     PointwiseMath math = {}) {
    if (status_.ok()) status_ = AddPointwise(mode, inputs, y, math);
  }
  Desc Pointwise(cudnnPointwiseMode_t mode, std::initializer_list<Desc> inputs,
                 const Layout& layout, cudnnDataType_t type = CUDNN_DATA_FLOAT,
                 PointwiseMath math = {}) {
    Desc y = Virtual(layout, type);
    PointwiseInto(mode, inputs, y, math);
    return y;
  }
  // c = a b over the last two dimensions, batched over the first two; a batch dimension of a or b
  // may divide c's (K and V heads shared by h / h_kv query heads).
  void MatmulInto(Desc a, Desc b, Desc c) {
    if (status_.ok()) status_ = AddMatmul(a, b, c);
  }
  Desc Matmul(Desc a, Desc b, const Layout& layout, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    Desc c = Virtual(layout, type);
    MatmulInto(a, b, c);
    return c;
  }
  // y = op of x over every dimension where y is smaller: to 1 (a row max or sum), or from h heads
  // to h_kv (the sum over the query heads sharing a K/V head).
  void ReduceInto(cudnnReduceTensorOp_t op, Desc x, Desc y) {
    if (status_.ok()) status_ = AddReduction(op, x, y);
  }
  Desc Reduce(cudnnReduceTensorOp_t op, Desc x, const Layout& layout) {
    Desc y = Virtual(layout);
    ReduceInto(op, x, y);
    return y;
  }
  // The same elements as x under another layout (a transpose view), in a new virtual tensor.
  Desc Reshape(Desc x, const Layout& layout, cudnnDataType_t type) {
    Desc y = Virtual(layout, type);
    if (status_.ok()) status_ = AddReshape(x, y);
    return y;
  }

  // Finalizes the graph on |handle| and plans it with the first engine config of heuristics mode A
  // that cuDNN can build.
  Result<ExecutionPlan> Finish(cudnnHandle_t handle) &&;

 private:
  Desc Add(int64_t uid, const Layout& layout, cudnnDataType_t type, bool is_virtual, bool by_value);
  Status MakeTensor(int64_t uid, const Layout& layout, cudnnDataType_t type, bool is_virtual,
                    bool by_value, Desc* tensor);
  Status AddPointwise(cudnnPointwiseMode_t mode, std::initializer_list<Desc> inputs, Desc y,
                      PointwiseMath math);
  Status AddMatmul(Desc a, Desc b, Desc c);
  Status AddReduction(cudnnReduceTensorOp_t op, Desc x, Desc y);
  Status AddReshape(Desc x, Desc y);
  Status MakeGraphAndConfigs(cudnnHandle_t handle, std::vector<Desc>* configs);
  // A new descriptor of |type| into |*descriptor|, owned by the builder.
  Status Make(cudnnBackendDescriptorType_t type, Desc* descriptor);
  // Finalizes operation |op| and appends it to the graph.
  Status Append(Desc op);

  Status status_;
  std::vector<BackendDescriptor> owned_;
  std::vector<Desc> operations_;  // in the order added, which is topological
  std::vector<int64_t> uids_;
  int64_t next_virtual_uid_ = 1000;  // above every SdpaUid
};

Desc GraphBuilder::Add(int64_t uid, const Layout& layout, cudnnDataType_t type, bool is_virtual,
                       bool by_value) {
  Desc tensor = nullptr;
  if (status_.ok()) status_ = MakeTensor(uid, layout, type, is_virtual, by_value, &tensor);
  if (status_.ok() && !is_virtual) uids_.push_back(uid);
  return status_.ok() ? tensor : nullptr;
}

Status GraphBuilder::MakeTensor(int64_t uid, const Layout& layout, cudnnDataType_t type,
                                bool is_virtual, bool by_value, Desc* tensor) {
  const int64_t alignment = 16;  // bytes: cudnn-frontend's default for every tensor
  const bool yes = true;
  LOOM_RETURN_IF_ERROR(Make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, tensor));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(*tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(*tensor, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(*tensor, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, layout.dims.data()));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(*tensor, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, layout.strides.data()));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(*tensor, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment));
  if (is_virtual)
    LOOM_RETURN_IF_ERROR(
        SetAttribute(*tensor, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes));
  if (by_value)
    LOOM_RETURN_IF_ERROR(
        SetAttribute(*tensor, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes));
  LOOM_CUDNN(cudnnBackendFinalize(*tensor));
  return Status::Ok();
}

Status GraphBuilder::AddPointwise(cudnnPointwiseMode_t mode, std::initializer_list<Desc> inputs,
                                  Desc y, PointwiseMath math) {
  static constexpr std::array<cudnnBackendAttributeName_t, 3> kOperands = {
      CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
      CUDNN_ATTR_OPERATION_POINTWISE_TDESC};
  // The operands' scales: the fusion engines take only 1 (cuDNN developer guide, Graph API,
  // "Pointwise" constraints), and cudnn-frontend always sets them (cudnn_frontend_Operation.h,
  // build_pointwise_op).
  const float alpha = 1.0f;
  if (inputs.size() < 1 || inputs.size() > kOperands.size())
    return Status::Internal("pointwise with 1 to 3 inputs");
  Desc descriptor = nullptr;
  LOOM_RETURN_IF_ERROR(Make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &descriptor));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(descriptor, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
  LOOM_RETURN_IF_ERROR(SetAttribute(descriptor, CUDNN_ATTR_POINTWISE_MATH_PREC,
                                    CUDNN_TYPE_DATA_TYPE, 1, &math.precision));
  if (math.axis >= 0) {
    LOOM_RETURN_IF_ERROR(
        SetAttribute(descriptor, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &math.axis));
  }
  LOOM_CUDNN(cudnnBackendFinalize(descriptor));
  Desc op = nullptr;
  LOOM_RETURN_IF_ERROR(Make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op));
  LOOM_RETURN_IF_ERROR(SetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &descriptor));
  size_t operand = 0;
  for (Desc input : inputs) {
    LOOM_RETURN_IF_ERROR(
        SetAttribute(op, kOperands[operand++], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &input));
  }
  LOOM_RETURN_IF_ERROR(
      SetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &alpha));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &alpha));
  return Append(op);
}

Status GraphBuilder::AddMatmul(Desc a, Desc b, Desc c) {
  const cudnnDataType_t accumulate = CUDNN_DATA_FLOAT;
  Desc descriptor = nullptr;
  LOOM_RETURN_IF_ERROR(Make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, &descriptor));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(descriptor, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &accumulate));
  LOOM_CUDNN(cudnnBackendFinalize(descriptor));
  Desc op = nullptr;
  LOOM_RETURN_IF_ERROR(Make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, &op));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c));
  LOOM_RETURN_IF_ERROR(SetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_DESC,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &descriptor));
  return Append(op);
}

Status GraphBuilder::AddReduction(cudnnReduceTensorOp_t op_type, Desc x, Desc y) {
  const cudnnDataType_t accumulate = CUDNN_DATA_FLOAT;
  Desc descriptor = nullptr;
  LOOM_RETURN_IF_ERROR(Make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &descriptor));
  LOOM_RETURN_IF_ERROR(SetAttribute(descriptor, CUDNN_ATTR_REDUCTION_OPERATOR,
                                    CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &op_type));
  LOOM_RETURN_IF_ERROR(SetAttribute(descriptor, CUDNN_ATTR_REDUCTION_COMP_TYPE,
                                    CUDNN_TYPE_DATA_TYPE, 1, &accumulate));
  LOOM_CUDNN(cudnnBackendFinalize(descriptor));
  Desc op = nullptr;
  LOOM_RETURN_IF_ERROR(Make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, &op));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
  LOOM_RETURN_IF_ERROR(SetAttribute(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &descriptor));
  return Append(op);
}

Status GraphBuilder::AddReshape(Desc x, Desc y) {
  Desc op = nullptr;
  LOOM_RETURN_IF_ERROR(Make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, &op));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
  return Append(op);
}

Status GraphBuilder::Make(cudnnBackendDescriptorType_t type, Desc* descriptor) {
  LOOM_ASSIGN_OR_RETURN(BackendDescriptor made, MakeDescriptor(type));
  *descriptor = made.get();
  owned_.push_back(std::move(made));
  return Status::Ok();
}

Status GraphBuilder::Append(Desc op) {
  LOOM_CUDNN(cudnnBackendFinalize(op));
  operations_.push_back(op);
  return Status::Ok();
}

// The operation graph, then the engine configs heuristics mode A ranks for it, best first.
Status GraphBuilder::MakeGraphAndConfigs(cudnnHandle_t handle, std::vector<Desc>* configs) {
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  const int64_t operation_count = static_cast<int64_t>(operations_.size());
  Desc graph = nullptr;
  LOOM_RETURN_IF_ERROR(Make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
  LOOM_RETURN_IF_ERROR(SetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, operation_count,
                                    operations_.data()));
  LOOM_RETURN_IF_ERROR(SetAttribute(graph, kOperationGraphHandle, CUDNN_TYPE_HANDLE, 1, &handle));
  LOOM_CUDNN(cudnnBackendFinalize(graph));
  Desc heuristics = nullptr;
  LOOM_RETURN_IF_ERROR(Make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heuristics));
  LOOM_RETURN_IF_ERROR(SetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
  LOOM_RETURN_IF_ERROR(
      SetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
  LOOM_CUDNN(cudnnBackendFinalize(heuristics));
  // How many configs there are (a query for 0 elements), then that many created, unfinalized
  // config descriptors for cuDNN to fill (cudnn_frontend_Heuristics.h does the same).
  int64_t count = 0;
  LOOM_CUDNN(cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  configs->assign(static_cast<size_t>(std::max<int64_t>(count, 0)), nullptr);
  for (Desc& config : *configs)
    LOOM_RETURN_IF_ERROR(Make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &config));
  if (configs->empty()) return Status::Ok();
  int64_t returned = 0;
  LOOM_CUDNN(cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                                      configs->data()));
  configs->resize(static_cast<size_t>(std::clamp<int64_t>(returned, 0, count)));
  return Status::Ok();
}

Result<ExecutionPlan> GraphBuilder::Finish(cudnnHandle_t handle) && {
  LOOM_RETURN_IF_ERROR(status_);
  std::vector<Desc> configs;
  LOOM_RETURN_IF_ERROR(MakeGraphAndConfigs(handle, &configs));
  LOOM_ASSIGN_OR_RETURN(BackendDescriptor plan, FirstPlan(configs));
  int64_t workspace_bytes = 0;
  int64_t count = 0;
  LOOM_CUDNN(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                      CUDNN_TYPE_INT64, 1, &count, &workspace_bytes));
  return ExecutionPlan{std::move(owned_), std::move(plan), std::move(uids_), workspace_bytes};
}

// Keeps score (i, j) where i >= j, query i seeing keys 0..i, and sets the rest to -inf before the
// softmax: cudnn-frontend's diagonal-band mask with right bound 0, aligned top-left
// (set_causal_mask), as CompositeDiagonalBandMaskNode lowers it for cuDNN < 9.21. Returns the
// masked scores.
Desc AddCausalMask(GraphBuilder& g, Desc scores, const Layout& layout) {
  Desc row =
      g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, {scores}, layout, CUDNN_DATA_INT32, {.axis = 2});
  Desc column =
      g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, {scores}, layout, CUDNN_DATA_INT32, {.axis = 3});
  Desc keep = g.Pointwise(CUDNN_POINTWISE_CMP_GE, {row, column}, layout, CUDNN_DATA_BOOLEAN,
                          {.precision = CUDNN_DATA_BOOLEAN});
  // BINARY_SELECT: y = t ? x : b.
  return g.Pointwise(CUDNN_POINTWISE_BINARY_SELECT, {scores, g.Scalar(kNegativeInfinity), keep},
                     layout);
}

// O = softmax(scale * Q K^T [masked]) V, and stats = the softmax's log-sum-exp per query row
// ([b, h, s_q, 1], fp32), which the backward reads (FlashAttention-2's L: Dao 2023, Algorithm 1).
void AddForward(GraphBuilder& g, const AttentionShape& shape, cudnnDataType_t io) {
  const AttentionDims n = DimsOf(shape);
  const Layout scores = Packed(n.b, n.h, n.sq, n.skv);
  const Layout rows = Packed(n.b, n.h, n.sq, 1);
  Desc q = g.Tensor(kQ, Bshd(n.b, n.h, n.sq, n.dqk), io);
  Desc k_t = g.Tensor(kK, BshdTransposed(n.b, n.hk, n.skv, n.dqk), io);
  Desc v = g.Tensor(kV, Bshd(n.b, n.hk, n.skv, n.dv), io);
  Desc o = g.Tensor(kO, Bshd(n.b, n.h, n.sq, n.dv), io);
  Desc stats = g.Tensor(kStats, rows, CUDNN_DATA_FLOAT);

  Desc s = g.Matmul(q, k_t, scores);
  s = g.Pointwise(CUDNN_POINTWISE_MUL, {s, g.Scalar(kScale)}, scores);
  if (shape.causal) s = AddCausalMask(g, s, scores);
  // The softmax as CompositeSoftmaxNode writes it with stats (node/softmax.h): the row max, exp of
  // the difference, its row sum; stats = max + log(sum); P = exp / sum.
  Desc max = g.Reduce(CUDNN_REDUCE_TENSOR_MAX, s, rows);
  Desc shifted = g.Pointwise(CUDNN_POINTWISE_SUB, {s, max}, scores);
  Desc exp = g.Pointwise(CUDNN_POINTWISE_EXP, {shifted}, scores);
  Desc sum = g.Reduce(CUDNN_REDUCE_TENSOR_ADD, exp, rows);
  Desc log_sum = g.Pointwise(CUDNN_POINTWISE_LOG, {sum}, rows);
  g.PointwiseInto(CUDNN_POINTWISE_ADD, {max, log_sum}, stats);
  // P in the I/O type: the backend takes the second matmul's A operand in it (CompositeSDPANode:
  // "Requirement by cudnn backend to take in bmm2 aType as i/o type").
  Desc p = g.Pointwise(CUDNN_POINTWISE_DIV, {exp, sum}, scores, io);
  g.MatmulInto(p, v, o);
}

// rowsum(dO * O) in fp32, [b, h, s_q, 1]: FlashAttention-2's D (Dao 2023, Algorithm 2). It is a
// tensor in memory, as cudnn-frontend makes it (its "softmax_sum", placed in the workspace).
Desc AddSoftmaxSum(GraphBuilder& g, Desc d_o, Desc o, const AttentionDims& n) {
  // cudnn-frontend's strides for this virtual product ("mul_dO_O"), kept as they are.
  const Layout product = {{n.b, n.h, n.sq, n.dv}, {n.h * n.sq * n.dv, n.sq * n.dv, n.h * n.dv, 1}};
  const Layout rows = Packed(n.b, n.h, n.sq, 1);
  Desc product_tensor = g.Pointwise(CUDNN_POINTWISE_MUL, {d_o, o}, product);
  Desc sum = g.Reduce(CUDNN_REDUCE_TENSOR_ADD, product_tensor, rows);
  // Times 1, where cudnn-frontend multiplies by the inverse dropout scale ("scale_dropout_inv").
  Desc softmax_sum = g.Tensor(kSoftmaxSum, rows, CUDNN_DATA_FLOAT);
  g.PointwiseInto(CUDNN_POINTWISE_MUL, {sum, g.Scalar(kOne)}, softmax_sum);
  return softmax_sum;
}

// P = exp(scale * Q K^T - stats) [masked]: the forward's probabilities, recomputed from its stats.
Desc AddProbabilities(GraphBuilder& g, Desc q, Desc k_t, Desc stats, Desc scale, bool causal,
                      const Layout& scores) {
  Desc s = g.Matmul(q, k_t, scores);
  s = g.Pointwise(CUDNN_POINTWISE_MUL, {s, scale}, scores);
  s = g.Pointwise(CUDNN_POINTWISE_SUB, {s, stats}, scores);
  if (causal) s = AddCausalMask(g, s, scores);
  return g.Pointwise(CUDNN_POINTWISE_EXP, {s}, scores);
}

// The gradient of K or V, |uid| ([b, h_kv, s_kv, d] BSHD) = x^T y, with x [b, h, s_q, s_kv] (dS or
// P) and y [b, h, s_q, d] (Q or dO). With GQA the product has h heads, summed over each group of h
// / h_kv query heads that share a K/V head (CompositeSDPABackwardNode, "red_dK_head").
void AddKeyValueGradient(GraphBuilder& g, Desc x, Desc y, SdpaUid uid, const AttentionDims& n,
                         int64_t d, cudnnDataType_t io) {
  Desc x_t = g.Reshape(x, PackedTransposed(n.b, n.h, n.sq, n.skv), io);
  Desc gradient = g.Tensor(uid, Bshd(n.b, n.hk, n.skv, d), io);
  if (n.h == n.hk) {
    g.MatmulInto(x_t, y, gradient);
    return;
  }
  Desc per_query_head = g.Matmul(x_t, y, Packed(n.b, n.h, n.skv, d), io);
  g.ReduceInto(CUDNN_REDUCE_TENSOR_ADD, per_query_head, gradient);
}

// dQ = dS K, accumulated in fp32 in memory and converted to the I/O type by an identity
// (CompositeSDPABackwardNode, "matmul_dS_K" into dQ_accum, then "identity_dQ"). K is K^T reshaped
// back; cudnn-frontend leaves that virtual tensor in the intermediate type, fp32.
void AddQueryGradient(GraphBuilder& g, Desc d_s, Desc k_t, const AttentionDims& n,
                      cudnnDataType_t io) {
  Desc k = g.Reshape(k_t, Bshd(n.b, n.hk, n.skv, n.dqk), CUDNN_DATA_FLOAT);
  Desc accumulator = g.Tensor(kDQAccum, Packed(n.b, n.h, n.sq, n.dqk), CUDNN_DATA_FLOAT);
  g.MatmulInto(d_s, k, accumulator);
  Desc d_q = g.Tensor(kDQ, Bshd(n.b, n.h, n.sq, n.dqk), io);
  g.PointwiseInto(CUDNN_POINTWISE_IDENTITY, {accumulator}, d_q);
}

// dQ, dK, dV from Q, K, V, O, dO and the forward's stats (FlashAttention-2's backward, Dao 2023,
// Algorithm 2): dV = P^T dO; dS = P * (dO V^T - rowsum(dO * O)) * scale; dK = dS^T Q; dQ = dS K.
void AddBackward(GraphBuilder& g, const AttentionShape& shape, cudnnDataType_t io) {
  const AttentionDims n = DimsOf(shape);
  const Layout scores = Packed(n.b, n.h, n.sq, n.skv);
  Desc q = g.Tensor(kQ, Bshd(n.b, n.h, n.sq, n.dqk), io);
  Desc k_t = g.Tensor(kK, BshdTransposed(n.b, n.hk, n.skv, n.dqk), io);
  Desc v_t = g.Tensor(kV, BshdTransposed(n.b, n.hk, n.skv, n.dv), io);
  Desc o = g.Tensor(kO, Bshd(n.b, n.h, n.sq, n.dv), io);
  Desc d_o = g.Tensor(kDO, Bshd(n.b, n.h, n.sq, n.dv), io);
  Desc stats = g.Tensor(kStats, Packed(n.b, n.h, n.sq, 1), CUDNN_DATA_FLOAT);
  Desc scale = g.Scalar(kScale);

  Desc softmax_sum = AddSoftmaxSum(g, d_o, o, n);
  Desc p = AddProbabilities(g, q, k_t, stats, scale, shape.causal, scores);
  AddKeyValueGradient(g, p, d_o, kDV, n, n.dv, io);
  Desc d_p = g.Matmul(d_o, v_t, scores);
  Desc d_s = g.Pointwise(CUDNN_POINTWISE_SUB, {d_p, softmax_sum}, scores);
  d_s = g.Pointwise(CUDNN_POINTWISE_MUL, {d_s, p}, scores);
  d_s = g.Pointwise(CUDNN_POINTWISE_MUL, {d_s, scale}, scores);
  AddKeyValueGradient(g, d_s, q, kDK, n, n.dqk, io);
  AddQueryGradient(g, d_s, k_t, n, io);
}

Result<ExecutionPlan> PlanSdpa(cudnnHandle_t handle, const AttentionShape& shape, bool backward) {
  LOOM_RETURN_IF_ERROR(CheckCudnnSdpaSupport(shape,
                                             backward ? SdpaPass::kBackward : SdpaPass::kForward,
                                             static_cast<int64_t>(cudnnGetVersion())));
  const cudnnDataType_t io = shape.dtype == Dtype::kBf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  GraphBuilder graph;
  if (backward) {
    AddBackward(graph, shape, io);
  } else {
    AddForward(graph, shape, io);
  }
  Result<ExecutionPlan> plan = std::move(graph).Finish(handle);
  if (plan.ok()) return plan;
  const std::string pass = backward ? "backward" : "forward";
  if (plan.status().code() == Status::Code::kUnavailable) {
    return plan.status().WithContext("cuDNN cannot run the fused attention " + pass +
                                     " on this machine (planning " + Describe(shape) + ")");
  }
  return plan.status().WithContext("cuDNN cannot plan the fused attention " + pass + " for " +
                                   Describe(shape));
}

}  // namespace

Result<BackendDescriptor> MakeDescriptor(cudnnBackendDescriptorType_t type) {
  Desc descriptor = nullptr;
  LOOM_CUDNN(cudnnBackendCreateDescriptor(type, &descriptor));
  return BackendDescriptor(descriptor);
}

Status SetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                    cudnnBackendAttributeType_t type, int64_t count, const void* values) {
  const std::string call =
      "cudnnBackendSetAttribute(attribute " + std::to_string(static_cast<int>(name)) + ")";
  return CheckCudnn(cudnnBackendSetAttribute(descriptor, name, type, count, values), call.c_str(),
                    __FILE__, __LINE__);
}

SdpaTensorBytes SdpaTensorBytesOf(const AttentionShape& s) {
  const int64_t io = BytesPerElement(s.dtype), fp32 = 4;
  SdpaTensorBytes bytes{};
  bytes[kQ] = bytes[kDQ] = s.batch * s.seq_q * s.heads * s.head_dim_qk * io;
  bytes[kK] = bytes[kDK] = s.batch * s.seq_kv * s.kv_heads * s.head_dim_qk * io;
  bytes[kV] = bytes[kDV] = s.batch * s.seq_kv * s.kv_heads * s.head_dim_v * io;
  bytes[kO] = bytes[kDO] = s.batch * s.seq_q * s.heads * s.head_dim_v * io;
  bytes[kStats] = bytes[kSoftmaxSum] = s.batch * s.heads * s.seq_q * fp32;
  bytes[kDQAccum] = s.batch * s.heads * s.seq_q * s.head_dim_qk * fp32;
  return bytes;
}

Status CheckSdpaShape(const AttentionShape& s) {
  if (s.dtype != Dtype::kBf16 && s.dtype != Dtype::kFp16) {
    return Status::Unimplemented("cuDNN's fused attention runs bf16 and fp16; " +
                                 std::string(kDtypeNames.Name(s.dtype)) +
                                 " attention is not probed");
  }
  if (std::min({s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_kv, s.head_dim_qk, s.head_dim_v}) <=
      0) {
    return Status::InvalidArgument("attention " + Describe(s) + ": every size must be positive");
  }
  if (s.heads % s.kv_heads != 0) {
    return Status::InvalidArgument(
        "attention " + Describe(s) + ": heads (" + std::to_string(s.heads) +
        ") is not a multiple of kv_heads (" + std::to_string(s.kv_heads) +
        "); grouped-query attention shares each K/V head among heads / kv_heads");
  }
  return Status::Ok();
}

Result<ExecutionPlan> PlanSdpaForward(cudnnHandle_t handle, const AttentionShape& shape) {
  return PlanSdpa(handle, shape, /*backward=*/false);
}

Result<ExecutionPlan> PlanSdpaBackward(cudnnHandle_t handle, const AttentionShape& shape) {
  return PlanSdpa(handle, shape, /*backward=*/true);
}

}  // namespace loom::cuda
