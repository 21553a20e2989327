// The clang half of the snippet analysis, built only into libcujit-analysis.so (with clang and
// LLVM linked in statically): libcujit.so reaches it through codegen/analysis_loader.cpp on the
// first analysis, so a program whose kernels all come from a cache never maps clang.
#include "analysis/snippet_analyser.hpp"

#include "analysis/clang_prelude.hpp"

#include <cujit/error.hpp>

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticLex.h>
#include <clang/Basic/DiagnosticParse.h>
#include <clang/Basic/DiagnosticSema.h>
#include <clang/Basic/IdentifierTable.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Frontend/PrecompiledPreamble.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <clang/Sema/Sema.h>
#include <clang/Serialization/PCHContainerOperations.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/ConvertUTF.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>

namespace cujit::detail {
namespace {

constexpr const char* kMainFile = "cujit-analysis.cpp";
constexpr const char* kScaffoldFile = "cujit-scaffold";
constexpr std::string_view kSnippetFilePrefix = "cujit-snippet-";
constexpr std::string_view kSnippetFunctionPrefix = "__cujit_snippet_";
// Headers a preamble commonly includes are empty files here: the prelude declares what
// snippets use from them, and anything else is an unknown name that defers to NVRTC. A
// missing header would be a fatal error that silences every later diagnostic.
constexpr const char* kVirtualIncludeDir = "/cujit-virtual-include";
constexpr const char* kPreludeHeader = "__cujit_prelude.h";
// The first line of every analysed file: the prelude, precompiled once per process.
constexpr const char* kPreludeInclude = "#include <__cujit_prelude.h>\n";
constexpr std::array<const char*, 17> kKnownHeaders = {"cuda_fp16.h",      "cuda_bf16.h",
                                                       "cuda_runtime.h",   "cuda/std/complex",
                                                       "thrust/complex.h", "math_constants.h",
                                                       "assert.h",         "cassert",
                                                       "stdio.h",          "cstdio",
                                                       "stdint.h",         "cstdint",
                                                       "math.h",           "cmath",
                                                       "limits.h",         "climits",
                                                       "float.h"};

// ---------------------------------------------------------------------------------------
// Raw lexing of snippet text (identifiers, assignments, macros).

struct RawToken {
  clang::tok::TokenKind kind;
  std::string text;  ///< identifier spelling (raw identifiers only)
  std::size_t offset;
  std::size_t length;
  bool at_line_start;
};

// The analysis sees only these files: the prelude and the known headers, in memory. Nothing
// on the host's disk is visible, so a snippet's #include cannot pick up unrelated headers.
llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem> make_file_system() {
  llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem> fs(new llvm::vfs::InMemoryFileSystem);
  const std::string dir = std::string(kVirtualIncludeDir) + "/";
  fs->addFile(dir + kPreludeHeader, 0, llvm::MemoryBuffer::getMemBuffer(kClangPrelude));
  for (const char* header : kKnownHeaders) {
    fs->addFile(dir + header, 0, llvm::MemoryBuffer::getMemBuffer(""));
  }
  fs->setCurrentWorkingDirectory("/");
  return fs;
}

// Serialises every use of clang's libraries (see analyze_snippets).
std::mutex& clang_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Everything that depends on the C++ standard, built once per process and standard: the
// compiler settings (parsed as clang -cc1 arguments so that every language default is
// exactly clang's), the keywords, and the prelude precompiled into an in-memory PCH that an
// analysis loads lazily (about 2 ms less per analysis than parsing the prelude as text).
// Building the PCH takes longer than one textual parse, so it is built on a background
// thread at first use, and analyses parse the prelude as text until it is ready: a process
// that specialises one kernel pays only the textual parse.
class Language {
 public:
  explicit Language(const char* standard) {
    std::lock_guard<std::mutex> lock(clang_mutex());
    invocation_ = std::make_shared<clang::CompilerInvocation>();
    const char* args[] = {
        "-triple", "x86_64-unknown-linux-gnu", "-fsyntax-only", "-x", "c++", standard,
        // Typo correction costs time and turns an unknown name into a guess; an unknown name
        // must stay unknown so that the analysis defers to NVRTC.
        "-fno-spell-checking", "-w", "-nostdsysteminc", "-nobuiltininc", "-nostdinc++",
        "-fno-caret-diagnostics", "-fno-color-diagnostics", "-ferror-limit", "0", kMainFile};
    llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> options(new clang::DiagnosticOptions);
    clang::IgnoringDiagConsumer ignore;
    clang::DiagnosticsEngine diags(new clang::DiagnosticIDs, options.get(), &ignore, false);
    clang::CompilerInvocation::CreateFromArgs(*invocation_, args, diags);
    invocation_->getHeaderSearchOpts().AddPath(kVirtualIncludeDir, clang::frontend::Angled, false,
                                               false);
    clang::IdentifierTable table(options_of());
    for (const auto& entry : table) {
      if (entry.getValue()->isKeyword(options_of())) keywords_.insert(entry.getKey().str());
    }
    fs_ = make_file_system();
  }

  Language(const Language&) = delete;
  Language& operator=(const Language&) = delete;
  ~Language() {
    if (builder_.joinable()) builder_.join();
  }

  const clang::LangOptions& options_of() const { return *invocation_->getLangOpts(); }
  bool is_keyword(const std::string& name) const { return keywords_.count(name) != 0; }
  const llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem>& file_system() const { return fs_; }
  std::shared_ptr<clang::CompilerInvocation> make_invocation() const {
    return std::make_shared<clang::CompilerInvocation>(*invocation_);
  }

