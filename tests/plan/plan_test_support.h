#ifndef LOOM_TESTS_PLAN_PLAN_TEST_SUPPORT_H_
#define LOOM_TESTS_PLAN_PLAN_TEST_SUPPORT_H_

// What the planner tests share: shipped inputs and requests.

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plan/search_space.h"
#include "spec/cluster.h"
#include "spec/model.h"

namespace loom {

// A file of the source tree, by its path from the repository root.
inline std::string Shipped(const std::string& relative) {
  return std::string(LOOM_SOURCE_DIR) + "/" + relative;
}

// The shipped model models/|name|.json; a load error fails the test.
inline ModelSpec ShippedModel(const std::string& name) {
  Result<ModelSpec> model = LoadModelSpec(Shipped("models/" + name + ".json"));
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? *model : ModelSpec();
}

// The .json files of a shipped folder ("models"), sorted.
inline std::vector<std::string> ShippedFiles(const std::string& folder) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(Shipped(folder))) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A request for |gpus| GPUs, |batch| sequences of |seq| tokens, nothing pinned.
inline SearchRequest Request(int64_t gpus, int64_t batch, int64_t seq) {
  SearchRequest r;
  r.gpus = gpus;
  r.global_batch = batch;
  r.seq_len = seq;
  return r;
}

struct Inputs {
  ModelSpec model;
  ClusterSpec cluster;
};

// A shipped model on |nodes| DGX H100 nodes; a load error fails the test.
inline Inputs Load(const std::string& model, int64_t nodes) {
  Result<ModelSpec> m = LoadModelSpec(Shipped(model));
  EXPECT_TRUE(m.ok()) << m.status().message();
  Result<ClusterSpec> c = LoadClusterSpec(Shipped("hardware/clusters/dgx-h100.json"), nodes);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return {m.ok() ? *m : ModelSpec(), c.ok() ? *c : ClusterSpec()};
}

}  // namespace loom

#endif  // LOOM_TESTS_PLAN_PLAN_TEST_SUPPORT_H_
