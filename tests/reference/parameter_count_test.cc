// loom's parameter count against the model sizes published with the configurations that produced
// them: Narayanan et al. 2021, Table 1 (GPT models, seq 2048, vocab 51200, ffn 4h). The paper
// prints sizes to one decimal in billions, so a count agrees when it rounds to the printed value.

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "spec/model.h"

namespace loom {
namespace {

struct Row {
  double params_b;
  int64_t heads, hidden, layers;
};

std::vector<Row> ReadTable1() {
  std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/tests/reference/narayanan2021_table1.csv");
  std::vector<Row> rows;
  std::string line;
  bool header_seen = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (!header_seen) {
      header_seen = true;
      continue;
    }
    std::stringstream fields(line);
    std::string params, heads, hidden, layers;
    std::getline(fields, params, ',');
    std::getline(fields, heads, ',');
    std::getline(fields, hidden, ',');
    std::getline(fields, layers, ',');
    rows.push_back({std::stod(params), std::stoll(heads), std::stoll(hidden), std::stoll(layers)});
  }
  return rows;
}

// The GPT architecture of Megatron-LM: learned positions, LayerNorm, biases, tied embeddings.
nlohmann::json GptConfig(const Row& row) {
  return {{"hidden_size", row.hidden},        {"intermediate_size", 4 * row.hidden},
          {"num_hidden_layers", row.layers},  {"num_attention_heads", row.heads},
          {"vocab_size", 51200},              {"max_position_embeddings", 2048},
          {"hidden_act", "gelu"},             {"layer_norm_epsilon", 1e-5},
          {"attention_bias", true},           {"mlp_bias", true},
          {"tie_word_embeddings", true},      {"position_embedding_type", "learned_absolute"}};
}

TEST(Narayanan2021Table1, ParameterCountsRoundToThePublishedSizes) {
  std::vector<Row> rows = ReadTable1();
  ASSERT_EQ(rows.size(), 10u);
  for (const Row& row : rows) {
    Result<ModelSpec> model = ParseModelSpec(GptConfig(row), "table1-" + std::to_string(row.hidden));
    ASSERT_TRUE(model.ok()) << model.status().message();
    Result<ParameterCount> count = CountParameters(*model);
    ASSERT_TRUE(count.ok());
    double billions = static_cast<double>(count->total) / 1e9;
    EXPECT_NEAR(billions, row.params_b, 0.05) << "hidden " << row.hidden << ", " << row.layers << " layers";
  }
}

}  // namespace
}  // namespace loom
