// LoadLinkedProgram: links PTX modules at the syntax-tree level, then builds one program.
//
// Symbols with external linkage (.visible, .weak, .common, and .extern declarations) share one
// namespace across the link; every other module-scope name is private to its module. Private
// names that clash with a name from another module are renamed throughout their own module
// (every occurrence of the identifier, so the module's meaning is unchanged) to a name no PTX
// source can spell.
#include <charconv>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "ptx/parser.h"
#include "ptx/program.h"

namespace pvgpu::ptx {

namespace {

struct Symbol {
  bool is_function = false;
  size_t index = 0;    // into merged.functions or merged.globals
  size_t source = 0;   // the module that provided the current entry
  bool defined = false;
  bool weak = false;
};

bool Defines(const ast::Function& f) { return f.has_body && !f.is_extern; }
bool Defines(const ast::VarDecl& v) { return !v.is_extern; }
// Kernels are reachable from the host by name whatever their linkage, so they are never private.
bool External(const ast::Function& f) { return f.is_visible || f.is_extern || f.is_entry; }
bool External(const ast::VarDecl& v) { return v.is_visible || v.is_extern; }

// (major, minor) of a ".version" string; {0, 0} when unreadable.
std::pair<int, int> VersionOf(const std::string& v) {
  int major = 0, minor = 0;
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, major);
  if (ec == std::errc() && p < end && *p == '.') std::from_chars(p + 1, end, minor);
  return {major, minor};
}

class Renamer {
 public:
  explicit Renamer(const std::unordered_map<std::string, std::string>& names) : names_(names) {}

  void Apply(ast::Module& m) const {
    for (auto& g : m.globals) Decl(g);
    for (auto& f : m.functions) {
      Name(f.name);
      for (auto& p : f.params) Decl(p);
      for (auto& r : f.rets) Decl(r);
      for (auto& st : f.body) {
        Name(st.label);
        Decl(st.decl);
        for (auto& op : st.inst.ops) Operand(op);
      }
    }
  }

 private:
  void Name(std::string& name) const {
    if (auto it = names_.find(name); it != names_.end()) name = it->second;
  }
  void Decl(ast::VarDecl& d) const {
    Name(d.name);
    for (auto& init : d.init) {
      if (init.is_symbol) Name(init.symbol);
    }
  }
  void Operand(ast::Operand& op) const {
    Name(op.name);
    for (auto& e : op.elems) Operand(e);
  }
  const std::unordered_map<std::string, std::string>& names_;
};

class Linker {
 public:
  explicit Linker(std::span<const LinkSource> sources) : sources_(sources) {}

  Status Add(size_t k, ast::Module m) {
    if (m.address_size != 64) return Fail(k, "only .address_size 64 is supported");
    if (merged_.version.empty() || VersionOf(m.version) > VersionOf(merged_.version)) {
      merged_.version = m.version;
    }
    // The link runs what its newest module needs.
    if (merged_.target.empty() || TargetSm(m.target) > TargetSm(merged_.target))
      merged_.target = m.target;
    MakePrivateNamesUnique(k, m);
    for (auto& g : m.globals) PVGPU_TRY(Merge(k, std::move(g), merged_.globals, false));
    for (auto& f : m.functions) PVGPU_TRY(Merge(k, std::move(f), merged_.functions, true));
    return Status::Ok();
  }

  const ast::Module& merged() const { return merged_; }

  // An external function or variable that some module uses and none defines.
  Status CheckResolved() const {
    std::set<std::string> used;
    auto note = [&](auto& self, const ast::Operand& op) -> void {
      if (op.kind == ast::Operand::Kind::kSymbol || op.kind == ast::Operand::Kind::kAddress) {
        used.insert(op.name);
      }
      for (const auto& e : op.elems) self(self, e);
    };
    for (const auto& f : merged_.functions) {
      for (const auto& st : f.body) {
        for (const auto& op : st.inst.ops) note(note, op);
      }
    }
    for (const auto& g : merged_.globals) {
      for (const auto& init : g.init) {
        if (init.is_symbol) used.insert(init.symbol);
      }
    }
    for (const auto& [name, sym] : symbols_) {
      if (sym.defined || used.count(name) == 0) continue;
      if (sym.is_function && IsBuiltinExternal(name)) continue;
      if (!sym.is_function && merged_.globals[sym.index].space == ast::Space::kShared) continue;
      return Fail(sym.source, std::string("undefined reference to ") +
                                  (sym.is_function ? "function" : "variable") + " '" + name +
                                  "': no input defines it");
    }
    return Status::Ok();
  }

 private:
  Status Fail(size_t k, const std::string& what) const {
    return Error(Code::kInvalidPtx, "input " + sources_[k].name + ": " + what);
  }

  // Names this module keeps to itself that another module also uses get a fresh name.
  void MakePrivateNamesUnique(size_t k, ast::Module& m) {
    std::unordered_map<std::string, std::string> renames;
    auto consider = [&](const std::string& name, bool external) {
      if (external) {
        taken_.insert(name);
        return;
      }
      if (taken_.count(name) != 0 || ExternalElsewhere(name)) {
        renames[name] = name + "@input" + std::to_string(k + 1);  // no PTX identifier has an @
      }
      taken_.insert(renames.count(name) ? renames[name] : name);
    };
    for (const auto& g : m.globals) consider(g.name, External(g));
    for (const auto& f : m.functions) consider(f.name, External(f));
    if (!renames.empty()) Renamer(renames).Apply(m);
  }

  // Whether any module gives `name` external linkage.
  bool ExternalElsewhere(const std::string& name) const {
    return external_names_.count(name) != 0;
  }

