// Config parsing (text and vision-language layouts, both rope spellings) and
// checkpoint save/load, including the sparse side file and its staleness check.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include "harness.h"
#include "model_host/qwen/model.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>

using namespace qgpu::qwen;
using namespace qwen_test;
using nlohmann::json;

TEST(QwenConfig, Qwen35_2bSizes) {
  Config c = Config::qwen35_2b(24, 248320);
  EXPECT_EQ(c.hidden_size, 2048);
  EXPECT_EQ(c.intermediate_size, 6144);
  EXPECT_EQ(c.linear_conv_dim(), 6144);
  EXPECT_EQ(c.rotary_dim(), 64);
  EXPECT_EQ(c.num_attention_heads * c.head_dim, 2048);
  int full = 0;
  for (int l = 0; l < 24; ++l) full += c.is_full_attention(l);
  EXPECT_EQ(full, 6);
  EXPECT_TRUE(c.is_full_attention(3));
  EXPECT_FALSE(c.is_full_attention(4));
}

TEST(QwenConfig, JsonRoundTripAndLayouts) {
  Config c = Config::qwen35_2b(5, 1000);
  c.tie_word_embeddings = false;
  json text = c.to_json();
  EXPECT_EQ(text["model_type"], "qwen3_5_text");
  EXPECT_EQ(text["rope_parameters"]["mrope_section"], json::array({11, 11, 10}));
  Config back = Config::from_json(text);
  EXPECT_EQ(back.to_json(), text);

  // Vision-language layout: sizes under text_config, tie flag at the top.
  json vl = {{"model_type", "qwen3_5"}, {"tie_word_embeddings", true}, {"text_config", text}};
  vl["text_config"].erase("tie_word_embeddings");
  Config v = Config::from_json(vl);
  EXPECT_TRUE(v.tie_word_embeddings);
  EXPECT_EQ(v.hidden_size, 2048);

  // Older files: rope keys at the top level, layer types from the interval.
  json old = text;
  old.erase("rope_parameters");
  old.erase("layer_types");
  old["rope_theta"] = 5e6;
  old["partial_rotary_factor"] = 0.5;
  old["full_attention_interval"] = 2;
  Config o = Config::from_json(old);
  EXPECT_EQ(o.rope_theta, 5e6);
  EXPECT_EQ(o.rotary_dim(), 128);
  EXPECT_EQ(o.layer_types, (std::vector<std::string>{"linear_attention", "full_attention", "linear_attention",
                                                     "full_attention", "linear_attention"}));
}

TEST(QwenConfig, ErrorsNameTheField) {
  json j = Config::qwen35_2b(2, 10).to_json();
  j.erase("hidden_size");
  try {
    Config::from_json(j);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("hidden_size"), std::string::npos) << e.what();
  }
  json bad = Config::qwen35_2b(2, 10).to_json();
  bad["layer_types"][1] = "moe";
  EXPECT_THROW(Config::from_json(bad), std::invalid_argument);
}

