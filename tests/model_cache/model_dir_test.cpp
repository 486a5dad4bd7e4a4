// Model directories (model_host/model_cache/build_model.h) and the compact checkpoint
// form they use (qwen::Checkpoint::save_compact): round trips, byte-for-byte
// determinism, files a previous save left behind, the cache location, and
// the errors that name what is wrong.  No circuit is compiled here.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "model_host/model_cache/build_model.h"
#include "model_host/qwen/checkpoint.h"

namespace fs = std::filesystem;
using qgpu::qwen::Checkpoint;
using qgpu::qwen::Config;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "qgpu-model-dir-test-XXXXXX").string();
    path = mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void touch(const fs::path& p, const std::string& text = "x") { std::ofstream(p) << text; }

// A two-layer linear-attention checkpoint at toy sizes, 70% zeros, with
// values that are not exact in bf16 (so a lossy path would show).
Checkpoint tiny_checkpoint() {
  Config c = Config::qwen35_2b(2, 40);
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.linear_num_key_heads = c.linear_num_value_heads = 2;
  c.linear_key_head_dim = c.linear_value_head_dim = 4;
  c.validate();
  torch::manual_seed(7);
  auto sparse = [](std::vector<int64_t> shape) {
    auto v = torch::randn(shape, torch::kFloat32);
    return v * (torch::rand(shape) < 0.3).to(torch::kFloat32);
  };
  const int64_t H = c.hidden_size, I = c.intermediate_size, nv = c.linear_num_value_heads;
  Checkpoint ck;
  ck.config = c;
  ck.tensors["embed_tokens.weight"] = sparse({c.vocab_size, H});
  ck.tensors["norm.weight"] = sparse({H});
  for (int l = 0; l < 2; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".", a = p + "linear_attn.";
    ck.tensors[p + "input_layernorm.weight"] = sparse({H});
    ck.tensors[p + "post_attention_layernorm.weight"] = sparse({H});
    ck.tensors[p + "mlp.gate_proj.weight"] = sparse({I, H});
    ck.tensors[p + "mlp.up_proj.weight"] = sparse({I, H});
    ck.tensors[p + "mlp.down_proj.weight"] = sparse({H, I});
    ck.tensors[a + "in_proj_qkv.weight"] = sparse({c.linear_conv_dim(), H});
    ck.tensors[a + "in_proj_z.weight"] = sparse({c.linear_value_dim(), H});
    ck.tensors[a + "in_proj_b.weight"] = sparse({nv, H});
    ck.tensors[a + "in_proj_a.weight"] = sparse({nv, H});
    ck.tensors[a + "conv1d.weight"] = sparse({c.linear_conv_dim(), 1, c.linear_conv_kernel_dim});
    ck.tensors[a + "out_proj.weight"] = sparse({H, c.linear_value_dim()});
    ck.tensors[a + "A_log"] = sparse({nv});
    ck.tensors[a + "dt_bias"] = sparse({nv});
    ck.tensors[a + "norm.weight"] = sparse({c.linear_value_head_dim});
  }
  ck.validate();
  return ck;
}

void expect_same_tensors(const Checkpoint& a, const Checkpoint& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    ASSERT_TRUE(b.tensors.count(name)) << name;
    EXPECT_TRUE(torch::equal(t, b.tensors.at(name))) << name;
  }
  EXPECT_EQ(a.config.to_json(), b.config.to_json());
}

// Sets an environment variable for one scope (unset when `value` is null).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST(CompactCheckpoint, RoundTripsExactlyWithoutSafetensors) {
  TempDir t;
  const Checkpoint ck = tiny_checkpoint();
  ck.save_compact((t.path / "a").string());
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(t.path / "a")) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"config.json", "qgpu-sparse.bin"}));
  expect_same_tensors(ck, Checkpoint::load((t.path / "a").string()));
}

TEST(CompactCheckpoint, EqualCheckpointsGiveEqualBytes) {
  TempDir t;
  tiny_checkpoint().save_compact((t.path / "a").string());
  tiny_checkpoint().save_compact((t.path / "b").string());
  for (const char* f : {"config.json", "qgpu-sparse.bin"}) {
    const std::string a = slurp(t.path / "a" / f), b = slurp(t.path / "b" / f);
    EXPECT_FALSE(a.empty()) << f;
    EXPECT_TRUE(a == b) << f << " differs between two saves";
  }
}

TEST(CompactCheckpoint, ReplacesAFullSaveAndIsReplacedByOne) {
  TempDir t;
  const std::string d = (t.path / "m").string();
  Checkpoint ck = tiny_checkpoint();
  ck.save(d);
  ASSERT_TRUE(fs::exists(t.path / "m/model.safetensors"));
  // Compact over full: the safetensors go, or they would shadow the new weights.
  ck.tensors["norm.weight"].fill_(0.5f);
  ck.save_compact(d);
  EXPECT_FALSE(fs::exists(t.path / "m/model.safetensors"));
  expect_same_tensors(ck, Checkpoint::load(d));
  // Full over compact: the side file is rewritten with the new stamps.
  ck.tensors["norm.weight"].fill_(0.25f);
  ck.save(d);
  fs::remove(t.path / "m/qgpu-sparse.bin");
  expect_same_tensors(ck, Checkpoint::load(d));
}

