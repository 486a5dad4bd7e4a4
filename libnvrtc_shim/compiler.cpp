#include "compiler.h"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <clang/AST/Mangle.h>
#include <clang/AST/Stmt.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Frontend/MultiplexConsumer.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <mutex>

extern "C" {
// The NVPTX target's registration entry points (libLLVM exports them; only
// this target is needed, so the generic InitializeAll* are not called).
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace qgpu::nvrtc {
namespace {

// Where the program's pieces live in the virtual file system.
constexpr const char* kSourcePath = "/qgpu-rtc/src/program.cu";
constexpr const char* kHeaderDir = "/qgpu-rtc/include/";
constexpr const char* kBuiltinDir = "/qgpu-rtc/builtin/";
// The built-in headers that stand for the CUDA toolkit's own, searched
// before the program's include paths: a program that copies the toolkit's
// header beside itself and names that directory (matrixMul_nvrtc, whose
// build copies cooperative_groups.h, cooperative_groups/ and CCCL there, as
// NVIDIA's NVRTC needs) gets this compiler's version of it, since the
// toolkit's is written for NVIDIA's front end.
constexpr const char* kToolkitDir = "/qgpu-rtc/toolkit/";
bool is_toolkit_header(const std::string& name) {
  return name == "cooperative_groups.h" || name == "cuda_runtime.h" || name == "cuda_runtime_api.h" ||
         name == "device_launch_parameters.h" || name == "cuda_fp16.h" || name == "cuda_bf16.h" ||
         name == "mma.h";
}
constexpr const char* kRuntimeHeader = "qgpu_rtc_runtime.h";
// The host function whose body holds the name expressions (see below).
constexpr const char* kNameExprFunction = "__qgpu_rtc_name_expressions";

void init_nvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

// Paths in the virtual file system are shown as the names the user gave.
std::string display_name(llvm::StringRef path) {
  for (llvm::StringRef dir : {kHeaderDir, kBuiltinDir})
    if (path.starts_with(dir)) return path.drop_front(dir.size()).str();
  return path.str();
}

// Writes each diagnostic to the program log as "file:line:col: level: text",
// followed by the source line and a caret under the column.
class LogConsumer : public clang::DiagnosticConsumer {
 public:
  explicit LogConsumer(std::string& log) : log_(log) {}

  void HandleDiagnostic(clang::DiagnosticsEngine::Level level,
                        const clang::Diagnostic& info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);  // keeps the error count
    llvm::SmallString<256> text;
    info.FormatDiagnostic(text);
    std::string where, line;
    unsigned column = 0;
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      const clang::SourceManager& sm = info.getSourceManager();
      clang::SourceLocation loc = sm.getFileLoc(info.getLocation());
      clang::PresumedLoc p = sm.getPresumedLoc(loc);
      if (p.isValid()) {
        column = p.getColumn();
        where = display_name(p.getFilename()) + ":" + std::to_string(p.getLine()) + ":" +
                std::to_string(column) + ": ";
        bool invalid = false;
        llvm::StringRef buffer = sm.getBufferData(sm.getFileID(loc), &invalid);
        if (!invalid) {
          size_t offset = sm.getFileOffset(loc);
          size_t newline = offset ? buffer.rfind('\n', offset - 1) : llvm::StringRef::npos;
          size_t begin = newline == llvm::StringRef::npos ? 0 : newline + 1;
          size_t end = buffer.find('\n', offset);
          line = buffer.substr(begin, end == llvm::StringRef::npos ? end : end - begin).str();
        }
      }
    }
    log_ += where + level_name(level) + ": " + text.str().str() + "\n";
    if (!line.empty() && column > 0) {
      std::string caret;
      for (size_t i = 0; i + 1 < column && i < line.size(); ++i)
        caret += line[i] == '\t' ? '\t' : ' ';
      log_ += line + "\n" + caret + "^\n";
    }
  }

 private:
  static const char* level_name(clang::DiagnosticsEngine::Level level) {
    switch (level) {
      case clang::DiagnosticsEngine::Note: return "note";
      case clang::DiagnosticsEngine::Remark: return "remark";
      case clang::DiagnosticsEngine::Warning: return "warning";
      case clang::DiagnosticsEngine::Error: return "error";
      case clang::DiagnosticsEngine::Fatal: return "fatal error";
      case clang::DiagnosticsEngine::Ignored: break;
    }
    return "diagnostic";
  }

  std::string& log_;
};

// Name expressions are compiled as statements "(void)(expr);" in a host
// function appended to the program: taking a kernel template's address from
// host code makes Clang instantiate it and emit it for the device, as a
// launch from host code would.  After parsing, each statement's referenced
// declaration is mangled as the device code names it.
class NameExprConsumer : public clang::ASTConsumer {
 public:
  NameExprConsumer(const std::vector<std::string>& exprs, std::map<std::string, std::string>& out,
                   std::string& log)
      : exprs_(exprs), out_(out), log_(log) {}

  void HandleTranslationUnit(clang::ASTContext& ctx) override {
    if (exprs_.empty() || ctx.getDiagnostics().hasErrorOccurred()) return;
    const clang::CompoundStmt* body = nullptr;
    for (const clang::Decl* d : ctx.getTranslationUnitDecl()->decls())
      if (const auto* fn = llvm::dyn_cast<clang::FunctionDecl>(d))
        if (fn->getName() == kNameExprFunction && fn->hasBody())
          body = llvm::dyn_cast<clang::CompoundStmt>(fn->getBody());
    if (!body || body->size() != exprs_.size()) return;
    std::unique_ptr<clang::MangleContext> mangler(ctx.createMangleContext());
    size_t i = 0;
    for (const clang::Stmt* s : body->body()) {
      const std::string& expr = exprs_[i++];
      const clang::NamedDecl* decl = referenced_decl(s);
      if (!decl) {
        log_ += "name expression '" + expr +
                "' does not name a __global__ function or a __device__ variable\n";
        continue;
      }
      out_[expr] = mangled(*mangler, decl);
    }
  }

 private:
  static const clang::NamedDecl* referenced_decl(const clang::Stmt* s) {
    const auto* cast = llvm::dyn_cast<clang::CStyleCastExpr>(s);
    if (!cast) return nullptr;
    const clang::Expr* e = cast->getSubExpr()->IgnoreParenImpCasts();
    if (const auto* addr = llvm::dyn_cast<clang::UnaryOperator>(e))
      if (addr->getOpcode() == clang::UO_AddrOf) e = addr->getSubExpr()->IgnoreParenImpCasts();
    const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(e);
    if (!ref) return nullptr;
    const clang::ValueDecl* d = ref->getDecl();
    if (const auto* fn = llvm::dyn_cast<clang::FunctionDecl>(d))
      return fn->hasAttr<clang::CUDAGlobalAttr>() ? fn : nullptr;
    if (const auto* var = llvm::dyn_cast<clang::VarDecl>(d))
      return (var->hasAttr<clang::CUDADeviceAttr>() || var->hasAttr<clang::CUDAConstantAttr>())
                 ? var
                 : nullptr;
    return nullptr;
  }

  static std::string mangled(clang::MangleContext& mangler, const clang::NamedDecl* decl) {
    if (!mangler.shouldMangleDeclName(decl)) return decl->getName().str();
    std::string name;
    llvm::raw_string_ostream os(name);
    if (const auto* fn = llvm::dyn_cast<clang::FunctionDecl>(decl))
      mangler.mangleName(clang::GlobalDecl(fn, clang::KernelReferenceKind::Kernel), os);
    else
      mangler.mangleName(clang::GlobalDecl(llvm::cast<clang::VarDecl>(decl)), os);
    return name;
  }

  const std::vector<std::string>& exprs_;
  std::map<std::string, std::string>& out_;
  std::string& log_;
};

// A frontend action (PTX emission or syntax only) that also resolves the
// program's name expressions.
template <typename Base>
class RtcAction : public Base {
 public:
  RtcAction(const std::vector<std::string>& exprs, std::map<std::string, std::string>& out,
            std::string& log)
      : exprs_(exprs), out_(out), log_(log) {}

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci,
                                                        llvm::StringRef file) override {
    std::vector<std::unique_ptr<clang::ASTConsumer>> consumers;
    consumers.push_back(std::make_unique<NameExprConsumer>(exprs_, out_, log_));
    consumers.push_back(Base::CreateASTConsumer(ci, file));
    return std::make_unique<clang::MultiplexConsumer>(std::move(consumers));
  }

 private:
  const std::vector<std::string>& exprs_;
  std::map<std::string, std::string>& out_;
  std::string& log_;
};