  /// The precompiled prelude, or null while it is being built (or if building failed).
  /// Starts the build on first use; `wait` blocks until it is done.
  const clang::PrecompiledPreamble* precompiled(bool wait) {
    std::call_once(started_, [this] {
      try {
        builder_ = std::thread([this] { build(); });
      } catch (const std::system_error&) {
        finish();  // no thread to spare: the prelude stays text
      }
    });
    if (wait) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return finished_; });
    }
    return ready_.load(std::memory_order_acquire);
  }

 private:
  void build() {
    // A declaration after the include makes the preamble end at the start of a line, so that
    // a directive right after it (#line) is still recognised as one.
    std::unique_ptr<llvm::MemoryBuffer> main = llvm::MemoryBuffer::getMemBufferCopy(
        std::string(kPreludeInclude) + "int __cujit_end_of_preamble;\n", kMainFile);
    clang::PreambleBounds bounds =
        clang::ComputePreambleBounds(options_of(), main->getMemBufferRef(), 0);
    llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> options(new clang::DiagnosticOptions);
    clang::IgnoringDiagConsumer ignore;
    // Reference-counted: the CompilerInstance inside Build() holds and releases it.
    llvm::IntrusiveRefCntPtr<clang::DiagnosticsEngine> diags(
        new clang::DiagnosticsEngine(new clang::DiagnosticIDs, options.get(), &ignore, false));
    clang::PreambleCallbacks callbacks;
    std::unique_lock<std::mutex> clang_lock(clang_mutex());
    auto built = clang::PrecompiledPreamble::Build(
        *make_invocation(), main.get(), bounds, *diags, fs_,
        std::make_shared<clang::PCHContainerOperations>(), /*StoreInMemory=*/true, callbacks);
    if (built && !diags->hasErrorOccurred()) {
      pch_.emplace(std::move(*built));
      ready_.store(&*pch_, std::memory_order_release);
    }
    finish();
  }

  void finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    done_.notify_all();
  }

  std::shared_ptr<clang::CompilerInvocation> invocation_;
  std::set<std::string> keywords_;
  llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem> fs_;
  std::optional<clang::PrecompiledPreamble> pch_;
  std::atomic<const clang::PrecompiledPreamble*> ready_{nullptr};
  std::once_flag started_;
  std::thread builder_;
  std::mutex mutex_;
  std::condition_variable done_;
  bool finished_ = false;
};

// NVRTC's default is C++17; C++20 is the only newer standard it knows.
Language& language(int cxx_standard) {
  if (cxx_standard >= 20) {
    static Language cxx20("-std=gnu++20");
    return cxx20;
  }
  static Language cxx17("-std=gnu++17");
  return cxx17;
}

std::vector<RawToken> raw_lex(const std::string& text, const Language& lang) {
  std::vector<RawToken> tokens;
  // Raw lexing needs no SourceManager; locations are offsets from a fake file start.
  const clang::SourceLocation base = clang::SourceLocation::getFromRawEncoding(1);
  clang::Lexer lexer(base, lang.options_of(), text.data(), text.data(), text.data() + text.size());
  lexer.SetCommentRetentionState(false);
  clang::Token tok;
  while (true) {
    bool eof = lexer.LexFromRawLexer(tok);
    if (tok.is(clang::tok::eof)) break;
    RawToken t;
    t.kind = tok.getKind();
    t.offset = tok.getLocation().getRawEncoding() - base.getRawEncoding();
    t.length = tok.getLength();
    t.at_line_start = tok.isAtStartOfLine() || tokens.empty();
    if (tok.is(clang::tok::raw_identifier)) t.text = tok.getRawIdentifier().str();
    tokens.push_back(std::move(t));
    if (eof) break;
  }
  return tokens;
}

// Offsets at which the lines of a text start, for 1-based line and column lookups.
std::vector<std::size_t> line_starts_of(const std::string& text) {
  std::vector<std::size_t> starts = {0};
  for (std::size_t k = 0; k < text.size(); ++k) {
    if (text[k] == '\n') starts.push_back(k + 1);
  }
  return starts;
}

std::pair<int, int> line_column(const std::vector<std::size_t>& starts, std::size_t offset) {
  auto next = std::upper_bound(starts.begin(), starts.end(), offset);
  const int line = static_cast<int>(next - starts.begin());
  return {line, static_cast<int>(offset - *(next - 1)) + 1};
}

struct LexedSnippet {
  std::vector<std::size_t> line_starts;
  std::vector<RawToken> tokens;  ///< outside preprocessor directives
  std::set<std::string> identifiers;
  std::map<std::string, std::set<std::string>> macros;  ///< #define name -> body identifiers
  bool has_conditional_on_compiler_macro = false;
  /// Where the snippet is refused before clang runs, and why: a character no snippet may
  /// contain (see unreadable_character), else the first `#line N` or `# N` directive, which
  /// would move clang's and NVRTC's idea of where the snippet's lines are (found by fuzzing:
  /// errors at line 0).
  std::optional<std::pair<std::size_t, std::string>> refused;
  std::map<std::string, int> macro_angles;  ///< #define name -> '<' in its body
};

// Clang's parser takes time exponential in the number of '<' after undeclared names in one
// expression ("a <b <c <b <c ..."; found by fuzzing: 22 of them took 10 s and 1 GB, each two
// more about four times as long), trying each as a template argument list and backtracking;
// NVRTC takes 27 ms. A snippet with more '<' open within one statement than this is left to
// NVRTC unanalysed. Real code stays far below it: `std::pair<int, std::array<float, 4>>`
// opens two.
constexpr int kMaxOpenAngles = 10;

// The most '<' still open, counting '>' as closing one and '>>' two, between statement
// boundaries (';', '{', '}'). A macro opens as many as its expansion spells (`angles`).
int max_open_angles(const std::vector<RawToken>& tokens, const std::map<std::string, int>& angles) {
  int open = 0, most = 0;
  for (const RawToken& t : tokens) {
    switch (t.kind) {
      case clang::tok::less:
        most = std::max(most, ++open);
        break;
      case clang::tok::raw_identifier:
        if (auto it = angles.find(t.text); it != angles.end()) {
          open = std::min(open + it->second, 1 << 20);
          most = std::max(most, open);
        }
        break;
      case clang::tok::greater:
        open = std::max(open - 1, 0);
        break;
      case clang::tok::greatergreater:
        open = std::max(open - 2, 0);
        break;
      case clang::tok::semi:
      case clang::tok::l_brace:
      case clang::tok::r_brace:
        open = 0;
        break;
      default:
        break;
    }
  }
  return most;
}

