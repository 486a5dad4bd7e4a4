#include "model_host/qwen/checkpoint.h"

#include "model_host/qwen/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

namespace qgpu::qwen {
namespace {

namespace fs = std::filesystem;

constexpr char kSideFile[] = "qgpu-sparse.bin";
constexpr char kMagic[8] = {'Q', 'G', 'P', 'U', 'S', 'P', 'R', '1'};

// HF name -> canonical name; empty for tensors the text model does not use
// (vision tower, multi-token-prediction head).
std::string canonical_name(const std::string& hf) {
  static const std::string vl = "model.language_model.", text = "model.";
  if (hf.rfind(vl, 0) == 0) return hf.substr(vl.size());
  if (hf.rfind("model.visual.", 0) == 0) return {};
  if (hf.rfind(text, 0) == 0) return hf.substr(text.size());
  if (hf == "lm_head.weight") return hf;
  return {};
}

// The safetensors files a checkpoint without a matching side file needs.
std::vector<fs::path> required_safetensors(const fs::path& dir) {
  auto files = safetensors_files(dir);
  if (files.empty())
    throw std::runtime_error("checkpoint: no safetensors files in " + dir.string() + ", and no " + kSideFile +
                             " that matches its config.json");
  return files;
}

struct Stamp {
  std::string name;
  uint64_t size;
  int64_t mtime_ns;
  bool operator==(const Stamp&) const = default;
};

std::vector<Stamp> stamps(const std::vector<fs::path>& files) {
  std::vector<Stamp> s;
  for (const auto& f : files)
    s.push_back({f.filename().string(), static_cast<uint64_t>(fs::file_size(f)),
                 std::chrono::duration_cast<std::chrono::nanoseconds>(fs::last_write_time(f).time_since_epoch()).count()});
  return s;
}

// Little-endian binary I/O for the side file.
struct Writer {
  std::ofstream out;
  void u64(uint64_t v) { out.write(reinterpret_cast<const char*>(&v), 8); }
  void u32(uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); }
  void str(const std::string& s) { u64(s.size()); out.write(s.data(), static_cast<std::streamsize>(s.size())); }
  void raw(const void* p, size_t n) { out.write(static_cast<const char*>(p), static_cast<std::streamsize>(n)); }
};

struct Reader {
  std::ifstream in;
  std::string path;
  void raw(void* p, size_t n) {
    in.read(static_cast<char*>(p), static_cast<std::streamsize>(n));
    if (!in) throw std::runtime_error("checkpoint: " + path + " is truncated");
  }
  uint64_t u64() { uint64_t v; raw(&v, 8); return v; }
  uint32_t u32() { uint32_t v; raw(&v, 4); return v; }
  std::string str() { std::string s(u64(), '\0'); raw(s.data(), s.size()); return s; }
};

void write_side_file(const fs::path& dir, const std::string& config_text, const TensorMap& tensors) {
  Writer w{std::ofstream(dir / kSideFile, std::ios::binary | std::ios::trunc)};
  if (!w.out) throw std::runtime_error("checkpoint: cannot create " + (dir / kSideFile).string());
  w.raw(kMagic, 8);
  w.str(config_text);
  auto st = stamps(safetensors_files(dir));
  w.u64(st.size());
  for (const auto& s : st) { w.str(s.name); w.u64(s.size); w.u64(static_cast<uint64_t>(s.mtime_ns)); }
  w.u64(tensors.size());
  for (const auto& [name, t] : tensors) {
    // The non-zero entries (as nonzero() counts them: -0 is zero), read only
    // from pages that were ever written: reading a never-written page of a
    // lazy_zeros tensor would make it resident, and a compiled GPU's tensors
    // span over 20 GB of which a few hundred MB are written.
    const NonZeros nz = written_nonzeros(t);
    const std::vector<int64_t>& idx = nz.index;
    const std::vector<float>& val = nz.value;
    w.str(name);
    w.u32(static_cast<uint32_t>(t.dim()));
    for (auto d : t.sizes()) w.u64(static_cast<uint64_t>(d));
    w.u64(static_cast<uint64_t>(idx.size()));
    w.raw(idx.data(), idx.size() * 8);
    w.raw(val.data(), val.size() * 4);
  }
  if (!w.out) throw std::runtime_error("checkpoint: writing " + (dir / kSideFile).string() + " failed");
}

// The (row, column) index tensor [2, n] of a coalesced sparse COO matrix of
// `cols` columns, from n strictly increasing flat row-major indices that
// next(buffer, count) delivers in order, at most kChunk at a time.  Written
// in one pass with no temporary of n entries: fresh pages are costly here
// (each is a fault), and the indices alone would be 8 bytes per weight.
template <class Next>
torch::Tensor coo_indices(int64_t n, int64_t cols, Next&& next) {
  constexpr int64_t kChunk = int64_t{1} << 14;
  torch::Tensor rc = torch::empty({2, n}, torch::kInt64);
  int64_t* r = rc.data_ptr<int64_t>();
  std::vector<int64_t> chunk(static_cast<size_t>(std::min(kChunk, n)));
  int64_t* buffer = chunk.data();
  for (int64_t at = 0; at < n;) {
    const int64_t k = std::min(kChunk, n - at);
    next(buffer, k);
    for (int64_t i = 0; i < k; ++i) {
      r[at + i] = buffer[i] / cols;
      r[n + at + i] = buffer[i] % cols;
    }
    at += k;
  }
  return rc;
}

torch::Tensor coo_matrix(int64_t rows, int64_t cols, const torch::Tensor& rc, const torch::Tensor& values) {
  return torch::sparse_coo_tensor(rc, values, {rows, cols}, torch::TensorOptions().dtype(torch::kFloat32))._coalesced_(true);
}

// Reads the side file if it matches config.json and the safetensors files.
std::optional<TensorMap> read_side_file(const fs::path& dir, const std::string& config_text, Storage storage) {
  fs::path path = dir / kSideFile;
  if (!fs::exists(path)) return std::nullopt;
  Reader r{std::ifstream(path, std::ios::binary), path.string()};
  char magic[8];
  r.raw(magic, 8);
  if (std::memcmp(magic, kMagic, 8) != 0 || r.str() != config_text) return std::nullopt;
  std::vector<Stamp> stored(r.u64());
  for (auto& s : stored) { s.name = r.str(); s.size = r.u64(); s.mtime_ns = static_cast<int64_t>(r.u64()); }
  if (stored != stamps(safetensors_files(dir))) return std::nullopt;
  TensorMap tensors;
  for (uint64_t n = r.u64(); n > 0; --n) {
    std::string name = r.str();
    std::vector<int64_t> shape(r.u32());
    for (auto& d : shape) d = static_cast<int64_t>(r.u64());
    auto nnz = static_cast<int64_t>(r.u64());
    int64_t numel = 1;
    for (auto d : shape) numel *= d;
    auto val = torch::empty({nnz}, torch::kFloat32);
    if (storage == Storage::Sparse && shape.size() == 2 && numel >= kSparseMinElements && 2 * nnz < numel) {
      // The flat indices go straight into the COO index tensor.
      const torch::Tensor rc = coo_indices(nnz, shape[1], [&](int64_t* buffer, int64_t k) { r.raw(buffer, size_t(k) * 8); });
      r.raw(val.data_ptr<float>(), nnz * 4);
      tensors.emplace(std::move(name), coo_matrix(shape[0], shape[1], rc, val));
      continue;
    }
    auto idx = torch::empty({nnz}, torch::kInt64);
    r.raw(idx.data_ptr<int64_t>(), nnz * 8);
    r.raw(val.data_ptr<float>(), nnz * 4);
    auto t = lazy_zeros(shape);
    if (nnz > 0) t.view({-1}).index_put_({idx}, val);
    tensors.emplace(std::move(name), std::move(t));
  }
  return tensors;
}

// Validates `ck`, creates `dir`, removes the files a previous save may have
// left that would shadow this one, and writes config.json; returns its text.
std::string begin_save(const Checkpoint& ck, const fs::path& dir, torch::ScalarType dtype) {
  ck.validate();
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors" || e.path().filename() == "model.safetensors.index.json" ||
        e.path().filename() == kSideFile)
      fs::remove(e.path());
  auto j = ck.config.to_json();
  j["torch_dtype"] = dtype == torch::kBFloat16 ? "bfloat16" : dtype == torch::kFloat16 ? "float16" : "float32";
  std::string config_text = j.dump(2);
  std::ofstream out(dir / "config.json", std::ios::trunc);
  out << config_text;
  if (!out) throw std::runtime_error("checkpoint: cannot write " + (dir / "config.json").string());
  return config_text;
}

}  // namespace