// The main file: the user's source under its own name, optionally inside a
// "device by default" region, then the name-expression function.
std::string main_file(const Source& source, const CompileOptions& options,
                      const std::vector<std::string>& exprs) {
  std::string text;
  if (options.default_device) text += "#pragma clang force_cuda_host_device begin\n";
  std::string quoted;  // the name as a string literal of the #line directive
  for (char c : source.name) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  text += "#line 1 \"" + quoted + "\"\n" + source.text + "\n";
  if (options.default_device) text += "#pragma clang force_cuda_host_device end\n";
  if (!exprs.empty()) {
    // One expression per line, so a diagnostic's line is the expression's
    // position among the program's name expressions.
    text += "static void " + std::string(kNameExprFunction) + "() {\n#line 1 \"<name expressions>\"\n";
    for (const std::string& e : exprs) text += "(void)(" + e + ");\n";
    text += "}\n";
  }
  return text;
}

std::vector<std::string> cc1_args(const Source& source, const CompileOptions& options) {
  std::vector<std::string> a = {
      "-triple", "nvptx64-nvidia-cuda", "-aux-triple", "x86_64-unknown-linux-gnu",
      "-aux-target-cpu", "x86-64", "-fcuda-is-device", "-fcuda-allow-variadic-functions",
      "-target-cpu", "sm_" + std::to_string(options.arch), "-target-feature", "+ptx85",
      "-x", "cuda", "-std=" + options.std, "-O3", "-mrelocation-model", "static",
      "-fdeclspec", "-fgnuc-version=4.2.1", "-fcxx-exceptions", "-discard-value-names",
      "-nostdsysteminc", "-nobuiltininc", "-ferror-limit", "20", "-main-file-name",
      source.name, "-I", kHeaderDir, "-I", kToolkitDir};
  for (const std::string& dir : options.include_paths) a.insert(a.end(), {"-I", dir});
  a.insert(a.end(), {"-internal-isystem", kBuiltinDir});
  a.insert(a.end(), options.preprocessor.begin(), options.preprocessor.end());
  a.insert(a.end(), {"-include", std::string(kBuiltinDir) + kRuntimeHeader});
  for (const std::string& f : options.pre_includes) a.insert(a.end(), {"-include", f});
  if (options.no_warnings) a.push_back("-w");
  a.push_back(kSourcePath);
  return a;
}

}  // namespace