// A NUL anywhere (NVRTC reads source as a C string: everything after it would be lost), or a
// non-ASCII byte outside comments and literals: NVRTC reads code as ASCII ("unrecognized
// token", even for identifiers such as U+03B1), while clang accepts some of it and drops
// invalid UTF-8 and Unicode spaces as if they were whitespace. Its raw lexer, which finds
// directives here, keeps those as tokens, so the two disagreed on whether a '#' after them
// starts a directive (found by fuzzing: "\xfb#0" became a line marker, and an error pointed
// at line 0).
std::optional<std::pair<std::size_t, std::string>> unreadable_character(
    const std::string& text, const std::vector<RawToken>& tokens) {
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos) {
    return std::make_pair(nul, std::string("a NUL character is not allowed in a snippet (NVRTC "
                                           "reads source as a C string)"));
  }
  for (const RawToken& t : tokens) {
    // String and character literals may hold anything; a number (pp-number) may not.
    if (clang::tok::isLiteral(t.kind) && t.kind != clang::tok::numeric_constant) continue;
    std::size_t at = t.offset;
    while (at < t.offset + t.length && static_cast<unsigned char>(text[at]) < 0x80) ++at;
    if (at == t.offset + t.length) continue;
    const auto* begin = reinterpret_cast<const llvm::UTF8*>(text.data() + at);
    const auto* cursor = begin;
    llvm::UTF32 code = 0;
    char name[32];
    if (llvm::convertUTF8Sequence(&cursor, begin + (text.size() - at), &code,
                                  llvm::strictConversion) != llvm::conversionOK) {
      std::snprintf(name, sizeof name, "(byte 0x%02x)", static_cast<unsigned char>(text[at]));
      return std::make_pair(at, "the snippet is not valid UTF-8 here " + std::string(name));
    }
    std::snprintf(name, sizeof name, "U+%04X", static_cast<unsigned>(code));
    return std::make_pair(at, "character " + std::string(name) +
                                  " is not allowed outside comments and literals (NVRTC reads "
                                  "code as ASCII)");
  }
  return std::nullopt;
}

bool is_member_access(clang::tok::TokenKind kind) {
  return kind == clang::tok::period || kind == clang::tok::arrow || kind == clang::tok::coloncolon;
}

// Names whose value differs between clang and NVRTC: a preprocessor conditional on one of
// them may select code NVRTC never sees, so no error found in such a set is certain.
bool is_compiler_macro(const std::string& name) {
  return name.rfind("__", 0) == 0 || name.rfind("CUDA", 0) == 0 || name.rfind("NV_", 0) == 0 ||
         name.rfind("_NV", 0) == 0;
}

LexedSnippet lex_snippet(const std::string& text, const Language& lang) {
  LexedSnippet out;
  out.line_starts = line_starts_of(text);
  std::vector<RawToken> all = raw_lex(text, lang);
  out.refused = unreadable_character(text, all);
  for (std::size_t k = 0; k < all.size();) {
    if (all[k].kind == clang::tok::hash && all[k].at_line_start) {
      std::size_t end = k + 1;
      while (end < all.size() && !all[end].at_line_start) ++end;
      const bool line_directive =
          k + 1 < end &&
          (all[k + 1].kind == clang::tok::numeric_constant ||
           (all[k + 1].kind == clang::tok::raw_identifier && all[k + 1].text == "line"));
      if (line_directive && !out.refused) {
        out.refused.emplace(all[k].offset,
                            "line directives (#line, # N) are not allowed in a snippet: cujit "
                            "maps errors to the snippet's own lines");
      }
      if (k + 1 < end && all[k + 1].kind == clang::tok::raw_identifier) {
        const std::string& directive = all[k + 1].text;
        if (directive == "define" && k + 2 < end && all[k + 2].kind == clang::tok::raw_identifier) {
          std::set<std::string>& body = out.macros[all[k + 2].text];
          int& angles = out.macro_angles[all[k + 2].text];
          for (std::size_t j = k + 3; j < end; ++j) {
            if (all[j].kind == clang::tok::raw_identifier && !lang.is_keyword(all[j].text)) {
              body.insert(all[j].text);
            }
            if (all[j].kind == clang::tok::less) ++angles;
          }
        } else if (directive == "if" || directive == "ifdef" || directive == "ifndef" ||
                   directive == "elif") {
          for (std::size_t j = k + 2; j < end; ++j) {
            if (all[j].kind == clang::tok::raw_identifier && is_compiler_macro(all[j].text)) {
              out.has_conditional_on_compiler_macro = true;
            }
          }
        }
      }
      k = end;
      continue;
    }
    out.tokens.push_back(all[k]);
    ++k;
  }
  for (std::size_t k = 0; k < out.tokens.size(); ++k) {
    const RawToken& t = out.tokens[k];
    if (t.kind != clang::tok::raw_identifier || lang.is_keyword(t.text)) continue;
    if (k > 0 && is_member_access(out.tokens[k - 1].kind)) continue;
    out.identifiers.insert(t.text);
  }
  return out;
}

// The '<' each macro's expansion spells at least: its body's own, and those of the macros its
// body names, transitively (a macro met again on its own expansion path adds none, as the
// preprocessor does not expand it there; each macro is computed once). Depth-first with a stack
// of its own: a preamble may chain any number of macros, and a thread's stack would not do.
std::map<std::string, int> expanded_macro_angles(
    const std::map<std::string, std::set<std::string>>& macros,
    const std::map<std::string, int>& own) {
  constexpr long long kCap = 1 << 20;
  struct Frame {
    const std::string* name;
    std::set<std::string>::const_iterator next, end;
    long long total;
  };
  std::map<std::string, int> expanded;
  std::set<std::string> path;
  std::vector<Frame> stack;
  auto enter = [&](const std::string& name, int angles) {
    const std::set<std::string>& body = macros.at(name);
    stack.push_back({&name, body.begin(), body.end(), angles});
    path.insert(name);
  };
  for (const auto& [root, root_angles] : own) {
    if (expanded.count(root) != 0) continue;
    enter(root, root_angles);
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next == top.end) {
        const int total = static_cast<int>(top.total);
        expanded[*top.name] = total;
        path.erase(*top.name);
        stack.pop_back();
        if (!stack.empty()) stack.back().total = std::min(stack.back().total + total, kCap);
        continue;
      }
      const std::string& id = *top.next++;
      auto it = own.find(id);
      if (it == own.end() || path.count(id) != 0) continue;
      if (auto done = expanded.find(id); done != expanded.end()) {
        top.total = std::min(top.total + done->second, kCap);
        continue;
      }
      enter(it->first, it->second);
    }
  }
  return expanded;
}