std::string read_text_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

std::vector<fs::path> safetensors_files(const fs::path& dir) {
  std::vector<fs::path> files;
  if (fs::exists(dir / "model.safetensors.index.json")) {
    auto index = nlohmann::json::parse(read_text_file(dir / "model.safetensors.index.json"));
    std::set<std::string> names;
    for (auto& [tensor, file] : index.at("weight_map").items()) names.insert(file.get<std::string>());
    for (const auto& n : names) files.push_back(dir / n);
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") files.push_back(e.path());
    std::sort(files.begin(), files.end());
  }
  return files;
}

namespace {

// Whether [begin, end) lies within private anonymous mappings of this
// process (/proc/self/maps: private, no device or inode, and no name other
// than the heap's or a named anonymous region's).
bool private_anonymous(uintptr_t begin, uintptr_t end) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return false;
  char line[512];
  uintptr_t covered = begin;
  while (covered < end && std::fgets(line, sizeof line, maps)) {
    unsigned long lo = 0, hi = 0, inode = 0;
    char perms[8] = {}, dev[16] = {}, name[256] = {};
    int fields = std::sscanf(line, "%lx-%lx %7s %*s %15s %lu %255s", &lo, &hi, perms, dev, &inode, name);
    if (fields < 5 || hi <= covered) continue;
    if (lo > covered) break;  // a hole
    const bool anonymous = perms[3] == 'p' && inode == 0 && std::strcmp(dev, "00:00") == 0 &&
                           (fields == 5 || std::strcmp(name, "[heap]") == 0 || std::strncmp(name, "[anon:", 6) == 0);
    if (!anonymous) break;
    covered = hi;
  }
  std::fclose(maps);
  return covered >= end;
}

}  // namespace

