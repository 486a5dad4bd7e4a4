// Device printf: argument layout and host-side formatting of print records.
#include "model_host/machine/printf.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace qgpu::machine {
namespace {

// One conversion of a format string.
struct Conv {
  std::string spec;   // "%-08lld"
  char kind = 0;      // d u x c s p f
  uint32_t size = 0;  // argument bytes
};

// Splits `fmt` into literal text and conversions; calls `lit` and `conv`.
template <class Lit, class Cv>
void scan(std::string_view fmt, Lit lit, Cv conv) {
  for (size_t i = 0; i < fmt.size();) {
    if (fmt[i] != '%') {
      size_t j = fmt.find('%', i);
      if (j == std::string_view::npos) j = fmt.size();
      lit(fmt.substr(i, j - i));
      i = j;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      lit("%");
      i += 2;
      continue;
    }
    size_t j = i + 1;
    while (j < fmt.size() && std::strchr("-+ #0123456789.", fmt[j])) ++j;
    int longs = 0;
    while (j < fmt.size() && std::strchr("hlzjtL", fmt[j])) {
      if (fmt[j] == 'l' || fmt[j] == 'z' || fmt[j] == 'j' || fmt[j] == 't' || fmt[j] == 'L') ++longs;
      ++j;
    }
    if (j >= fmt.size()) throw std::invalid_argument("printf format ends inside a conversion");
    Conv c;
    char k = fmt[j];
    c.spec = std::string(fmt.substr(i, j + 1 - i));
    if (std::strchr("di", k))
      c.kind = 'd';
    else if (std::strchr("uxXo", k))
      c.kind = 'u';
    else if (k == 'c')
      c.kind = 'c';
    else if (k == 's')
      c.kind = 's';
    else if (k == 'p')
      c.kind = 'p';
    else if (std::strchr("feEgGaA", k))
      c.kind = 'f';
    else
      throw std::invalid_argument(std::string("printf conversion %") + k + " is not supported");
    if (c.spec.find('*') != std::string::npos) throw std::invalid_argument("printf `*` width is not supported");
    c.size = (c.kind == 's' || c.kind == 'p' || c.kind == 'f' || longs > 0) ? 8 : 4;
    conv(c);
    i = j + 1;
  }
}

std::string c_string(const launch::GlobalMemory& mem, uint64_t addr) {
  if (addr < mem.base || addr >= mem.base + mem.bytes.size()) return "(null)";
  const char* p = reinterpret_cast<const char*>(mem.bytes.data() + (addr - mem.base));
  size_t max = mem.bytes.size() - (addr - mem.base);
  return std::string(p, strnlen(p, max));
}

}  // namespace

uint32_t printf_arg_bytes(std::string_view fmt) {
  uint32_t off = 0;
  scan(
      fmt, [](std::string_view) {}, [&](const Conv& c) { off = (off + c.size - 1) / c.size * c.size + c.size; });
  return off;
}

uint32_t printf_arg_count(std::string_view fmt) {
  uint32_t n = 0;
  scan(fmt, [](std::string_view) {}, [&](const Conv&) { ++n; });
  return n;
}

std::string format_prints(const std::vector<uint8_t>& ps, const launch::GlobalMemory& mem) {
  std::string out;
  if (ps.size() < 4) return out;
  uint32_t used = 0;
  std::memcpy(&used, ps.data(), 4);
  size_t end = std::min<size_t>(ps.size(), 4 + size_t(used)), at = 4;
  while (at + 8 <= end) {
    uint32_t fmt_addr, n;
    std::memcpy(&fmt_addr, &ps[at], 4);
    std::memcpy(&n, &ps[at + 4], 4);
    if (at + 8 + n > end) break;
    const uint8_t* args = &ps[at + 8];
    if (fmt_addr == kAssertRecord && n == 40) {
      uint32_t w[10];
      std::memcpy(w, args, 40);
      char line[1024];
      std::snprintf(line, sizeof line, "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n",
                    c_string(mem, w[1]).c_str(), w[2], c_string(mem, w[3]).c_str(), w[4], w[5], w[6], w[7], w[8],
                    w[9], c_string(mem, w[0]).c_str());
      out += line;
      at += 8 + n;
      continue;
    }
    std::string fmt = c_string(mem, fmt_addr);
    uint32_t off = 0;
    char buf[512];
    scan(
        fmt, [&](std::string_view s) { out += s; },
        [&](const Conv& c) {
          off = (off + c.size - 1) / c.size * c.size;
          uint64_t v = 0;
          if (off + c.size <= n) std::memcpy(&v, args + off, c.size);
          off += c.size;
          switch (c.kind) {
            case 'd':
              if (c.size == 8)
                std::snprintf(buf, sizeof buf, c.spec.c_str(), (long long)v);
              else
                std::snprintf(buf, sizeof buf, c.spec.c_str(), int32_t(v));
              break;
            case 'u':
              if (c.size == 8)
                std::snprintf(buf, sizeof buf, c.spec.c_str(), (unsigned long long)v);
              else
                std::snprintf(buf, sizeof buf, c.spec.c_str(), uint32_t(v));
              break;
            case 'c': std::snprintf(buf, sizeof buf, c.spec.c_str(), int(uint8_t(v))); break;
            case 's': std::snprintf(buf, sizeof buf, c.spec.c_str(), c_string(mem, v).c_str()); break;
            case 'p': std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v); break;
            case 'f': {
              double d;
              std::memcpy(&d, &v, 8);
              std::snprintf(buf, sizeof buf, c.spec.c_str(), d);
              break;
            }
          }
          out += buf;
        });
    at += 8 + (n + 3) / 4 * 4;
  }
  return out;
}

}  // namespace qgpu::machine