TEST(QwenCheckpoint, SaveLoadAndSideFile) {
  Scratch tmp("checkpoint");
  python(QWEN_REFERENCE_PY, "make " + (tmp / "src") + " --size tiny --layers 4 --vocab 60 --seed 9 --sparse --untied");
  Checkpoint src = Checkpoint::load(tmp / "src");
  EXPECT_FALSE(std::filesystem::exists(tmp / "src/qgpu-sparse.bin"));

  // fp32: exact round trip, read back through the side file.
  src.save(tmp / "f32");
  ASSERT_TRUE(std::filesystem::exists(tmp / "f32/qgpu-sparse.bin"));
  Checkpoint f32 = Checkpoint::load(tmp / "f32");
  EXPECT_EQ(f32.config.to_json(), src.config.to_json());
  ASSERT_EQ(f32.tensors.size(), src.tensors.size());
  for (const auto& [name, t] : src.tensors) EXPECT_TRUE(torch::equal(f32.tensors.at(name), t)) << name;

  // bf16: the values round to bf16, whether read from the side file or the safetensors.
  src.save(tmp / "bf16", torch::kBFloat16);
  Checkpoint via_side = Checkpoint::load(tmp / "bf16");
  std::filesystem::remove(tmp / "bf16/qgpu-sparse.bin");
  Checkpoint via_safetensors = Checkpoint::load(tmp / "bf16");
  for (const auto& [name, t] : src.tensors) {
    auto expect = t.to(torch::kBFloat16).to(torch::kFloat32);
    EXPECT_TRUE(torch::equal(via_side.tensors.at(name), expect)) << name;
    EXPECT_TRUE(torch::equal(via_safetensors.tensors.at(name), expect)) << name;
  }

  // An up-to-date side file is what load() reads: truncating it is an error.
  std::filesystem::resize_file(tmp / "f32/qgpu-sparse.bin", 100);
  EXPECT_THROW(Checkpoint::load(tmp / "f32"), std::runtime_error);

  // A stale side file (the safetensors were rewritten since) is ignored.
  src.save(tmp / "stale");
  std::filesystem::copy_file(tmp / "stale/qgpu-sparse.bin", tmp / "old-side.bin");
  Checkpoint changed = src;
  changed.tensors["norm.weight"] = src.tensors.at("norm.weight") + 1.0f;
  changed.save(tmp / "stale");
  std::filesystem::copy_file(tmp / "old-side.bin", tmp / "stale/qgpu-sparse.bin",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_TRUE(torch::equal(Checkpoint::load(tmp / "stale").tensors.at("norm.weight"),
                           changed.tensors.at("norm.weight")));
}

namespace {
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

// tools/hf_compare/expand_compact.py (how the compiled GPU reaches machines
// that cannot build it: a few MB instead of 20 GB) turns a side file back
// into the safetensors that save() writes, byte for byte, from the compact
// form and from a full directory's side file (which lists file stamps).
TEST(QwenCheckpoint, CompactFormExpandsToTheSafetensorsByteForByte) {
  Scratch tmp("expand");
  python(QWEN_REFERENCE_PY, "make " + (tmp / "src") + " --size tiny --layers 4 --vocab 60 --seed 5 --sparse --untied");
  Checkpoint src = Checkpoint::load(tmp / "src");
  src.tensors["norm.weight"].zero_();  // a tensor without a non-zero value
  src.save(tmp / "full");
  src.save_compact(tmp / "compact");
  ASSERT_FALSE(std::filesystem::exists(tmp / "compact/model.safetensors"));
  const std::string expected = file_bytes(tmp / "full/model.safetensors");
  ASSERT_GT(expected.size(), 1000u);
  // The side file compressed, as tools/hf_compare/make_bundle.sh ships it.
  std::filesystem::create_directories(tmp / "xz");
  std::filesystem::copy_file(tmp / "compact/config.json", tmp / "xz/config.json");
  ASSERT_EQ(std::system(("xz -c " + (tmp / "compact/qgpu-sparse.bin") + " > " + (tmp / "xz/qgpu-sparse.bin.xz")).c_str()), 0);
  for (const std::string from : {"compact", "full", "xz"}) {
    python(EXPAND_COMPACT_PY, (tmp / from) + " " + (tmp / (from + "-expanded")) + " > /dev/null");
    EXPECT_TRUE(file_bytes(tmp / (from + "-expanded/model.safetensors")) == expected) << "expanded from " << from;
    EXPECT_EQ(file_bytes(tmp / (from + "-expanded/config.json")), file_bytes(tmp / "full/config.json"));
    Checkpoint back = Checkpoint::load(tmp / (from + "-expanded"));
    for (const auto& [name, t] : src.tensors) EXPECT_TRUE(torch::equal(back.tensors.at(name), t)) << name;
  }
  // --sha256 fails the run unless the expansion has that hash.
  const std::string run = "/usr/bin/python3 " + std::string(EXPAND_COMPACT_PY) + " " + (tmp / "compact") + " " +
                          (tmp / "checked") + " > /dev/null --sha256 ";
  EXPECT_NE(std::system((run + std::string(64, '0')).c_str()), 0);
  EXPECT_EQ(std::system((run + "$(sha256sum " + (tmp / "full/model.safetensors") + " | cut -c1-64)").c_str()), 0);
}

// sparse_matrix places each flat row-major index at its row and column, also
// past the first chunk of indices it converts at a time (16 k).
TEST(QwenCheckpoint, SparseMatrixPlacesEachEntry) {
  const int64_t rows = 300, cols = 97;
  NonZeros nz;
  for (int64_t i = 3; i < rows * cols; i += 1 + i % 3) {
    nz.index.push_back(i);
    nz.value.push_back(static_cast<float>(i % 1000) - 499.5f);
  }
  ASSERT_GT(nz.index.size(), size_t{1} << 14);
  const torch::Tensor m = sparse_matrix(rows, cols, nz);
  ASSERT_TRUE(m.is_sparse());
  EXPECT_EQ(m.sizes(), (std::vector<int64_t>{rows, cols}));
  torch::Tensor expected = torch::zeros({rows, cols}, torch::kFloat32);
  float* e = expected.data_ptr<float>();
  for (size_t k = 0; k < nz.index.size(); ++k) e[nz.index[k]] = nz.value[k];
  EXPECT_TRUE(torch::equal(m.to_dense(), expected));
  const NonZeros back = written_nonzeros(m);
  EXPECT_EQ(back.index, nz.index);
  EXPECT_EQ(back.value, nz.value);
}

TEST(QwenCheckpoint, MissingOrMisshapenTensorsAreNamed) {
  Checkpoint ck;
  ck.config = Config::qwen35_2b(1, 8);
  ck.config.hidden_size = 16;
  try {
    ck.validate();
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("embed_tokens.weight"), std::string::npos) << e.what();
  }
  ck.tensors["embed_tokens.weight"] = torch::zeros({8, 17});
  try {
    ck.validate();
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("[8, 16]"), std::string::npos) << e.what();
  }
}
