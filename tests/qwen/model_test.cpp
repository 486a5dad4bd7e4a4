// The forward pass against the independent Python reference, and the
// properties the circuit relies on: prefill equals token-by-token decoding,
// the sparse executor equals the dense one, snapshots restore exactly.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include "harness.h"
#include "model_host/qwen/model.h"

#include <cmath>
#include <cstring>
#include <random>

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

// A linear-attention layer with no live value head (its in_proj_qkv zero:
// every key and value channel dead) writes nothing on any token; the sparse
// executor skips its mixer, norm and residual addition, and gives the dense
// executor's logits and GDN states bit for bit, step by step and in prefill.
TEST(QwenModel, SparseSkipsASilentMixer) {
  Scratch tmp("sparse_silent");
  const std::string dir = tmp / "ck";
  python(QWEN_REFERENCE_PY, "make " + dir + " --size 2b --layers 3 --vocab 300 --seed 8 --sparse");
  Checkpoint ck = Checkpoint::load(dir);
  torch::Tensor& qkv = ck.tensors.at("layers.0.linear_attn.in_proj_qkv.weight");
  qkv = torch::zeros_like(qkv);
  Model dense(ck, Exec::Dense), sparse(ck, Exec::Sparse);
  EXPECT_EQ(sparse.stats().active_heads, 1);  // the other linear-attention layer's
  const std::vector<int64_t> tokens = {0, 7, 14, 21, 5, 28, 2, 7};
  State sd = dense.new_state(), ss = sparse.new_state(), sp = sparse.new_state();
  const torch::Tensor prefill = sparse.forward(sp, tokens).logits;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const torch::Tensor ld = dense.step(sd, tokens[t]);
    EXPECT_TRUE(torch::equal(ld, sparse.step(ss, tokens[t]))) << "token " << t;
    EXPECT_TRUE(torch::equal(ld, prefill[static_cast<int64_t>(t)])) << "token " << t;
  }
  for (int l = 0; l < ck.config.num_hidden_layers; ++l) {
    if (ck.config.is_full_attention(l)) continue;
    EXPECT_TRUE(torch::equal(dense.recurrent_state(sd, l), sparse.recurrent_state(ss, l))) << "layer " << l;
    EXPECT_TRUE(torch::equal(dense.recurrent_state(sd, l), sparse.recurrent_state(sp, l))) << "layer " << l;
  }
}

