// The model files loom ships (models/NAME.json), loaded for the workload tests.

#ifndef LOOM_TESTS_WORKLOAD_SHIPPED_MODEL_H_
#define LOOM_TESTS_WORKLOAD_SHIPPED_MODEL_H_

#include <gtest/gtest.h>

#include <string>

#include "spec/model.h"

namespace loom {

// models/|name|.json; an empty model (and a test failure) when it does not load.
inline ModelSpec Shipped(const std::string& name) {
  Result<ModelSpec> spec =
      LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/" + name + ".json");
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.status().message());
  return spec.ok() ? *spec : ModelSpec();
}

}  // namespace loom

#endif  // LOOM_TESTS_WORKLOAD_SHIPPED_MODEL_H_