// Adds the identifiers of the bodies of macros the snippet uses, transitively: a preamble
// macro may name a parameter that the snippet itself never spells.
void add_macro_identifiers(std::set<std::string>& identifiers,
                           const std::map<std::string, std::set<std::string>>& macros) {
  std::vector<std::string> pending(identifiers.begin(), identifiers.end());
  std::set<std::string> expanded;
  while (!pending.empty()) {
    std::string name = std::move(pending.back());
    pending.pop_back();
    auto it = macros.find(name);
    if (it == macros.end() || !expanded.insert(name).second) continue;
    for (const std::string& id : it->second) {
      if (identifiers.insert(id).second) pending.push_back(id);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Where things are: positions inside snippets.

struct Position {
  int snippet = -1;  ///< -1: prelude or scaffolding
  int line = 0;
  int column = 0;
  friend bool operator<(const Position& a, const Position& b) {
    return std::tie(a.snippet, a.line, a.column) < std::tie(b.snippet, b.line, b.column);
  }
};

// A clang location as a snippet position (macro arguments map to where they were written,
// other macro tokens to where the macro was used).
Position position_of(const clang::SourceManager& sm, clang::SourceLocation loc) {
  Position pos;
  if (loc.isInvalid()) return pos;
  clang::PresumedLoc presumed = sm.getPresumedLoc(sm.getFileLoc(loc));
  if (presumed.isInvalid()) return pos;
  std::string_view file = presumed.getFilename();
  if (file.rfind(kSnippetFilePrefix, 0) != 0) return pos;
  pos.snippet = std::atoi(std::string(file.substr(kSnippetFilePrefix.size())).c_str());
  pos.line = static_cast<int>(presumed.getLine());
  pos.column = static_cast<int>(presumed.getColumn());
  return pos;
}

// ---------------------------------------------------------------------------------------
// Diagnostics: which errors clang is certain of.

struct Diag {
  Position pos;
  std::string message;
  bool certain = false;
  std::string reserved_name;  ///< an undeclared identifier in cujit's reserved namespace
  std::string outside;        ///< "file:line" of an error outside the snippets (for debugging)
};

// A type whose meaning is the same for clang and NVRTC: built-in types, pointers, references
// and arrays of them. The prelude's stand-ins (half, complex, vectors, __cujit_any) are class
// types, so no diagnostic about them is ever taken as certain.
bool is_builtin_type(clang::QualType type) {
  if (type.isNull()) return false;
  type = type.getNonReferenceType().getCanonicalType();
  while (true) {
    if (type->isDependentType()) return false;
    if (const auto* pointer = type->getAs<clang::PointerType>()) {
      type = pointer->getPointeeType().getCanonicalType();
    } else if (const auto* array = type->getAsArrayTypeUnsafe()) {
      type = array->getElementType().getCanonicalType();
    } else {
      break;
    }
  }
  return llvm::isa<clang::BuiltinType>(type.getTypePtr());
}

bool all_types_builtin(const clang::Diagnostic& info) {
  for (unsigned k = 0; k < info.getNumArgs(); ++k) {
    if (info.getArgKind(k) == clang::DiagnosticsEngine::ak_qualtype &&
        !is_builtin_type(
            clang::QualType::getFromOpaquePtr(reinterpret_cast<void*>(info.getRawArg(k))))) {
      return false;
    }
  }
  return true;
}

bool has_name_argument(const clang::Diagnostic& info) {
  for (unsigned k = 0; k < info.getNumArgs(); ++k) {
    switch (info.getArgKind(k)) {
      case clang::DiagnosticsEngine::ak_identifierinfo:
      case clang::DiagnosticsEngine::ak_declarationname:
      case clang::DiagnosticsEngine::ak_nameddecl:
      case clang::DiagnosticsEngine::ak_nestednamespec:
      case clang::DiagnosticsEngine::ak_declcontext:
      case clang::DiagnosticsEngine::ak_qualtype:
      case clang::DiagnosticsEngine::ak_qualtype_pair:
        return true;
      default:
        break;
    }
  }
  return false;
}

std::string name_argument(const clang::Diagnostic& info) {
  for (unsigned k = 0; k < info.getNumArgs(); ++k) {
    if (info.getArgKind(k) == clang::DiagnosticsEngine::ak_identifierinfo) {
      return info.getArgIdentifier(k)->getName().str();
    }
    if (info.getArgKind(k) == clang::DiagnosticsEngine::ak_declarationname) {
      return clang::DeclarationName::getFromOpaqueInteger(info.getRawArg(k)).getAsString();
    }
  }
  return {};
}

// Parse errors that an unknown name can cause (a base class, template or type from a header
// clang cannot see): these say nothing certain about the snippet.
bool is_name_dependent_parse_error(unsigned id) {
  switch (id) {
    case clang::diag::err_expected_class_name:
    case clang::diag::err_unknown_template_name:
    case clang::diag::err_template_spec_syntax_non_template:
    case clang::diag::err_typename_refers_to_non_type_template:
    case clang::diag::err_unexpected_typedef_ident:
    case clang::diag::err_expected_qualified_after_typename:
    case clang::diag::err_expected_member_or_base_name:
    case clang::diag::err_destructor_tilde_identifier:
    case clang::diag::err_expected_type:
    case clang::diag::err_missing_dependent_template_keyword:
      return true;
    default:
      return false;
  }
}

// Semantic errors that are certain when every type they name is a built-in type.
bool is_builtin_type_error(unsigned id) {
  switch (id) {
    case clang::diag::err_typecheck_invalid_operands:
    case clang::diag::err_typecheck_member_reference_struct_union:
    case clang::diag::err_typecheck_subscript_value:
    case clang::diag::err_typecheck_call_not_function:
    case clang::diag::err_typecheck_unary_expr:
    case clang::diag::err_typecheck_indirection_requires_pointer:
    case clang::diag::err_typecheck_expression_not_modifiable_lvalue:
      return true;
    default:
      return false;
  }
}

// The variables cujit documents for snippets: `_ind`, `_in_ind`, `_out_ind`, `_J` and
// `_raw_<name>`. Using one that is not defined in a snippet's context is certainly an error.
bool is_cujit_variable_name(std::string_view name) {
  return name == "_ind" || name == "_in_ind" || name == "_out_ind" || name == "_J" ||
         name.rfind("_raw_", 0) == 0;
}

// Names of the generated code's internals.
bool is_cujit_internal_name(std::string_view name) {
  return name.rfind("_cj", 0) == 0 || name.rfind("_cujit", 0) == 0 || name.rfind("__cujit", 0) == 0;
}

// Declaring one of these in a snippet's outermost scope (or the preamble's file scope) would
// shadow or collide with what the generated kernel declares: certainly a mistake, even where
// C++ would let it shadow silently (`int i = 0;` makes every element write one index).
// Other names, `n` and `_tmp` included, are the user's: NVRTC accepts them.
bool is_reserved_declaration_name(std::string_view name) {
  return name == "i" || is_cujit_variable_name(name) || is_cujit_internal_name(name);
}

class Collector : public clang::DiagnosticConsumer {
 public:
  explicit Collector(clang::CompilerInstance& ci) : ci_(ci) {}

  void HandleDiagnostic(clang::DiagnosticsEngine::Level level,
                        const clang::Diagnostic& info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level < clang::DiagnosticsEngine::Error) return;
    Diag d;
    if (info.hasSourceManager()) {
      d.pos = position_of(info.getSourceManager(), info.getLocation());
      if (d.pos.snippet < 0 && info.getLocation().isValid()) {
        const clang::SourceManager& sm = info.getSourceManager();
        clang::PresumedLoc where = sm.getPresumedLoc(sm.getFileLoc(info.getLocation()));
        if (where.isValid()) {
          d.outside = std::string(where.getFilename()) + ":" + std::to_string(where.getLine());
        }
      }
    }
    llvm::SmallString<128> text;
    info.FormatDiagnostic(text);
    d.message = text.str().str();
    d.certain = classify(level, info, d);
    diags_.push_back(std::move(d));
  }

  const std::vector<Diag>& diagnostics() const { return diags_; }

 private:
  bool classify(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info, Diag& d) {
    // Errors outside the snippets (prelude, scaffolding) come from snippets that break the
    // scaffolding or from gaps in the prelude: never certain.
    if (d.pos.snippet < 0 || level == clang::DiagnosticsEngine::Fatal) return false;
    if (ci_.hasSema() && ci_.getSema().inTemplateInstantiation()) return false;
    const unsigned id = info.getID();
    if (id == clang::diag::err_undeclared_var_use) {
      std::string name = name_argument(info);
      if (is_cujit_variable_name(name)) d.reserved_name = name;
      return false;
    }
    llvm::StringRef category = clang::DiagnosticIDs::getCategoryNameFromID(
        clang::DiagnosticIDs::getCategoryNumberForDiag(id));
    if (category == "Lexical or Preprocessor Issue") {
      return id != clang::diag::err_pp_hash_error && id != clang::diag::err_pp_file_not_found &&
             !has_name_argument(info);
    }
    if (category == "Parse Issue") {
      return !is_name_dependent_parse_error(id) && !has_name_argument(info);
    }
    if (category == "Semantic Issue") return is_builtin_type_error(id) && all_types_builtin(info);
    return false;
  }

  clang::CompilerInstance& ci_;
  std::vector<Diag> diags_;
};

// ---------------------------------------------------------------------------------------
// The AST: references to read-only snippet variables and declarations of reserved names.

struct AstFacts {
  /// Positions of references to read-only snippet variables, with the variable's name.
  std::map<Position, std::string> read_only_refs;
  /// Local declarations inside function snippets (any depth; filtered later) and file-scope
  /// declarations in TopLevel snippets: position and name.
  std::vector<std::pair<Position, std::string>> local_decls;
  std::vector<std::pair<Position, std::string>> file_scope_decls;
};

bool in_scaffold(const clang::SourceManager& sm, clang::SourceLocation loc) {
  clang::PresumedLoc presumed = sm.getPresumedLoc(sm.getFileLoc(loc));
  return presumed.isValid() && std::string_view(presumed.getFilename()) == kScaffoldFile;
}

class SnippetVisitor : public clang::RecursiveASTVisitor<SnippetVisitor> {
 public:
  SnippetVisitor(const clang::SourceManager& sm, AstFacts& facts) : sm_(sm), facts_(facts) {}

  // Snippet variables are declared by the scaffolding; read-only ones have const types.
  bool VisitDeclRefExpr(clang::DeclRefExpr* ref) {
    const auto* var = llvm::dyn_cast<clang::VarDecl>(ref->getDecl());
    if (var == nullptr || !in_scaffold(sm_, var->getLocation())) return true;
    clang::QualType type = var->getType().getNonReferenceType();
    if (!type.isConstQualified() || ref->getLocation().isMacroID()) return true;
    if (const auto* record = type->getAsCXXRecordDecl();
        record != nullptr && record->getName() == "__cujit_raw_array") {
      return true;  // raw arrays are writable through operator[]
    }
    Position pos = position_of(sm_, ref->getLocation());
    if (pos.snippet >= 0) facts_.read_only_refs[pos] = var->getNameAsString();
    return true;
  }

  bool VisitNamedDecl(clang::NamedDecl* decl) {
    if (llvm::isa<clang::ParmVarDecl>(decl) || decl->getIdentifier() == nullptr) return true;
    Position pos = position_of(sm_, decl->getLocation());
    if (pos.snippet >= 0) facts_.local_decls.emplace_back(pos, decl->getNameAsString());
    return true;
  }

 private:
  const clang::SourceManager& sm_;
  AstFacts& facts_;
};

class FactsConsumer : public clang::ASTConsumer {
 public:
  explicit FactsConsumer(AstFacts& facts) : facts_(facts) {}

  void HandleTranslationUnit(clang::ASTContext& context) override {
    const clang::SourceManager& sm = context.getSourceManager();
    SnippetVisitor visitor(sm, facts_);
    // noload_decls: decls() would deserialise every declaration of the precompiled prelude
    // (most of an analysis's time); what cujit checks was all parsed from the main file.
    for (clang::Decl* decl : context.getTranslationUnitDecl()->noload_decls()) {
      if (decl->isFromASTFile()) continue;
      auto* fn = llvm::dyn_cast<clang::FunctionDecl>(decl);
      if (fn != nullptr && fn->getNameAsString().rfind(kSnippetFunctionPrefix, 0) == 0) {
        if (fn->getBody() != nullptr) visitor.TraverseStmt(fn->getBody());
      } else if (const auto* named = llvm::dyn_cast<clang::NamedDecl>(decl);
                 named != nullptr && named->getIdentifier() != nullptr) {
        Position pos = position_of(sm, named->getLocation());
        if (pos.snippet >= 0) facts_.file_scope_decls.emplace_back(pos, named->getNameAsString());
      }
    }
  }

 private:
  AstFacts& facts_;
};

class AnalysisAction : public clang::ASTFrontendAction {
 public:
  explicit AnalysisAction(AstFacts& facts) : facts_(facts) {}

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&,
                                                        llvm::StringRef) override {
    return std::make_unique<FactsConsumer>(facts_);
  }

 private:
  AstFacts& facts_;
};

// ---------------------------------------------------------------------------------------
// The translation unit: prelude, type aliases, then each snippet. TopLevel snippets go in
// verbatim; each other snippet gets a function whose block declares its variables, and
// snippets with a scope parent are nested in the parent's block after the parent's text.

std::string declaration_of(const SnippetVariable& v) {
  const std::string cv = v.writable ? "" : "const ";
  switch (v.kind) {
    case SnippetVariable::Kind::Element:
      return cv + v.cuda_type + "& " + v.name + " = __cujit_declval<" + cv + v.cuda_type + "&>();";
    case SnippetVariable::Kind::RawArray: {
      const std::string type = "__cujit_raw_array<" + v.cuda_type + " >";
      return "const " + type + " " + v.name + " = __cujit_declval<" + type + ">();";
    }
    case SnippetVariable::Kind::Index:
      return cv + (v.cuda_type.empty() ? std::string("long long") : v.cuda_type) + " " + v.name +
             " = 0;";
    case SnippetVariable::Kind::Size:
      return cv + "__cujit_indexer " + v.name + " = __cujit_declval<__cujit_indexer>();";
  }
  return {};
}

class SourceBuilder {
 public:
  SourceBuilder(const SnippetSet& set, const std::vector<LexedSnippet>& lexed)
      : set_(set), lexed_(lexed), children_(set.snippets.size()) {
    for (std::size_t k = 0; k < set.snippets.size(); ++k) {
      int parent = set.snippets[k].scope_parent;
      if (parent < 0) continue;
      if (parent >= static_cast<int>(k) ||
          set.snippets[static_cast<std::size_t>(parent)].form != Snippet::Form::Statements ||
          set.snippets[k].form == Snippet::Form::TopLevel) {
        throw ArgumentError(set.kernel_name + ": snippet '" + set.snippets[k].label +
                            "' has an invalid scope parent " + std::to_string(parent) +
                            " (it must be an earlier Statements snippet)");
      }
      children_[static_cast<std::size_t>(parent)].push_back(k);
    }
  }

  std::string build() {
    src_ = kPreludeInclude;
    for (const auto& [name, type] : set_.type_aliases)
      src_ += "typedef " + type + " " + name + ";\n";
    for (std::size_t k = 0; k < set_.snippets.size(); ++k) {
      const Snippet& s = set_.snippets[k];
      if (s.form == Snippet::Form::TopLevel) {
        src_ += "#line 1 " + file_of(k) + "\n" + s.text + "\n";
        back_to_scaffold();
      } else if (s.scope_parent < 0 && !skipped(k)) {
        src_ += "void " + std::string(kSnippetFunctionPrefix) + std::to_string(k) + "() ";
        block(k);
        src_ += "\n";
      }
    }
    return src_;
  }

 private:
  static std::string file_of(std::size_t k) {
    return "\"" + std::string(kSnippetFilePrefix) + std::to_string(k) + "\"";
  }
  void back_to_scaffold() {
    src_ += "#line " + std::to_string(++scaffold_line_) + " \"" + kScaffoldFile + "\"\n";
  }
  void block(std::size_t k) {
    const Snippet& s = set_.snippets[k];
    src_ += "{\n";
    back_to_scaffold();
    for (const SnippetVariable& v : s.variables) src_ += declaration_of(v) + "\n";
    // The closing tokens stay in the snippet's file, one line below its end, so that an
    // error "at the end of the snippet" (a missing ')') is reported inside the snippet.
    if (s.form == Snippet::Form::Statements) {
      // CuPy appends ';' to operations: "z = x + y" needs none. The operation runs inside
      // the element loop, where `continue` and `break` are valid: a do-while lets them parse.
      src_ += "do {\n#line 1 " + file_of(k) + "\n" + s.text + "\n;\n";
    } else {
      src_ += "(void)(\n#line 1 " + file_of(k) + "\n" + s.text + "\n);\n";
    }
    back_to_scaffold();
    for (std::size_t child : children_[k]) {
      if (!skipped(child)) block(child);
    }
    src_ += s.form == Snippet::Form::Statements ? "} while (0);}\n" : "}\n";
  }

  // An empty expression (no identity) has nothing to check and would not parse.
  bool skipped(std::size_t k) const {
    return set_.snippets[k].form == Snippet::Form::Expression && lexed_[k].tokens.empty();
  }

  const SnippetSet& set_;
  const std::vector<LexedSnippet>& lexed_;
  std::vector<std::vector<std::size_t>> children_;
  std::string src_;
  int scaffold_line_ = 0;
};

// Nesting depth ('{' and '(') at a position of a snippet: declarations at depth 0 are in the
// snippet's outermost scope.
int depth_at(const LexedSnippet& lexed, Position pos) {
  int depth = 0;
  for (const RawToken& t : lexed.tokens) {
    auto [line, column] = line_column(lexed.line_starts, t.offset);
    if (line > pos.line || (line == pos.line && column >= pos.column)) break;
    switch (t.kind) {
      case clang::tok::l_brace:
      case clang::tok::l_paren:
        ++depth;
        break;
      case clang::tok::r_brace:
      case clang::tok::r_paren:
        --depth;
        break;
      default:
        break;
    }
  }
  return depth;
}

// ---------------------------------------------------------------------------------------
// Assignments to read-only variables, found in the tokens and confirmed by the AST and by
// an error clang reported at that very spot.

struct Finding {
  Position pos;
  std::string message;
};

bool is_assignment_operator(clang::tok::TokenKind kind) {
  switch (kind) {
    case clang::tok::equal:
    case clang::tok::plusequal:
    case clang::tok::minusequal:
    case clang::tok::starequal:
    case clang::tok::slashequal:
    case clang::tok::percentequal:
    case clang::tok::ampequal:
    case clang::tok::pipeequal:
    case clang::tok::caretequal:
    case clang::tok::lesslessequal:
    case clang::tok::greatergreaterequal:
      return true;
    default:
      return false;
  }
}
bool is_increment(clang::tok::TokenKind kind) {
  return kind == clang::tok::plusplus || kind == clang::tok::minusminus;
}

// The variable `name` as snippet `k` sees it: its own, or one of its scope parents'.
const SnippetVariable* find_variable(const SnippetSet& set, std::size_t k,
                                     const std::string& name) {
  for (int s = static_cast<int>(k); s >= 0;
       s = set.snippets[static_cast<std::size_t>(s)].scope_parent) {
    for (const SnippetVariable& v : set.snippets[static_cast<std::size_t>(s)].variables) {
      if (v.name == name) return &v;
    }
  }
  return nullptr;
}

void find_read_only_assignments(const SnippetSet& set, int index, const LexedSnippet& lexed,
                                const AstFacts& facts, const std::vector<Diag>& diags,
                                std::vector<Finding>& findings) {
  const std::vector<RawToken>& toks = lexed.tokens;
  for (std::size_t k = 0; k < toks.size(); ++k) {
    if (toks[k].kind != clang::tok::raw_identifier) continue;
    if (k > 0 && is_member_access(toks[k - 1].kind)) continue;
    auto [line, column] = line_column(lexed.line_starts, toks[k].offset);
    Position pos{index, line, column};
    auto ref = facts.read_only_refs.find(pos);
    if (ref == facts.read_only_refs.end()) continue;
    // Skip member accesses: "x.re = 1" writes x as much as "x = 1" does.
    std::size_t end = k + 1;
    while (end + 1 < toks.size() && toks[end].kind == clang::tok::period &&
           toks[end + 1].kind == clang::tok::raw_identifier) {
      end += 2;
    }
    std::size_t op;
    if (end < toks.size() &&
        (is_assignment_operator(toks[end].kind) || is_increment(toks[end].kind))) {
      op = end;
    } else if (k > 0 && is_increment(toks[k - 1].kind)) {
      op = k - 1;
    } else {
      continue;
    }
    // Only where clang itself failed: a class with a const assignment operator is legal.
    std::size_t first = std::min(op, k);
    std::size_t last = std::max(op, end - 1);
    Position from{index, 0, 0};
    std::tie(from.line, from.column) = line_column(lexed.line_starts, toks[first].offset);
    Position to{index, 0, 0};
    std::tie(to.line, to.column) =
        line_column(lexed.line_starts, toks[last].offset + toks[last].length);
    bool failed = std::any_of(diags.begin(), diags.end(),
                              [&](const Diag& d) { return !(d.pos < from) && !(to < d.pos); });
    if (!failed) continue;
    const SnippetVariable* var = find_variable(set, static_cast<std::size_t>(index), ref->second);
    if (var != nullptr && var->kind == SnippetVariable::Kind::Element) {
      findings.push_back({pos, "cannot assign to input '" + ref->second +
                                   "': snippet inputs are read-only (write outputs only)"});
    } else {
      findings.push_back({pos, "cannot assign to '" + ref->second + "': it is read-only"});
    }
  }
}

// Maps a position past the snippet's end (the scaffolding's closing tokens) to just after
// the last character of the snippet.
Position clamp_to_snippet(Position pos, const std::string& text) {
  int lines = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  if (pos.line <= lines) return pos;
  std::size_t last_start = text.rfind('\n');
  last_start = last_start == std::string::npos ? 0 : last_start + 1;
  return {pos.snippet, lines, static_cast<int>(text.size() - last_start) + 1};
}

bool debug_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("CUJIT_DEBUG_ANALYSIS");
    return value != nullptr && *value != '\0' && std::string_view(value) != "0";
  }();
  return enabled;
}