TEST(CompactCheckpoint, AStaleSideFileWithoutSafetensorsIsAnError) {
  TempDir t;
  const std::string d = (t.path / "m").string();
  tiny_checkpoint().save_compact(d);
  std::string config = slurp(t.path / "m/config.json");
  config.insert(config.rfind('}'), ",\n  \"note\": 1\n");
  touch(t.path / "m/config.json", config);
  try {
    Checkpoint::load(d);
    FAIL() << "a side file made with another config.json was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no safetensors"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("qgpu-sparse.bin"), std::string::npos) << e.what();
  }
}

TEST(ModelDir, DefaultFollowsTheEnvironment) {
  {
    ScopedEnv m("QGPU_MODEL_DIR", "/models/gpu");
    EXPECT_EQ(qgpu::gpu::default_model_dir(), "/models/gpu");
  }
  ScopedEnv m("QGPU_MODEL_DIR", "");
  std::string xdg, home;
  {
    ScopedEnv x("XDG_CACHE_HOME", "/cache");
    xdg = qgpu::gpu::default_model_dir();
  }
  {
    ScopedEnv x("XDG_CACHE_HOME", nullptr);
    ScopedEnv h("HOME", "/home/u");
    home = qgpu::gpu::default_model_dir();
  }
  std::smatch a, b;
  ASSERT_TRUE(std::regex_match(xdg, a, std::regex("/cache/qgpu/model-([0-9a-f]{16})"))) << xdg;
  ASSERT_TRUE(std::regex_match(home, b, std::regex("/home/u/\\.cache/qgpu/model-([0-9a-f]{16})"))) << home;
  EXPECT_EQ(a[1], b[1]);
}

TEST(ModelDir, CompletenessNeedsEveryFile) {
  using qgpu::gpu::ModelFormat;
  using qgpu::gpu::model_complete;
  TempDir t;
  const std::string d = t.path.string();
  EXPECT_FALSE(model_complete(d, ModelFormat::Compact));
  touch(t.path / "config.json");
  touch(t.path / "qgpu-sparse.bin");
  EXPECT_FALSE(model_complete(d, ModelFormat::Compact));  // the layout is written last
  touch(t.path / "qgpu-gpu.json");
  EXPECT_FALSE(model_complete(d, ModelFormat::Compact));  // a layout that does not parse
  qgpu::gpu::Layout layout;
  layout.circuit = qgpu::gpu::circuit_version();
  touch(t.path / "qgpu-gpu.json", layout.to_json());
  EXPECT_TRUE(model_complete(d, ModelFormat::Compact));
  EXPECT_FALSE(model_complete(d, ModelFormat::Full));
  touch(t.path / "model.safetensors");
  EXPECT_TRUE(model_complete(d, ModelFormat::Full));
  EXPECT_FALSE(model_complete((t.path / "absent").string(), ModelFormat::Compact));
}

// A model compiled by another version of the circuit is stale: not complete
// (build-model and the cache rebuild it), and refused by load_model with both
// versions named, before the checkpoint is read.
TEST(ModelDir, AModelOfAnotherCircuitVersionIsStale) {
  using qgpu::gpu::ModelFormat;
  TempDir t;
  const std::string d = t.path.string();
  touch(t.path / "config.json");
  touch(t.path / "qgpu-sparse.bin");
  qgpu::gpu::Layout layout;
  layout.circuit = "0123456789abcdef";
  ASSERT_NE(layout.circuit, qgpu::gpu::circuit_version());
  touch(t.path / "qgpu-gpu.json", layout.to_json());
  EXPECT_FALSE(qgpu::gpu::model_complete(d, ModelFormat::Compact));
  for (const std::string version : {"0123456789abcdef", ""}) {
    layout.circuit = version;
    touch(t.path / "qgpu-gpu.json", layout.to_json());
    try {
      qgpu::gpu::load_model(d);
      FAIL() << "a model of circuit version '" << version << "' loaded";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(version.empty() ? "unrecorded" : version), std::string::npos) << what;
      EXPECT_NE(what.find(qgpu::gpu::circuit_version()), std::string::npos) << what;
      EXPECT_NE(what.find("--force"), std::string::npos) << what;
    }
  }
}

TEST(ModelDir, LoadNamesWhatIsMissing) {
  TempDir t;
  tiny_checkpoint().save_compact(t.path.string());
  try {
    qgpu::gpu::load_model(t.path.string());
    FAIL() << "a checkpoint without a layout loaded as a model";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("qgpu-gpu.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("qgpu build-model"), std::string::npos) << e.what();
  }
}

TEST(ModelDir, EnsureModelNeverWritesIntoAForeignDirectory) {
  TempDir t;
  touch(t.path / "notes.txt", "mine");
  try {
    qgpu::gpu::ensure_model(t.path.string(), {});
    FAIL() << "ensure_model wrote into a directory holding other files";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("notes.txt"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(t.path / "notes.txt"), "mine");
  EXPECT_FALSE(fs::exists(t.path / "config.json"));
}
