#include "model_host/qwen/safetensors.h"

#include <nlohmann/json.hpp>

#include "model_host/qwen/checkpoint.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace qgpu::qwen::safetensors {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("safetensors " + path + ": " + what);
}

torch::ScalarType dtype_from_name(const std::string& path, const std::string& tensor, const std::string& name) {
  if (name == "F32") return torch::kFloat32;
  if (name == "F16") return torch::kFloat16;
  if (name == "BF16") return torch::kBFloat16;
  fail(path, "tensor \"" + tensor + "\" has dtype " + name + " (expected F32, F16 or BF16)");
}

const char* dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return "F32";
    case torch::kFloat16: return "F16";
    case torch::kBFloat16: return "BF16";
    default: throw std::invalid_argument("safetensors: cannot write dtype " + std::string(c10::toString(t)));
  }
}

// A read-only memory map that unmaps itself.
struct Mapping {
  void* data = MAP_FAILED;
  size_t size = 0;
  Mapping(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    ::fstat(fd, &st);
    size = static_cast<size_t>(st.st_size);
    if (size > 0) data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (size > 0 && data == MAP_FAILED) fail(path, std::string("cannot map: ") + std::strerror(errno));
  }
  ~Mapping() {
    if (data != MAP_FAILED) ::munmap(data, size);
  }
  const uint8_t* bytes() const { return static_cast<const uint8_t*>(data); }
};

}  // namespace

void read(const std::string& path, const std::function<void(const std::string&, torch::Tensor)>& visit) {
  read(path, [&](const std::string& name, torch::Tensor t, torch::ScalarType) { visit(name, std::move(t)); });
}

void read(const std::string& path,
          const std::function<void(const std::string&, torch::Tensor, torch::ScalarType stored)>& visit) {
  Mapping map(path);
  if (map.size < 8) fail(path, "file is shorter than its 8-byte header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, map.bytes(), 8);
  if (header_len > map.size - 8) fail(path, "header length " + std::to_string(header_len) + " exceeds the file");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(map.bytes() + 8, map.bytes() + 8 + header_len);
  } catch (const std::exception& e) {
    fail(path, std::string("header is not JSON: ") + e.what());
  }
  const uint8_t* data = map.bytes() + 8 + header_len;
  const size_t data_size = map.size - 8 - header_len;
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    auto dtype = dtype_from_name(path, name, info.at("dtype").get<std::string>());
    auto shape = info.at("shape").get<std::vector<int64_t>>();
    auto offsets = info.at("data_offsets").get<std::vector<uint64_t>>();
    int64_t numel = 1;
    for (auto d : shape) numel *= d;
    const uint64_t expected = static_cast<uint64_t>(numel) * c10::elementSize(dtype);
    if (offsets.size() != 2 || offsets[1] < offsets[0] || offsets[1] > data_size ||
        offsets[1] - offsets[0] != expected)
      fail(path, "tensor \"" + name + "\" has data_offsets that do not match its shape and dtype");
    auto view = torch::from_blob(const_cast<uint8_t*>(data + offsets[0]), shape,
                                 torch::TensorOptions().dtype(dtype));
    visit(name, dtype == torch::kFloat32 ? view.clone() : view.to(torch::kFloat32), dtype);
  }
}

// Writes [p, p + bytes), pages never written (written_pages) as zeros without
// reading them: a compiled GPU's lazily zero-filled tensors span over 20 GB,
// of which reading every page would make every page resident.
static void write_data(std::ofstream& out, const char* p, size_t bytes) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  static const std::vector<char> zeros(page, 0);
  const std::vector<bool> written = written_pages(p, bytes);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + bytes, first = begin / page * page;
  for (size_t i = 0; i < written.size(); ++i) {
    const uintptr_t lo = std::max(begin, first + i * page), hi = std::min(end, first + (i + 1) * page);
    out.write(written[i] ? reinterpret_cast<const char*>(lo) : zeros.data(), static_cast<std::streamsize>(hi - lo));
  }
}

int64_t element_bytes(torch::ScalarType dtype) {
  dtype_name(dtype);  // refuses a dtype the format does not store
  return static_cast<int64_t>(c10::elementSize(dtype));
}

void write(const std::string& path, const std::map<std::string, torch::Tensor>& tensors, torch::ScalarType dtype) {
  write(path, tensors, dtype, {});
}

void write(const std::string& path, const std::map<std::string, torch::Tensor>& tensors, torch::ScalarType dtype,
           const std::map<std::string, torch::ScalarType>& stored) {
  std::map<std::string, std::vector<torch::Tensor>> parts;
  for (const auto& [name, t] : tensors) parts[name] = {t};
  write_parts(path, parts, dtype, stored);
}