// The CompileError for `message` at `pos` of a snippet of `set`: the caret message, and a log
// whose first line is that error and whose rest is `more_log`.
[[noreturn]] void throw_snippet_error(const SnippetSet& set, Position pos,
                                      const std::string& message, const std::string& more_log,
                                      std::vector<std::string> options, const std::string& source) {
  const Snippet& s = set.snippets[static_cast<std::size_t>(pos.snippet)];
  throw CompileError(
      format_snippet_error(set.kernel_name, s.label, s.text, pos.line, pos.column, message),
      s.label + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) +
          ": error: " + message + "\n" + more_log,
      std::move(options), source, pos.line, pos.column);
}

// Parses `source` (the snippets in their scaffold) with clang, the prelude from `pch` when
// given; clang's diagnostics, and what the AST showed in `facts`.
std::vector<Diag> run_clang(Language& lang, const std::string& source,
                            const clang::PrecompiledPreamble* pch, AstFacts& facts) {
  // One clang run at a time: concurrent runs sharing the prelude's file system and PCH
  // crashed rarely under stress, and an analysis takes a few milliseconds only once per
  // kernel specialisation, so serialising costs nothing that matters.
  std::lock_guard<std::mutex> lock(clang_mutex());
  auto ci = std::make_unique<clang::CompilerInstance>();
  ci->setInvocation(lang.make_invocation());
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> fs = lang.file_system();
  std::unique_ptr<llvm::MemoryBuffer> main =
      llvm::MemoryBuffer::getMemBufferCopy(source, kMainFile);
  if (pch != nullptr) {
    // Takes the buffer (the SourceManager frees it) and overlays the PCH onto `fs`.
    pch->AddImplicitPreamble(ci->getInvocation(), fs, main.release());
  } else {
    ci->getInvocation().getPreprocessorOpts().addRemappedFile(kMainFile, main.release());
  }
  Collector collector(*ci);
  ci->createDiagnostics(&collector, /*ShouldOwnClient=*/false);
  ci->createFileManager(fs);
  AnalysisAction action(facts);
  ci->ExecuteAction(action);
  return collector.diagnostics();
}