CompileOutput compile(const Source& source, const CompileOptions& options,
                      const std::vector<std::string>& name_expressions) {
  init_nvptx();
  CompileOutput out;

  auto memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  for (const auto& [name, text] : builtin_headers()) {
    memory->addFile(kBuiltinDir + name, 0, llvm::MemoryBuffer::getMemBuffer(text, name));
    if (is_toolkit_header(name))
      memory->addFile(kToolkitDir + name, 0, llvm::MemoryBuffer::getMemBuffer(text, name));
  }
  for (const auto& [name, text] : source.headers)
    memory->addFile(kHeaderDir + name, 0, llvm::MemoryBuffer::getMemBufferCopy(text, name));
  memory->addFile(kSourcePath, 0,
                  llvm::MemoryBuffer::getMemBufferCopy(
                      main_file(source, options, name_expressions), source.name));
  auto files = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  files->pushOverlay(memory);

  LogConsumer log(out.log);
  std::vector<std::string> args = cc1_args(source, options);
  std::vector<const char*> argv;
  for (const std::string& s : args) argv.push_back(s.c_str());
  auto diag_options = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
  clang::DiagnosticsEngine arg_diags(llvm::makeIntrusiveRefCnt<clang::DiagnosticIDs>(),
                                     diag_options, &log, /*ShouldOwnClient=*/false);
  auto invocation = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, argv, arg_diags)) {
    out.log += "nvrtc: internal error: the compiler rejected its own arguments\n";
    return out;
  }

  clang::CompilerInstance ci;
  ci.setInvocation(invocation);
  ci.createDiagnostics(&log, /*ShouldOwnClient=*/false);
  ci.createFileManager(files);
  std::string summary;  // Clang's "N errors generated." line
  llvm::raw_string_ostream summary_os(summary);
  ci.setVerboseOutputStream(summary_os);
  llvm::SmallString<0> ptx;
  ci.setOutputStream(std::make_unique<llvm::raw_svector_ostream>(ptx));

  bool ok;
  if (options.syntax_only) {
    RtcAction<clang::SyntaxOnlyAction> action(name_expressions, out.lowered_names, out.log);
    ok = ci.ExecuteAction(action);
  } else {
    RtcAction<clang::EmitAssemblyAction> action(name_expressions, out.lowered_names, out.log);
    ok = ci.ExecuteAction(action);
  }
  out.log += summary;
  out.ok = ok && log.getNumErrors() == 0;
  if (out.ok) out.ptx = ptx.str().str();
  return out;
}

}  // namespace qgpu::nvrtc