namespace {

// Rows [first, first + count) of a sparse COO matrix, dense fp32.
torch::Tensor sparse_rows(const torch::Tensor& coalesced, const int64_t* rows, int64_t nnz, int64_t& cursor,
                          int64_t first, int64_t count) {
  torch::Tensor out = torch::zeros({count, coalesced.size(1)}, torch::kFloat32);
  const torch::Tensor idx = coalesced.indices();
  const torch::Tensor val = coalesced.values();
  const int64_t* cols = idx.data_ptr<int64_t>() + nnz;
  const float* v = val.data_ptr<float>();
  float* o = out.data_ptr<float>();
  const int64_t H = coalesced.size(1);
  for (; cursor < nnz && rows[cursor] < first + count; ++cursor) o[(rows[cursor] - first) * H + cols[cursor]] = v[cursor];
  return out;
}

// Writes one part of a tensor as `d`, in blocks of rows.
void write_part(std::ofstream& out, const torch::Tensor& t, torch::ScalarType d) {
  if (t.numel() == 0) return;
  if (t.is_sparse()) {
    if (t.dim() != 2) throw std::invalid_argument("safetensors: a sparse tensor must be a matrix");
    const torch::Tensor c = t.coalesce();
    const torch::Tensor c32 = torch::sparse_coo_tensor(c.indices().to(torch::kInt64).contiguous(),
                                                       c.values().to(torch::kFloat32).contiguous(), c.sizes())
                                  ._coalesced_(true);
    const int64_t nnz = c32._nnz(), rows = c32.size(0), cols = c32.size(1);
    const int64_t* r = c32.indices().data_ptr<int64_t>();
    const int64_t block = std::max<int64_t>(1, (int64_t{16} << 20) / std::max<int64_t>(1, cols * 4));
    int64_t cursor = 0;
    for (int64_t first = 0; first < rows; first += block) {
      const int64_t n = std::min(block, rows - first);
      const torch::Tensor chunk = sparse_rows(c32, r, nnz, cursor, first, n).to(d).contiguous();
      out.write(static_cast<const char*>(chunk.data_ptr()), static_cast<std::streamsize>(chunk.numel() * chunk.element_size()));
    }
    return;
  }
  const torch::Tensor src = t.detach().to(torch::kCPU).contiguous();
  if (src.scalar_type() == d) {  // as it is: never-written pages as zeros, unread
    write_data(out, static_cast<const char*>(src.data_ptr()), static_cast<size_t>(src.numel() * src.element_size()));
    return;
  }
  const int64_t rows = src.dim() == 0 ? 1 : src.size(0);
  const torch::Tensor flat = src.reshape({rows, -1});
  const int64_t row_bytes = flat.size(1) * flat.element_size();
  const int64_t block = std::max<int64_t>(1, (int64_t{16} << 20) / std::max<int64_t>(1, row_bytes));
  for (int64_t first = 0; first < rows; first += block) {
    const int64_t n = std::min(block, rows - first);
    const torch::Tensor part = flat.narrow(0, first, n);
    const std::vector<bool> written = written_pages(part.data_ptr(), static_cast<size_t>(n * row_bytes));
    if (std::none_of(written.begin(), written.end(), [](bool w) { return w; })) {
      const std::vector<char> zeros(static_cast<size_t>(n * flat.size(1) * c10::elementSize(d)), 0);
      out.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
      continue;
    }
    const torch::Tensor chunk = part.to(d).contiguous();
    out.write(static_cast<const char*>(chunk.data_ptr()), static_cast<std::streamsize>(chunk.numel() * chunk.element_size()));
  }
}

}  // namespace

void write_parts(const std::string& path, const std::map<std::string, std::vector<torch::Tensor>>& tensors,
                 torch::ScalarType dtype, const std::map<std::string, torch::ScalarType>& stored) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::vector<std::pair<const std::vector<torch::Tensor>*, torch::ScalarType>> order;
  uint64_t offset = 0;
  for (const auto& [name, parts] : tensors) {
    if (parts.empty()) fail(path, "tensor \"" + name + "\" has no parts");
    const auto own = stored.find(name);
    const torch::ScalarType d = own == stored.end() ? dtype : own->second;
    std::vector<int64_t> shape = parts[0].sizes().vec();
    for (size_t i = 1; i < parts.size(); ++i) {
      const auto s = parts[i].sizes().vec();
      if (s.empty() || shape.empty() || !std::equal(s.begin() + 1, s.end(), shape.begin() + 1, shape.end()))
        fail(path, "the parts of tensor \"" + name + "\" do not stack");
      shape[0] += s[0];
    }
    int64_t numel = 1;
    for (int64_t x : shape) numel *= x;
    const uint64_t bytes = static_cast<uint64_t>(numel) * static_cast<uint64_t>(element_bytes(d));
    header[name] = {{"dtype", dtype_name(d)}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    order.push_back({&parts, d});
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, "cannot create");
  uint64_t len = text.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [parts, d] : order)
    for (const torch::Tensor& t : *parts) write_part(out, t, d);
  if (!out) fail(path, "write failed");
}

}  // namespace qgpu::qwen::safetensors