// A compact checkpoint loaded with sparse storage holds its large matrices as
// sparse tensors, and gives the same model as dense storage: the same
// entries, the same statistics, bit-identical logits with either executor.
TEST(QwenModel, SparseStorageGivesTheSameModel) {
  Scratch tmp("sparse_storage");
  const std::string dir = tmp / "ck", compact = tmp / "compact";
  python(QWEN_REFERENCE_PY, "make " + dir + " --size 2b --layers 2 --vocab 300 --seed 9 --sparse");
  Checkpoint::load(dir).save_compact(compact);
  const Checkpoint dense_ck = Checkpoint::load(compact), sparse_ck = Checkpoint::load(compact, Storage::Sparse);
  int sparse_tensors = 0;
  for (const auto& [name, t] : dense_ck.tensors) {
    SCOPED_TRACE(name);
    const torch::Tensor& s = sparse_ck.tensors.at(name);
    EXPECT_FALSE(t.is_sparse());
    if (s.is_sparse()) EXPECT_TRUE(s.dim() == 2 && s.numel() >= kSparseMinElements);
    sparse_tensors += s.is_sparse();
    EXPECT_EQ(s.sizes(), t.sizes());
    const NonZeros a = written_nonzeros(t), b = written_nonzeros(s);
    EXPECT_EQ(a.index, b.index);
    EXPECT_EQ(a.value, b.value);
    EXPECT_TRUE(torch::equal(dense(s), t));
  }
  EXPECT_GE(sparse_tensors, 10);  // every layer's MLP and projections, the embedding
  const std::vector<int64_t> tokens = {0, 7, 14, 21, 5, 28, 2};
  for (Exec exec : {Exec::Dense, Exec::Sparse}) {
    SCOPED_TRACE(exec == Exec::Dense ? "dense" : "sparse");
    Model a(dense_ck, exec), b(sparse_ck, exec);
    EXPECT_EQ(a.stats().stored, b.stats().stored);
    EXPECT_EQ(a.stats().active_units, b.stats().active_units);
    State sa = a.new_state(), sb = b.new_state();
    const torch::Tensor logits = a.forward(sa, tokens).logits;
    EXPECT_TRUE(torch::equal(logits, b.forward(sb, tokens).logits));
    // Built from a checkpoint it consumes (as the model backend does): each
    // tensor is released once read, and the model is the same.
    Checkpoint consumed = sparse_ck;
    Model c(std::move(consumed), exec);
    EXPECT_TRUE(consumed.tensors.empty());
    EXPECT_EQ(c.stats().stored, b.stats().stored);
    State sc = c.new_state();
    EXPECT_TRUE(torch::equal(c.forward(sc, tokens).logits, logits));
  }
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

// round_bf16 against torch's own fp32 -> bf16 conversion (round to nearest,
// ties to even) over every exponent, ties, signed zeros, infinities and NaN.
TEST(QwenModel, RoundBf16AsTorchConverts) {
  std::vector<uint32_t> patterns = {0u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f7fffffu,
                                    0x00000001u, 0x00008000u, 0x00018000u, 0x3f808000u, 0x3f818000u, 0x3f80ffffu};
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = rng();
    if (i % 4 == 0) u = (u & 0xffff0000u) | 0x8000u;  // exactly halfway
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) continue;  // NaN payloads: torch keeps its own
    patterns.push_back(u);
  }
  torch::Tensor x = torch::empty({static_cast<int64_t>(patterns.size())}, torch::kFloat32);
  std::memcpy(x.data_ptr<float>(), patterns.data(), patterns.size() * 4);
  torch::Tensor expected = x.to(torch::kBFloat16).to(torch::kFloat32);
  for (size_t i = 0; i < patterns.size(); ++i) {
    const float got = round_bf16(x[i].item<float>()), want = expected[i].item<float>();
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << patterns[i];
      continue;
    }
    uint32_t g, w;
    std::memcpy(&g, &got, 4);
    std::memcpy(&w, &want, 4);
    ASSERT_EQ(g, w) << "input bits " << std::hex << patterns[i];
  }
}

// Bf16 activations: every residual the layers hand on is a bf16 value, the
// sparse executor still equals the dense one and prefill equals decoding,
// and the logits stay near the fp32 ones (within 15% of the largest: bf16 keeps
// 8 bits of mantissa through 4 random layers) without being the same.
TEST(QwenModel, Bf16ActivationsAreRoundedAndExecutorsAgree) {
  Scratch tmp("bf16_act");
  const std::string dir = tmp / "ck";
  python(QWEN_REFERENCE_PY, "make " + dir + " --size tiny --layers 4 --vocab 60 --seed 9");
  Checkpoint ck = Checkpoint::load(dir);
  const std::vector<int64_t> tokens = {5, 3, 59, 0, 17, 17, 42, 8};
  const int L = static_cast<int>(ck.config.num_hidden_layers);
  std::vector<int> layers;
  for (int l = 0; l <= L; ++l) layers.push_back(l);
  Model fp32(ck, Exec::Dense);
  State sf = fp32.new_state();
  const torch::Tensor reference = fp32.forward(sf, tokens).logits;
  torch::Tensor dense_logits;
  for (Exec exec : {Exec::Dense, Exec::Sparse}) {
    Model model(ck, exec, Activations::Bf16);
    State s = model.new_state();
    Outputs out = model.forward(s, tokens, layers);
    for (int l = 0; l <= L; ++l)
      EXPECT_TRUE(torch::equal(out.residuals[l], out.residuals[l].to(torch::kBFloat16).to(torch::kFloat32)))
          << "residual entering layer " << l << " is not bf16";
    State step = model.new_state();
    std::vector<torch::Tensor> stepped;
    for (int64_t t : tokens) stepped.push_back(model.step(step, t));
    EXPECT_TRUE(torch::equal(torch::stack(stepped), out.logits)) << "prefill != token by token";
    if (exec == Exec::Dense) dense_logits = out.logits;
    else EXPECT_TRUE(torch::equal(out.logits, dense_logits)) << "sparse != dense";
    EXPECT_FALSE(torch::equal(out.logits, reference));
    EXPECT_LE(max_abs_diff(out.logits, reference), 0.15 * reference.abs().max().item<double>());
  }
}