std::vector<bool> written_pages(const void* data, size_t bytes) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(data) / page;
  const uintptr_t last = (reinterpret_cast<uintptr_t>(data) + bytes + page - 1) / page;
  std::vector<bool> written(last - first, true);
  if (bytes == 0 || !private_anonymous(first * page, last * page)) return written;
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return written;
  constexpr uint64_t kPresentOrSwapped = uint64_t{3} << 62;
  std::vector<uint64_t> entries(std::min<uintptr_t>(last - first, 1 << 16));
  std::vector<bool> found(last - first);
  bool ok = true;
  for (uintptr_t p = first; ok && p < last;) {
    const size_t n = std::min<uintptr_t>(entries.size(), last - p);
    const ssize_t got = ::pread(fd, entries.data(), n * 8, static_cast<off_t>(p * 8));
    ok = got == static_cast<ssize_t>(n * 8);
    for (size_t i = 0; ok && i < n; ++i) found[p - first + i] = (entries[i] & kPresentOrSwapped) != 0;
    p += n;
  }
  ::close(fd);
  if (ok) written = std::move(found);
  return written;
}

NonZeros written_nonzeros(const torch::Tensor& t) {
  if (t.is_sparse()) {
    NonZeros nz;
    const int64_t cols = t.size(1);
    for_each_entry(t, [&](int64_t r, int64_t c, float v) {
      nz.index.push_back(r * cols + c);
      nz.value.push_back(v);
    });
    return nz;
  }
  auto flat = t.detach().to(torch::kFloat32).contiguous().view({-1});
  const float* p = flat.data_ptr<float>();
  const int64_t n = flat.numel();
  const int64_t page_bytes = sysconf(_SC_PAGESIZE), page = page_bytes / int64_t(sizeof(float));
  const int64_t skew = int64_t(reinterpret_cast<uintptr_t>(p) % uintptr_t(page_bytes)) / int64_t(sizeof(float));
  const std::vector<bool> written = written_pages(p, size_t(n) * sizeof(float));
  NonZeros nz;
  for (size_t pg = 0; pg < written.size(); ++pg) {
    if (!written[pg]) continue;
    const int64_t lo = std::max<int64_t>(0, int64_t(pg) * page - skew);
    const int64_t hi = std::min<int64_t>(n, int64_t(pg + 1) * page - skew);
    for (int64_t i = lo; i < hi; ++i)
      if (p[i] != 0.0f) {
        nz.index.push_back(i);
        nz.value.push_back(p[i]);
      }
  }
  return nz;
}

torch::Tensor lazy_zeros(c10::IntArrayRef shape) {
  int64_t numel = 1;
  for (auto d : shape) numel *= d;
  const size_t bytes = std::max<size_t>(1, static_cast<size_t>(numel) * sizeof(float));
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("lazy_zeros: cannot map " + std::to_string(bytes) + " bytes");
  return torch::from_blob(p, shape, [bytes](void* q) { ::munmap(q, bytes); }, torch::kFloat32);
}

torch::Tensor dense(const torch::Tensor& t) {
  if (!t.is_sparse()) return t;
  torch::Tensor d = lazy_zeros(t.sizes());
  const NonZeros nz = written_nonzeros(t);
  if (!nz.index.empty())
    d.view({-1}).index_put_({torch::tensor(nz.index, torch::kInt64)}, torch::tensor(nz.value, torch::kFloat32));
  return d;
}

