// loom's parameter count against the model sizes published with the configurations that produced
// them: Narayanan et al. 2021, Table 1 (GPT models, seq 2048, vocab 51200, ffn 4h). The paper
// prints sizes to one decimal in billions, so a count agrees when it rounds to the printed value.

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reference/reference_csv.h"
#include "spec/model.h"

namespace loom {
namespace {

struct Row {
  double params_b;
  int64_t heads, hidden, layers;
};

std::vector<Row> ReadTable1() {
  Result<CsvTable> table = ReadReferenceCsv(std::string(LOOM_SOURCE_DIR) + "/tests/reference/narayanan2021_table1.csv");
  EXPECT_TRUE(table.ok()) << table.status().message();
  std::vector<Row> rows;
  for (size_t i = 0; table.ok() && i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    rows.push_back({r.Number("params_b"), r.Int("heads"), r.Int("hidden"), r.Int("layers")});
    EXPECT_TRUE(r.Finish().ok()) << r.Finish().message();
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
