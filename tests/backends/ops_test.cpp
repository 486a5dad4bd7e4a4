// The op table (ops_table.h, ops_cases.cpp) on every backend but the model:
// each case on ptx-reference (the oracle), then on interpreter,
// interpreter-model and model-trace, whose outcomes must equal the
// reference's bit for bit (error, printf output, the whole global-memory
// image) or be the backend's documented refusal.  The model runs the same
// table in ops_model_test.cpp (label gpu).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "ops_table.h"

namespace qgpu::opstable {
namespace {

const std::vector<std::string> kBackends = {"interpreter", "interpreter-model", "model-trace"};

// Seconds per backend over the whole table, printed at the end.
std::map<std::string, double>& seconds() {
  static std::map<std::string, double> s;
  return s;
}
class PrintTimes : public ::testing::Environment {
 public:
  void TearDown() override {
    for (auto& [name, s] : seconds()) std::printf("backend %-18s %8.3f s over the cases run\n", name.c_str(), s);
  }
};
[[maybe_unused]] ::testing::Environment* const kPrintTimes = ::testing::AddGlobalTestEnvironment(new PrintTimes);

// Every operation of the machine (isa.h), in every space and with every
// atomic function and terminator, is what some case is there for, and that
// case's kernel lowers to it on the interpreter's machine: a new operation
// without a case fails here.
TEST(BackendOps, EveryMachineOpHasACase) {
  std::map<std::string, std::vector<std::string>> claimed;
  for (const Case& c : cases()) {
    if (c.refusals.count("interpreter")) {  // the machine refuses it: it covers nothing
      EXPECT_TRUE(c.covers.empty()) << c.name << " is refused by the interpreter and cannot cover an op";
      continue;
    }
    std::set<std::string> lowered;
    try {
      lowered = lowered_keys(c);
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.name << " does not lower: " << e.what();
      continue;
    }
    for (const std::string& k : c.covers) {
      if (!lowered.count(k)) {
        std::string got;
        for (const std::string& l : lowered) got += " " + l;
        ADD_FAILURE() << c.name << " is there for `" << k << "` but does not lower to it; it lowers to" << got;
      }
      claimed[k].push_back(c.name);
    }
  }
  const std::vector<std::string> keys = op_keys();
  for (const std::string& k : keys) EXPECT_TRUE(claimed.count(k)) << "no case covers the machine's `" << k << "`";
  for (auto& [k, names] : claimed)
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << "cases claim `" << k << "`, not an op key";
  std::printf("%zu machine op keys (%d ops), %zu cases\n", keys.size(), machine::kOpCount, cases().size());
}

// Case names are unique (they name the parameterised tests).
TEST(BackendOps, CaseNamesAreUnique) {
  std::set<std::string> names;
  for (const Case& c : cases()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

class Table : public ::testing::TestWithParam<size_t> {};

TEST_P(Table, EveryBackendAgreesWithTheReference) {
  const Case& c = cases()[GetParam()];
  SCOPED_TRACE(c.name);
  auto ref = backends::make_backend("ptx-reference");
  const Outcome want = run_reference(*ref, c, c.shape, seconds());
  for (const std::string& name : kBackends) {
    auto b = backends::make_backend(name);
    check_backend(*b, c, c.shape, want, seconds());
  }
}

std::string test_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string s;
  for (char ch : cases()[info.param].name) s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(BackendOps, Table, ::testing::Range<size_t>(0, cases().size()), test_name);

// A refusal is the documented one: a case the model's machine refuses (its
// ROM), run on model-trace, fails with the error and words the case names.
TEST(BackendOps, ARefusalIsCheckedNotSkipped) {
  const Case* refused = nullptr;
  for (const Case& c : cases())
    if (c.refusals.count("model-trace") && c.refusals.at("model-trace").error == launch::kNotSupported) {
      refused = &c;
      break;
    }
  ASSERT_NE(refused, nullptr);
  SCOPED_TRACE(refused->name);
  auto b = backends::make_backend("model-trace");
  Outcome o = run_on(*b, *refused, refused->shape);
  const Refusal& want = refused->refusals.at("model-trace");
  EXPECT_EQ(o.error, want.error) << o.message;
  EXPECT_NE(o.message.find(want.words), std::string::npos) << o.message;
}

}  // namespace
}  // namespace qgpu::opstable
