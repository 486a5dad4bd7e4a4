// The forward pass against the independent Python reference, and the
// properties the circuit relies on: prefill equals token-by-token decoding,
// the sparse executor equals the dense one, snapshots restore exactly.
#include "harness.h"
#include "model_host/qwen/model.h"

using namespace qgpu::qwen;
using namespace qwen_test;

namespace {

constexpr double kTolerance = 1e-4;

// Checks both executors token by token against the reference (logits and
// every GDN state), then that batched prefill and the sparse executor give
// bit-identical logits and states to dense token-by-token decoding.
// The checkpoint is made in `dir`.
void verify(const std::string& dir, const std::string& flags, const std::vector<int64_t>& tokens) {
  const std::string name = std::filesystem::path(dir).parent_path().filename().string();
  Expected e = make_reference(dir, flags, tokens);
  Checkpoint ck = Checkpoint::load(dir);
  const Config& c = ck.config;
  std::vector<torch::Tensor> step_logits;
  State dense_state;
  for (Exec exec : {Exec::Dense, Exec::Sparse}) {
    SCOPED_TRACE(exec == Exec::Dense ? "dense" : "sparse");
    Model model(ck, exec);
    State s = model.new_state();
    double worst_logit = 0, worst_state = 0;
    for (size_t t = 0; t < tokens.size(); ++t) {
      torch::Tensor logits = model.step(s, tokens[t]);
      worst_logit = std::max(worst_logit, max_abs_diff(logits, e.logits[t]));
      int k = 0;
      for (int l = 0; l < c.num_hidden_layers; ++l)
        if (!c.is_full_attention(l))
          worst_state = std::max(worst_state, max_abs_diff(model.recurrent_state(s, l), e.states[t][k++]));
      if (exec == Exec::Dense) step_logits.push_back(logits);
      else EXPECT_TRUE(torch::equal(logits, step_logits[t])) << "sparse != dense at token " << t;
    }
    EXPECT_LE(worst_logit, kTolerance);
    EXPECT_LE(worst_state, kTolerance);
    std::cout << "[ " << name << (exec == Exec::Dense ? " dense" : " sparse") << " ] max |logit - ref| "
              << worst_logit << ", max |state - ref| " << worst_state << "\n";

    // Batched prefill: the first tokens as one batch, the rest as another.
    State p = model.new_state();
    const size_t split = tokens.size() / 2 + 1;
    Outputs a = model.forward(p, {tokens.begin(), tokens.begin() + split});
    Outputs b = model.forward(p, {tokens.begin() + split, tokens.end()});
    torch::Tensor prefill = torch::cat({a.logits, b.logits});
    EXPECT_TRUE(torch::equal(prefill, torch::stack(step_logits))) << "prefill != token by token";
    for (int l = 0; l < c.num_hidden_layers; ++l)
      if (!c.is_full_attention(l)) {
        EXPECT_TRUE(torch::equal(model.recurrent_state(p, l), model.recurrent_state(s, l))) << "layer " << l;
        if (exec == Exec::Dense) dense_state = s;
        else EXPECT_TRUE(torch::equal(model.recurrent_state(s, l), dense_state.recurrent[l])) << "layer " << l;
      }
  }
}

}  // namespace

TEST(QwenModel, TinyFp32TextTied) {
  Scratch tmp("tiny_f32");
  verify(tmp / "ck", "--size tiny --layers 4 --vocab 96 --seed 1", {1, 5, 9, 2, 7, 3, 3, 80, 41, 0, 95, 12});
}

TEST(QwenModel, TinyBf16VisionLanguageShardedUntied) {
  Scratch tmp("tiny_bf16_vl");
  verify(tmp / "ck", "--size tiny --layers 5 --vocab 70 --seed 2 --dtype bf16 --layout vl --shards 3 --untied",
         {4, 8, 15, 16, 23, 42, 69, 0});
}

TEST(QwenModel, TinyFp16Text) {
  Scratch tmp("tiny_f16");
  verify(tmp / "ck", "--size tiny --layers 4 --vocab 50 --seed 3 --dtype f16", {7, 7, 7, 1, 49, 3});
}