torch::Tensor sparse_matrix(int64_t rows, int64_t cols, const NonZeros& nz) {
  const auto n = static_cast<int64_t>(nz.index.size());
  const int64_t* next = nz.index.data();
  const torch::Tensor rc = coo_indices(n, cols, [&](int64_t* buffer, int64_t k) {
    std::memcpy(buffer, next, size_t(k) * 8);
    next += k;
  });
  const torch::Tensor values = torch::from_blob(const_cast<float*>(nz.value.data()), {n}, torch::kFloat32).clone();
  return coo_matrix(rows, cols, rc, values);
}

Checkpoint Checkpoint::load(const std::string& dir_name, Storage storage) {
  fs::path dir(dir_name);
  std::string config_text = read_text_file(dir / "config.json");
  Checkpoint ck;
  try {
    ck.config = Config::from_json(nlohmann::json::parse(config_text));
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint: " + (dir / "config.json").string() + ": " + e.what());
  }
  if (auto side = read_side_file(dir, config_text, storage)) {
    ck.tensors = std::move(*side);
  } else {
    for (const auto& file : required_safetensors(dir))
      safetensors::read(file.string(), [&](const std::string& hf, torch::Tensor t) {
        if (auto name = canonical_name(hf); !name.empty()) ck.tensors[name] = std::move(t);
      });
  }
  ck.validate();
  return ck;
}

void Checkpoint::save(const std::string& dir_name, torch::ScalarType dtype) const {
  fs::path dir(dir_name);
  const std::string config_text = begin_save(*this, dir, dtype);
  std::map<std::string, torch::Tensor> hf;
  for (const auto& [name, t] : tensors) hf[name == "lm_head.weight" ? name : "model." + name] = t;
  safetensors::write((dir / "model.safetensors").string(), hf, dtype);
  // The side file holds what the safetensors hold: the values after rounding to `dtype`.
  TensorMap rounded;
  for (const auto& [name, t] : tensors) rounded[name] = t.to(dtype).to(torch::kFloat32);
  write_side_file(dir, config_text, rounded);
}

void Checkpoint::save_compact(const std::string& dir_name) const {
  fs::path dir(dir_name);
  write_side_file(dir, begin_save(*this, dir, torch::kFloat32), tensors);
}

void Checkpoint::validate() const {
  const Config& c = config;
  auto expect = [&](const std::string& name, std::vector<int64_t> shape) {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw std::runtime_error("checkpoint: missing tensor " + name);
    if (it->second.sizes().vec() != shape) {
      std::ostringstream os;
      os << "checkpoint: tensor " << name << " has shape " << it->second.sizes() << ", expected "
         << c10::IntArrayRef(shape);
      throw std::runtime_error(os.str());
    }
  };
  const int64_t H = c.hidden_size;
  expect("embed_tokens.weight", {c.vocab_size, H});
  expect("norm.weight", {H});
  if (!c.tie_word_embeddings) expect("lm_head.weight", {c.vocab_size, H});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    expect(p + "input_layernorm.weight", {H});
    expect(p + "post_attention_layernorm.weight", {H});
    expect(p + "mlp.gate_proj.weight", {c.intermediate_size, H});
    expect(p + "mlp.up_proj.weight", {c.intermediate_size, H});
    expect(p + "mlp.down_proj.weight", {H, c.intermediate_size});
    if (c.is_full_attention(static_cast<int>(l))) {
      const int64_t D = c.head_dim;
      expect(p + "self_attn.q_proj.weight", {c.num_attention_heads * D * 2, H});
      expect(p + "self_attn.k_proj.weight", {c.num_key_value_heads * D, H});
      expect(p + "self_attn.v_proj.weight", {c.num_key_value_heads * D, H});
      expect(p + "self_attn.o_proj.weight", {H, c.num_attention_heads * D});
      expect(p + "self_attn.q_norm.weight", {D});
      expect(p + "self_attn.k_norm.weight", {D});
    } else {
      const std::string a = p + "linear_attn.";
      const int64_t nv = c.linear_num_value_heads;
      expect(a + "in_proj_qkv.weight", {c.linear_conv_dim(), H});
      expect(a + "in_proj_z.weight", {c.linear_value_dim(), H});
      expect(a + "in_proj_b.weight", {nv, H});
      expect(a + "in_proj_a.weight", {nv, H});
      expect(a + "conv1d.weight", {c.linear_conv_dim(), 1, c.linear_conv_kernel_dim});
      expect(a + "out_proj.weight", {H, c.linear_value_dim()});
      expect(a + "A_log", {nv});
      expect(a + "dt_bias", {nv});
      expect(a + "norm.weight", {c.linear_value_head_dim});
    }
  }
}

}  // namespace qgpu::qwen