// The errors cujit reports itself: clang's first certain error, reserved names used or
// declared, parameters redeclared, read-only parameters assigned.
std::vector<Finding> collect_findings(const SnippetSet& set, const std::vector<LexedSnippet>& lexed,
                                      const std::vector<Diag>& diags, const AstFacts& facts) {
  const std::size_t count = set.snippets.size();
  std::vector<Finding> findings;
  // The first error decides: after an error clang could not judge (an unknown name, a
  // template), later errors may be consequences of it.
  if (!diags.empty() && diags.front().certain) {
    findings.push_back({diags.front().pos, diags.front().message});
  }
  for (const Diag& d : diags) {
    if (!d.reserved_name.empty()) {
      findings.push_back({d.pos, "'" + d.reserved_name +
                                     "' is not defined here (cujit defines _ind, _raw_<name> "
                                     "and the other reserved variables only where they "
                                     "apply)"});
    }
  }
  const std::string reserved_message =
      "' is reserved for cujit's generated code (i, _ind, _in_ind, _out_ind, _J, _raw_<name>, "
      "_cj...); choose another name";
  for (const auto& [pos, name] : facts.local_decls) {
    const std::size_t k = static_cast<std::size_t>(pos.snippet);
    if (depth_at(lexed[k], pos) != 0) continue;
    if (is_reserved_declaration_name(name)) {
      findings.push_back({pos, "'" + name + reserved_message});
    } else if (std::any_of(set.snippets[k].variables.begin(), set.snippets[k].variables.end(),
                           // Captured by name: C++17 lambdas cannot capture a structured
                           // binding (g++ allows it, clang does not).
                           [&decl = name](const SnippetVariable& v) {
                             return v.name == decl && v.kind == SnippetVariable::Kind::Element;
                           })) {
      // The generated kernel declares element variables in the block the snippet goes
      // into (raw arrays live in an enclosing scope, where shadowing them is legal).
      findings.push_back({pos, "'" + name +
                                   "' is already a variable of this snippet (a kernel "
                                   "parameter); choose another name"});
    }
  }
  for (const auto& [pos, name] : facts.file_scope_decls) {
    if (is_cujit_variable_name(name) || is_cujit_internal_name(name)) {
      findings.push_back({pos, "'" + name + reserved_message});
    }
  }
  for (std::size_t k = 0; k < count; ++k) {
    find_read_only_assignments(set, static_cast<int>(k), lexed[k], facts, diags, findings);
  }
  return findings;
}

}  // namespace

