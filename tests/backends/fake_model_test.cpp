// The model backend's own behaviour, on stand-in models that always write
// the same token (no circuit compiled): what the host does with the model's
// output is only argmax, append, stop at END and read memory back, so a model
// that ends at once leaves the kernel's memory as the model's state holds it
// (zero), --check stops at the first word or token that differs, a token outside the
// circuit vocabulary and a trace without END fail with errors naming them,
// and --dump-tokens and the launch statistics describe what was generated.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <gtest/gtest.h>
#include <torch/types.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "model_host/model_cache/build_model.h"
#include "model_host/tokens/vocab.h"
#include "process.h"
#include "temp_files.h"

namespace fs = std::filesystem;
using qgpu::gpu::Kind;
using qgpu::gpu::token_id;
using qgpu::test::run;

namespace {

const std::string kModelHost = QGPU_MODEL_HOST_BIN;
const std::string kCudart = QGPU_CUDART_LIB;
const std::string kDotProduct = std::string(QGPU_SAMPLES_DIR) + "/dot_product";

using qgpu::test::TempDir;

using qgpu::test::slurp;

std::string report(const qgpu::test::Result& r) { return "\nstdout:\n" + r.out + "\nstderr:\n" + r.err; }

// A one-layer model at toy width with the circuit's vocabulary, whose every
// weight is zero but the embeddings: every circuit token embeds to e0 and
// `answer` to 2 e0, so after any circuit token the tied head scores `answer`
// highest.  Its layout puts the global and printf memories in the one GDN
// head, whose state stays zero.
void write_model(const fs::path& dir, int64_t answer) {
  using namespace qgpu;
  const int64_t vocab = gpu::kTokenBase + gpu::circuit_token_count();
  qwen::Checkpoint ck;
  qwen::Config& c = ck.config;
  c = qwen::Config::qwen35_2b(1, vocab);
  c.hidden_size = 16;
  c.intermediate_size = 16;
  c.linear_num_key_heads = c.linear_num_value_heads = 1;
  c.linear_key_head_dim = c.linear_value_head_dim = 128;
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  auto embed = torch::zeros({vocab, H});
  embed.index_put_({torch::indexing::Slice(gpu::kTokenBase, vocab), 0}, 1.0f);
  embed.index_put_({answer, 0}, 2.0f);
  ck.tensors = {
      {"embed_tokens.weight", embed},
      {"norm.weight", torch::zeros({H})},
      {"layers.0.input_layernorm.weight", torch::zeros({H})},
      {"layers.0.post_attention_layernorm.weight", torch::zeros({H})},
      {"layers.0.mlp.gate_proj.weight", torch::zeros({I, H})},
      {"layers.0.mlp.up_proj.weight", torch::zeros({I, H})},
      {"layers.0.mlp.down_proj.weight", torch::zeros({H, I})},
      {"layers.0.linear_attn.in_proj_qkv.weight", torch::zeros({c.linear_conv_dim(), H})},
      {"layers.0.linear_attn.in_proj_z.weight", torch::zeros({c.linear_value_dim(), H})},
      {"layers.0.linear_attn.in_proj_b.weight", torch::zeros({1, H})},
      {"layers.0.linear_attn.in_proj_a.weight", torch::zeros({1, H})},
      {"layers.0.linear_attn.conv1d.weight", torch::zeros({c.linear_conv_dim(), 1, c.linear_conv_kernel_dim})},
      {"layers.0.linear_attn.out_proj.weight", torch::zeros({H, c.linear_value_dim()})},
      {"layers.0.linear_attn.A_log", torch::zeros({1})},
      {"layers.0.linear_attn.dt_bias", torch::zeros({1})},
      {"layers.0.linear_attn.norm.weight", torch::zeros({c.linear_value_head_dim})},
  };
  gpu::Layout layout;
  layout.num_layers = 1;
  layout.vocab_size = vocab;
  for (auto [name, rows] : {std::pair{"global", int(machine::model_params().global_bytes / 4)}, std::pair{"print", 256}}) {
    circuit::MemoryLayout m;
    m.name = name;
    m.rows = rows;
    m.zero_default = true;
    m.group_rows = 128;
    m.groups = rows / m.group_rows;
    m.slices = 1;
    m.heads.assign(size_t(m.groups), {0, 0});
    for (int i = 0; i < 8; ++i) m.parts.push_back({0, 16 * i, 16});
    layout.memories.push_back(m);
  }
  gpu::save_model({std::move(ck), std::move(layout), ""}, dir.string(), gpu::ModelFormat::Compact);
}

// model_host serving the stand-in model that always writes `answer`.
class FakeDaemon {
 public:
  FakeDaemon(int64_t answer, std::vector<std::string> extra) {
    write_model(dir.path / "model", answer);
    endpoint = "ipc://" + (dir.path / "model_host.sock").string();
    std::vector<std::string> argv = {kModelHost, "--endpoint", endpoint, "--log", (dir.path / "log").string(),
                                     "--backend", "model", "--model", (dir.path / "model").string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    pid = qgpu::test::start(argv, {});
    for (int i = 0; i < 200 && !fs::exists(dir.path / "model_host.sock"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~FakeDaemon() {
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
  }
  qgpu::test::Result run_dot_product() const {
    return run({kDotProduct}, {{"LD_PRELOAD", kCudart}, {"QGPU_DAEMON", endpoint}}, 120);
  }
  TempDir dir;
  std::string endpoint;
  pid_t pid = -1;
};

}  // namespace

TEST(FakeModel, MemoryIsWhatTheModelsStateHolds) {
  TempDir t;
  const fs::path dump = t.path / "tokens.txt";
  FakeDaemon d(token_id(Kind::END), {"--dump-tokens", dump.string()});
  auto r = d.run_dot_product();
  // The launch succeeds; the result the host reads back is the model's (zero),
  // not what a correct machine would have computed.
  EXPECT_EQ(r.status, 1) << report(r);
  EXPECT_NE(r.out.find("dot([1,2,3],[4,5,6]) = 0\nFAILED\n"), std::string::npos) << report(r);
  // The copies to the device first, each a line of write records with
  // nothing generated, then the launch.
  const std::string text = slurp(dump);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(text, m, std::regex("(([0-9]+( [0-9]+)*) \\| \n)+([0-9]+( [0-9]+)*) \\| ([0-9]+)\n")))
      << text;
  const std::string launch = text.substr(text.rfind('\n', text.size() - 2) + 1);
  ASSERT_TRUE(std::regex_match(launch, m, std::regex("([0-9]+( [0-9]+)*) \\| ([0-9]+)\n"))) << launch;
  EXPECT_EQ(std::stoll(m[3]), token_id(Kind::END));
  std::istringstream in(m[1].str());
  std::vector<int64_t> prompt;
  for (int64_t id; in >> id;) prompt.push_back(id);
  ASSERT_GE(prompt.size(), 3u);
  EXPECT_EQ(prompt[0], token_id(Kind::NT, 3));
  EXPECT_EQ(prompt[1], token_id(Kind::NC, 1));
  EXPECT_EQ(prompt.back(), token_id(Kind::START));
}

// The stand-in model keeps nothing: the first copy to the device already
// diverges (its words read back as zero from the state).
TEST(FakeModel, CheckStopsAtTheFirstDivergence) {
  FakeDaemon d(token_id(Kind::END), {"--check"});
  auto r = d.run_dot_product();
  EXPECT_EQ(r.status, 1) << report(r);
  EXPECT_NE(r.out.find("unknown error"), std::string::npos) << report(r);
  EXPECT_NE(r.err.find("--check: after its write records the model's global word 0 holds 0x00000000, the copy wrote "
                       "0x00000001"),
            std::string::npos)
      << report(r);
}

TEST(FakeModel, ATokenOutsideTheCircuitVocabularyFailsTheLaunch) {
  FakeDaemon d(7, {});
  auto r = d.run_dot_product();
  EXPECT_EQ(r.status, 1) << report(r);
  EXPECT_NE(r.err.find("the model wrote token id 7, outside the circuit vocabulary, at generated token 0"),
            std::string::npos)
      << report(r);
}

TEST(FakeModel, ATraceWithoutEndTimesOut) {
  FakeDaemon d(token_id(Kind::WARP, 0), {"--max-tokens", "40"});
  auto r = d.run_dot_product();
  EXPECT_EQ(r.status, 1) << report(r);
  EXPECT_NE(r.out.find("the launch timed out and was terminated"), std::string::npos) << report(r);
  EXPECT_NE(r.err.find("ran 40 generated tokens without END (the limit is 40)"), std::string::npos) << report(r);
}
