// A bounded fuzz test of the PTX parser: random mutations of real compiler
// output, truncations and random bytes.  The parser must never crash or
// hang, and every rejection must be a ParseError (a std::runtime_error)
// whose message names a line of the input.
#include <algorithm>
#include <chrono>
#include <random>

#include "harness.h"

namespace qgpu::ptx::test {
namespace {

int line_count(const std::string& s) { return 1 + static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

std::string mutate(const std::string& base, std::mt19937& rng) {
  static const std::vector<std::string> tokens = {
      ";", "{", "}", "[", "]", "(", ")", ",", "@", "!", "|", "%r1", "%p1", "%rd1", ".u32", ".b64", ".pred",
      ".global", ".shared", ".param", ".v4", "add.s32", "ld.global.u32", "bra", "$L__BB0_1", "$L__BB0_1:",
      "0x", "0f3F80", "-", "+", "999999999999999999999999", ".reg .b32 %r<", ">", "call.uni", ".entry",
      ".func", "=", "{1, 2", "\"", "/*", "//", "\n", ".section", "_", "%tid.w", ".align 3"};
  std::string s = base;
  auto pos = [&](size_t n) { return n == 0 ? size_t(0) : size_t(rng() % n); };
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    switch (rng() % 7) {
      case 0:  // truncate
        s.resize(pos(s.size() + 1));
        break;
      case 1: {  // delete a span
        size_t a = pos(s.size() + 1), len = 1 + rng() % 40;
        s.erase(a, len);
        break;
      }
      case 2: {  // duplicate a span somewhere else
        size_t a = pos(s.size() + 1), len = 1 + rng() % 80;
        std::string span = s.substr(a, len);
        s.insert(pos(s.size() + 1), span);
        break;
      }
      case 3:  // overwrite a byte with any byte
        if (!s.empty()) s[pos(s.size())] = static_cast<char>(rng() & 0xFF);
        break;
      case 4:  // insert a PTX-ish token
        s.insert(pos(s.size() + 1), " " + tokens[rng() % tokens.size()] + " ");
        break;
      case 5: {  // swap two lines
        std::vector<std::string> lines;
        size_t b = 0;
        for (size_t i = 0; i <= s.size(); ++i)
          if (i == s.size() || s[i] == '\n') {
            lines.push_back(s.substr(b, i - b));
            b = i + 1;
          }
        std::swap(lines[pos(lines.size())], lines[pos(lines.size())]);
        s.clear();
        for (size_t i = 0; i < lines.size(); ++i) s += lines[i] + (i + 1 < lines.size() ? "\n" : "");
        break;
      }
      case 6: {  // replace a digit run with another number
        size_t a = s.find_first_of("0123456789", pos(s.size() + 1));
        if (a != std::string::npos) s.replace(a, 1, std::to_string(rng() % 5000));
        break;
      }
    }
  }
  return s;
}

void expect_clean(const std::string& text, int& accepted, int& rejected) {
  try {
    Module m = parse(text);
    module_info(m);  // layouts of whatever parsed must be computable
    ++accepted;
  } catch (const ParseError& e) {
    ++rejected;
    std::string what = e.what();
    ASSERT_EQ(what.rfind("PTX line ", 0), 0u) << what;
    ASSERT_GE(e.line(), 1) << what;
    ASSERT_LE(e.line(), line_count(text)) << what;
  } catch (const std::exception& e) {
    FAIL() << "non-ParseError exception: " << e.what();
  }
}

TEST(PtxFuzz, MutationsTruncationsAndRandomBytes) {
  const std::vector<std::string> bases = {generated_ptx("e2e.ptx"), generated_ptx("clang_kernels.ptx")};
  std::mt19937 rng(20260301);
  int accepted = 0, rejected = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 2000; ++i) {
    expect_clean(mutate(bases[i % bases.size()], rng), accepted, rejected);
    if (HasFatalFailure()) return;
  }
  for (int i = 0; i < 500; ++i) {  // plain truncation at every kind of position
    const std::string& b = bases[i % bases.size()];
    expect_clean(b.substr(0, rng() % (b.size() + 1)), accepted, rejected);
    if (HasFatalFailure()) return;
  }
  for (int i = 0; i < 500; ++i) {  // random bytes, biased towards PTX characters
    std::string s(rng() % 400, ' ');
    const std::string alphabet = ".%$_;,:{}[]()@!|+-<>=0123456789abcdefgrsuxpLB \n\t/*\"";
    for (char& c : s) c = (rng() % 8) ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng() & 0xFF);
    expect_clean(s, accepted, rejected);
    if (HasFatalFailure()) return;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(accepted, 0);  // some mutations (e.g. a swapped number) are still valid PTX
  EXPECT_LT(secs, 10.0);
  std::printf("fuzz: %d accepted, %d rejected in %.2f s\n", accepted, rejected, secs);
}

}  // namespace
}  // namespace qgpu::ptx::test