TEST(QwenModel, Qwen35_2bWidthsThreeLayers) {
  Scratch tmp("2b");
  verify(tmp / "ck", "--size 2b --layers 3 --vocab 64 --seed 4 --dtype bf16", {3, 14, 15, 9, 26});
}

TEST(QwenModel, SparseCircuitLikeTiny) {
  Scratch tmp("sparse_tiny");
  verify(tmp / "ck", "--size tiny --layers 4 --vocab 200 --seed 5 --sparse", {0, 7, 14, 21, 3, 28, 35, 1});
}

TEST(QwenModel, SparseCircuitLike2bWidths) {
  Scratch tmp("sparse_2b");
  const std::string dir = tmp / "ck";
  verify(dir, "--size 2b --layers 3 --vocab 300 --seed 6 --dtype bf16 --sparse", {0, 7, 14, 21, 5, 28});
  // The sparse executor really skips: reference.py keeps one live GDN head in
  // each of the 2 linear-attention layers, four MLP units per layer, and every
  // 7th vocabulary row.
  Model::Stats st = Model(Checkpoint::load(dir), Exec::Sparse).stats();
  EXPECT_EQ(st.active_heads, 2);
  EXPECT_EQ(st.total_heads, 32);
  EXPECT_EQ(st.active_units, 12);
  EXPECT_EQ(st.active_vocab, 43);
  EXPECT_LT(static_cast<double>(st.stored) / static_cast<double>(st.weights), 0.01);
}

TEST(QwenModel, SnapshotRestoresExactly) {
  Scratch tmp("snapshot");
  const std::string dir = tmp / "ck";
  python(QWEN_REFERENCE_PY, "make " + dir + " --size tiny --layers 4 --vocab 40 --seed 7");
  for (Exec exec : {Exec::Dense, Exec::Sparse}) {
    Model model(Checkpoint::load(dir), exec);
    State s = model.new_state();
    model.forward(s, {1, 2, 3, 4, 5});
    State snapshot = s;
    torch::Tensor first = model.forward(s, {6, 7, 8}).logits;
    EXPECT_FALSE(torch::equal(model.recurrent_state(s, 0), model.recurrent_state(snapshot, 0)))
        << "the snapshot must not share storage with the live state";
    s = snapshot;
    EXPECT_EQ(s.position, 5);
    EXPECT_TRUE(torch::equal(model.forward(s, {6, 7, 8}).logits, first));
  }
}

TEST(QwenModel, ResidualCapture) {
  Scratch tmp("capture");
  const std::string dir = tmp / "ck";
  python(QWEN_REFERENCE_PY, "make " + dir + " --size tiny --layers 4 --vocab 40 --seed 8");
  Checkpoint ck = Checkpoint::load(dir);
  Model model(ck);
  State s = model.new_state();
  const std::vector<int64_t> tokens = {3, 1, 4};
  Outputs out = model.forward(s, tokens, {0, 2, 4});
  ASSERT_EQ(out.residuals.size(), 3u);
  // Layer 0's input is the embedding.
  EXPECT_TRUE(torch::equal(out.residuals[0], ck.tensors["embed_tokens.weight"].index_select(0, torch::tensor(tokens))));
  // The final residual gives the logits through the final norm and the tied head.
  torch::Tensor x = out.residuals[2];
  torch::Tensor n = x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6) * (1 + ck.tensors["norm.weight"]);
  EXPECT_LE(max_abs_diff(n.matmul(ck.tensors["embed_tokens.weight"].t()), out.logits), 1e-4);
  EXPECT_EQ(out.residuals[1].sizes(), (std::vector<int64_t>{3, 64}));
  EXPECT_THROW(model.forward(s, {1}, {5}), std::out_of_range);
  EXPECT_THROW(model.forward(s, {40}), std::out_of_range);
  EXPECT_THROW(model.recurrent_state(s, 3), std::invalid_argument);  // layer 3 is full attention
}