  template <typename T>
  Status Merge(size_t k, T item, std::vector<T>& into, bool is_function) {
    const std::string name = item.name;
    auto it = symbols_.find(name);
    if (it == symbols_.end() || it->second.is_function != is_function) {
      if (it != symbols_.end()) {
        return Fail(k, "'" + name + "' is a " + (is_function ? "function" : "variable") +
                           " here but a " + (is_function ? "variable" : "function") +
                           " in input " + sources_[it->second.source].name);
      }
      symbols_[name] = {is_function, into.size(), k, Defines(item), item.is_weak};
      into.push_back(std::move(item));
      return Status::Ok();
    }
    Symbol& sym = it->second;
    if (!Defines(item)) return Status::Ok();  // a declaration of something already known
    if (!sym.defined || (sym.weak && !item.is_weak)) {
      into[sym.index] = std::move(item);
      sym.defined = true;
      sym.weak = into[sym.index].is_weak;
      sym.source = k;
      return Status::Ok();
    }
    if (sym.weak || item.is_weak) return Status::Ok();  // the first definition stays
    if constexpr (std::is_same_v<T, ast::VarDecl>) {
      // `extern __shared__` arrays are declared in every module that uses them.
      if (item.space == ast::Space::kShared && item.has_dims && !item.dims.empty() &&
          item.dims[0] == 0) {
        return Status::Ok();
      }
    }
    return Fail(k, "'" + name + "' is defined here and in input " + sources_[sym.source].name);
  }

 public:
  // Every module's external names, noted before any is merged, so that a private name clashing
  // with a later module's external one is renamed too.
  void NoteExternal(const ast::Module& m) {
    for (const auto& g : m.globals) {
      if (External(g)) external_names_.insert(g.name);
    }
    for (const auto& f : m.functions) {
      if (External(f)) external_names_.insert(f.name);
    }
  }

 private:
  std::span<const LinkSource> sources_;
  ast::Module merged_;
  std::unordered_map<std::string, Symbol> symbols_;
  std::set<std::string> taken_;
  std::set<std::string> external_names_;
};

// Which modules join the link: every one not marked only_if_needed, then, until nothing
// changes, each library member that defines an external some linked module declares and no
// linked module defines.
std::vector<bool> SelectModules(std::span<const LinkSource> sources,
                                const std::vector<ast::Module>& modules) {
  std::vector<std::set<std::string>> defines(modules.size()), declares(modules.size());
  for (size_t k = 0; k < modules.size(); ++k) {
    for (const auto& g : modules[k].globals) {
      if (g.is_extern) declares[k].insert(g.name);
      else if (g.is_visible) defines[k].insert(g.name);
    }
    for (const auto& f : modules[k].functions) {
      if (!Defines(f) && f.is_extern) declares[k].insert(f.name);
      else if (Defines(f) && f.is_visible) defines[k].insert(f.name);
    }
  }
  std::vector<bool> linked(modules.size());
  for (size_t k = 0; k < modules.size(); ++k) linked[k] = !sources[k].only_if_needed;
  for (bool changed = true; changed;) {
    changed = false;
    std::set<std::string> defined, needed;
    for (size_t k = 0; k < modules.size(); ++k) {
      if (!linked[k]) continue;
      defined.insert(defines[k].begin(), defines[k].end());
      needed.insert(declares[k].begin(), declares[k].end());
    }
    for (size_t k = 0; k < modules.size(); ++k) {
      if (linked[k]) continue;
      for (const auto& name : defines[k]) {
        if (needed.count(name) != 0 && defined.count(name) == 0) {
          linked[k] = true;
          changed = true;
          // What it brings counts at once: a later member defining the same is not needed.
          defined.insert(defines[k].begin(), defines[k].end());
          needed.insert(declares[k].begin(), declares[k].end());
          break;
        }
      }
    }
  }
  return linked;
}

}  // namespace

StatusOr<std::shared_ptr<const Program>> LoadLinkedProgram(std::span<const LinkSource> sources,
                                                           std::string* error_log,
                                                           std::string* info_log,
                                                           int max_target_sm) {
  auto fail = [&](const Status& s) -> Status {
    if (error_log) *error_log += s.message() + "\n";
    return s;
  };
  if (sources.empty()) return fail(Error(Code::kInvalidValue, "nothing to link"));
  std::vector<ast::Module> modules;
  modules.reserve(sources.size());
  Linker linker(sources);
  for (const LinkSource& source : sources) {
    auto parsed = ParseModule(source.text);
    if (!parsed.ok()) {
      return fail(Error(parsed.status().code(),
                        "input " + source.name + ": " + parsed.status().message()));
    }
    modules.push_back(std::move(parsed).value());
  }
  const std::vector<bool> linked = SelectModules(sources, modules);
  for (size_t k = 0; k < modules.size(); ++k) {
    if (linked[k]) linker.NoteExternal(modules[k]);
  }
  size_t count = 0;
  for (size_t k = 0; k < modules.size(); ++k) {
    if (!linked[k]) continue;
    ++count;
    if (Status s = linker.Add(k, std::move(modules[k])); !s.ok()) return fail(s);
  }
  if (Status s = linker.CheckResolved(); !s.ok()) return fail(s);
  if (info_log) {
    *info_log += "pvgpu ptx: linked " + std::to_string(count) + " of " +
                 std::to_string(sources.size()) + " modules\n";
  }
  return BuildProgram(linker.merged(), error_log, info_log, max_target_sm);
}

}  // namespace pvgpu::ptx