SnippetReport analyze_with_clang(const SnippetSet& set, PreludeMode mode) {
  const std::size_t count = set.snippets.size();
  SnippetReport report;
  std::vector<LexedSnippet> lexed;
  lexed.reserve(count);
  Language& lang = language(set.cxx_standard);
  std::map<std::string, std::set<std::string>> macros;
  std::map<std::string, int> macro_angles;
  bool config_dependent = false;
  for (const Snippet& s : set.snippets) {
    lexed.push_back(lex_snippet(s.text, lang));
    for (const auto& [name, body] : lexed.back().macros)
      macros[name].insert(body.begin(), body.end());
    for (const auto& [name, angles] : lexed.back().macro_angles)
      macro_angles[name] = std::max(macro_angles[name], angles);
    config_dependent = config_dependent || lexed.back().has_conditional_on_compiler_macro;
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (!lexed[i].refused) continue;
    const auto& [offset, message] = *lexed[i].refused;
    const auto [line, column] = line_column(lexed[i].line_starts, offset);
    throw_snippet_error(set, {static_cast<int>(i), line, column}, message, "", {},
                        set.snippets[i].text);
  }
  for (LexedSnippet& l : lexed) {
    add_macro_identifiers(l.identifiers, macros);
    report.identifiers.push_back(l.identifiers);
  }
  const std::map<std::string, int> expanded = expanded_macro_angles(macros, macro_angles);
  if (std::any_of(lexed.begin(), lexed.end(), [&](const LexedSnippet& l) {
        return max_open_angles(l.tokens, expanded) > kMaxOpenAngles;
      })) {
    if (debug_enabled()) {
      std::cerr << "cujit: snippet analysis of " << set.kernel_name << " skipped: more than "
                << kMaxOpenAngles << " '<' open in one statement\n";
    }
    report.fully_checked = false;  // NVRTC will judge
    return report;
  }

  const std::string source = SourceBuilder(set, lexed).build();
  // Before taking the lock: waiting for the PCH means waiting for the thread that builds it.
  const clang::PrecompiledPreamble* pch =
      mode == PreludeMode::Text ? nullptr : lang.precompiled(mode == PreludeMode::Precompiled);
  AstFacts facts;
  const std::vector<Diag> diags = run_clang(lang, source, pch, facts);
  const std::vector<Finding> findings =
      config_dependent ? std::vector<Finding>() : collect_findings(set, lexed, diags, facts);
  if (debug_enabled()) {
    std::cerr << "cujit: snippet analysis of " << set.kernel_name
              << (pch != nullptr ? " (precompiled prelude)" : " (prelude as text)") << "\n"
              << source << "\n";
    for (const Diag& d : diags) {
      std::cerr << "  snippet " << d.pos.snippet << " " << d.pos.line << ":" << d.pos.column
                << (d.outside.empty() ? "" : " at " + d.outside)
                << (d.certain ? " [certain] " : " [defer] ") << d.message << "\n";
    }
  }

  if (!findings.empty()) {
    const Finding& first =
        *std::min_element(findings.begin(), findings.end(),
                          [](const Finding& a, const Finding& b) { return a.pos < b.pos; });
    const Snippet& s = set.snippets[static_cast<std::size_t>(first.pos.snippet)];
    std::string log;
    for (const Diag& d : diags) {
      std::string where = d.pos.snippet >= 0
                              ? set.snippets[static_cast<std::size_t>(d.pos.snippet)].label
                              : std::string(kScaffoldFile);
      log += where + ":" + std::to_string(d.pos.line) + ":" + std::to_string(d.pos.column) +
             ": error: " + d.message + "\n";
    }
    throw_snippet_error(set, clamp_to_snippet(first.pos, s.text), first.message, log,
                        {"-fsyntax-only", set.cxx_standard >= 20 ? "-std=gnu++20" : "-std=gnu++17"},
                        source);
  }
  report.fully_checked = diags.empty() && !config_dependent;
  return report;
}

}  // namespace cujit::detail
