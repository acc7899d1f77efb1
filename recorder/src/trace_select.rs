//! Which Python functions function-level tracing records, and under which region name
//! (`scope-profiler run --recursive`, `recursive_profile=True`).
//!
//! The tracer (Python glue in the `py` crate) asks [`Selection::decide`] once per code
//! object and caches the answer; everything here is plain strings, so the rules are tested
//! without an interpreter. The rules are the reference's (`ProfileManager._get_recursive_tracer`,
//! `_is_user_code`, `_frame_region_name` of scope-profiler 0.7.5):
//!
//! * the region name is `module.qualname`: `module` is the `__name__` of the frame's
//!   globals (`__main__` for the script), `qualname` the code's `co_qualname`
//!   (`A.m`, `<module>`, `outer.<locals>.inner`); with `entrypoint`, a code whose `co_name`
//!   equals it is named `entrypoint` instead;
//! * the profiler's own code is never traced: its modules (`scope_profiler` and
//!   `scope_profiler.*`) and any file in its own directories (the start-up file of followed
//!   processes, `_follow_boot/sitecustomize.py`);
//! * by default, only the user's code ([`Selection::is_user_code`]): under `-m`, the main
//!   module (`__main__`) and the modules of the package it names (`main_package`) wherever
//!   they are installed; and any other file whose
//!   real path is outside the standard-library / installed-package prefixes (`sysconfig`
//!   paths, `site` packages; computed by the caller); never a pseudo-file (`<string>`,
//!   `<frozen ...>`) nor the interpreter's start-up hooks (`sitecustomize`, `usercustomize`,
//!   which a distribution's Python may ship beside its standard library);
//! * `include` globs select by name wherever the code lives (the user's code or not); `all`
//!   selects every function; then `exclude` (none of) removes names. The globs are `fnmatch`
//!   patterns on the region name `module.qualname` (`*` matches dots too).

use std::path::Path;

/// The tracing selection of one recording. Built once at tracer start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// Trace the standard library and installed packages too (`--all`).
    pub all: bool,
    /// Real-path prefixes of non-user code (ignored with `all`).
    pub system_prefixes: Vec<String>,
    /// Directories of the profiler's own files (never traced, whatever their module's name).
    pub own_dirs: Vec<String>,
    /// The top-level package of the module run by `-m`: its modules are the user's code
    /// wherever they are installed.
    pub main_package: Option<String>,
    /// `--include GLOB` (empty = every name).
    pub include: Vec<String>,
    /// `--exclude GLOB`.
    pub exclude: Vec<String>,
    /// `--entrypoint NAME`: the code whose `co_name` is NAME is recorded as region NAME.
    pub entrypoint: Option<String>,
}

/// What the tracer knows of a code object when it first meets it.
#[derive(Debug, Clone, Copy)]
pub struct CodeInfo<'a> {
    /// `co_filename`.
    pub filename: &'a str,
    /// `__name__` of the frame's globals (`""` when unknown).
    pub module: &'a str,
    /// `co_qualname`.
    pub qualname: &'a str,
    /// `co_name`.
    pub name: &'a str,
}

/// The reference's region name of a traced function: `module.qualname`.
pub fn region_name(module: &str, qualname: &str) -> String {
    let module = match module {
        "" => "<unknown>",
        // the main script as multiprocessing's spawn and forkserver children import it: the
        // same functions as `__main__`'s in the parent and fork children, so one region
        // across ranks (not `__main__.task` here and `__mp_main__.task` there)
        "__mp_main__" => "__main__",
        m => m,
    };
    format!("{module}.{qualname}")
}

/// Whether `module` is part of the profiler itself (never traced).
pub fn is_profiler_module(module: &str) -> bool {
    in_package(module, "scope_profiler")
}

/// Whether `module` is `package` or one of its submodules.
pub fn in_package(module: &str, package: &str) -> bool {
    module.strip_prefix(package).is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// The top-level package of a module name (`pip._internal.cli` -> `pip`); `None` for an
/// empty name.
pub fn top_level_package(module: &str) -> Option<&str> {
    module.split('.').next().filter(|p| !p.is_empty())
}

/// Whether `module` is the program's main module: `__main__`, or `__mp_main__` (the main
/// module as multiprocessing's spawn and forkserver children import it).
pub fn is_main_module(module: &str) -> bool {
    module == "__main__" || module == "__mp_main__"
}

/// Whether `module` is one of the interpreter's start-up hooks, run by `site` before the
/// program (`sitecustomize`, `usercustomize`): not the user's code, wherever the file is (a
/// distribution's Python may ship one outside its standard library's prefix as seen from
/// a venv).
pub fn is_startup_module(module: &str) -> bool {
    module == "sitecustomize" || module == "usercustomize"
}

/// Whether `filename` is a pseudo-file (`<string>`, `<frozen importlib._bootstrap>`,
/// `<stdin>`) or has no name: no source file of the user's.
pub fn is_pseudo_file(filename: &str) -> bool {
    filename.is_empty() || filename.starts_with('<')
}

impl Selection {
    /// The region name `code` is recorded under, or `None` when it is not traced.
    /// `realpath` resolves a file name (the caller's `os.path.realpath`, or [`real_path`]);
    /// it is called only for user-code checks (not with `all`).
    pub fn decide(&self, code: &CodeInfo<'_>, realpath: impl FnOnce(&str) -> String) -> Option<String> {
        if is_profiler_module(code.module) || self.is_own_file(code.filename) {
            return None;
        }
        let name = region_name(code.module, code.qualname);
        if !self.include.is_empty() {
            // an include names what it selects, wherever that code is installed
            if !self.include.iter().any(|p| fnmatch(&name, p)) {
                return None;
            }
        } else if !self.all && !self.is_user_code(code, realpath) {
            return None;
        }
        if self.exclude.iter().any(|p| fnmatch(&name, p)) {
            return None;
        }
        Some(match &self.entrypoint {
            Some(entry) if entry == code.name => entry.clone(),
            _ => name,
        })
    }

    /// Whether `code` is the user's code (what is traced by default): not a pseudo-file nor
    /// a start-up hook; then, under `-m` (`main_package`), the main module and the modules of
    /// that package; else a file whose real path is outside every system prefix (the
    /// reference's `_is_user_code`).
    pub fn is_user_code(&self, code: &CodeInfo<'_>, realpath: impl FnOnce(&str) -> String) -> bool {
        if is_pseudo_file(code.filename) || is_startup_module(code.module) {
            return false;
        }
        if let Some(package) = self.main_package.as_deref() {
            if is_main_module(code.module) || in_package(code.module, package) {
                return true;
            }
        }
        let real = realpath(code.filename);
        !self.system_prefixes.iter().any(|p| !p.is_empty() && real.starts_with(p.as_str()))
    }

    /// Whether `filename` lies in one of the profiler's own directories.
    fn is_own_file(&self, filename: &str) -> bool {
        self.own_dirs.iter().any(|d| {
            let d = d.trim_end_matches('/');
            !d.is_empty() && filename.strip_prefix(d).is_some_and(|rest| rest.starts_with('/'))
        })
    }
}

/// `os.path.realpath` for an existing file (symlinks resolved); a name that cannot be
/// resolved is returned made absolute against the working directory, unchanged otherwise.
pub fn real_path(filename: &str) -> String {
    match std::fs::canonicalize(filename) {
        Ok(p) => p.to_string_lossy().into_owned(),
        Err(_) => {
            let p = Path::new(filename);
            if p.is_absolute() {
                filename.to_string()
            } else {
                std::env::current_dir()
                    .map(|d| d.join(p).to_string_lossy().into_owned())
                    .unwrap_or_else(|_| filename.to_string())
            }
        }
    }
}

/// Python's `fnmatch.fnmatchcase` (POSIX `fnmatch` does not fold case): `*` any run of
/// characters (dots and slashes included), `?` one character, `[abc]`/`[a-z]` a set,
/// `[!abc]` its complement; a `[` without a closing `]` is a literal.
pub fn fnmatch(name: &str, pattern: &str) -> bool {
    let n: Vec<char> = name.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    // Iterative matcher with one backtrack point for the last `*` (linear in practice).
    let (mut i, mut j) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while i < n.len() {
        if j < p.len() {
            match p[j] {
                '*' => {
                    star = Some((j, i));
                    j += 1;
                    continue;
                }
                '?' => {
                    i += 1;
                    j += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = class_match(&p, j, n[i]) {
                        if matched {
                            i += 1;
                            j = next;
                            continue;
                        }
                    } else if n[i] == '[' {
                        i += 1;
                        j += 1;
                        continue;
                    }
                }
                c => {
                    if c == n[i] {
                        i += 1;
                        j += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sj, si)) => {
                j = sj + 1;
                i = si + 1;
                star = Some((sj, si + 1));
            }
            None => return false,
        }
    }
    p[j..].iter().all(|c| *c == '*')
}

/// The set `[...]` starting at `p[start]`: `Some((whether c is in it, index after it))`,
/// `None` when there is no closing `]` (then `[` is a literal).
fn class_match(p: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut k = start + 1;
    let negate = k < p.len() && p[k] == '!';
    if negate {
        k += 1;
    }
    let first = k;
    let mut found = false;
    while k < p.len() {
        if p[k] == ']' && k > first {
            return Some((found != negate, k + 1));
        }
        if k + 2 < p.len() && p[k + 1] == '-' && p[k + 2] != ']' {
            if p[k] <= c && c <= p[k + 2] {
                found = true;
            }
            k += 3;
        } else {
            if p[k] == c {
                found = true;
            }
            k += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code<'a>(filename: &'a str, module: &'a str, qualname: &'a str, name: &'a str) -> CodeInfo<'a> {
        CodeInfo { filename, module, qualname, name }
    }

    fn identity(s: &str) -> String {
        s.to_string()
    }

    #[test]
    fn names_are_module_dot_qualname() {
        assert_eq!(region_name("__main__", "A.m"), "__main__.A.m");
        assert_eq!(region_name("__main__", "<module>"), "__main__.<module>");
        assert_eq!(region_name("", "f"), "<unknown>.f");
        assert_eq!(region_name("__mp_main__", "task"), "__main__.task");
    }

    #[test]
    fn user_code_excludes_system_prefixes_and_pseudo_files() {
        let sel = Selection { system_prefixes: vec!["/usr/lib/python3.11".into()], ..Default::default() };
        let user = code("/home/u/s.py", "__main__", "fib", "fib");
        assert_eq!(sel.decide(&user, identity).as_deref(), Some("__main__.fib"));
        assert_eq!(sel.decide(&code("/usr/lib/python3.11/json/__init__.py", "json", "dumps", "dumps"), identity), None);
        assert_eq!(
            sel.decide(&code("<frozen importlib._bootstrap>", "importlib._bootstrap", "f", "f"), identity),
            None
        );
        assert_eq!(sel.decide(&code("<string>", "__main__", "f", "f"), identity), None);
        // the check is on the real path (a symlink into the standard library is not user code)
        assert_eq!(sel.decide(&user, |_| "/usr/lib/python3.11/x.py".to_string()), None);
        let all = Selection { all: true, ..sel.clone() };
        assert_eq!(
            all.decide(&code("/usr/lib/python3.11/json/__init__.py", "json", "dumps", "dumps"), |_| unreachable!())
                .as_deref(),
            Some("json.dumps")
        );
        assert_eq!(all.decide(&code("<string>", "__main__", "f", "f"), identity).as_deref(), Some("__main__.f"));
    }

    #[test]
    fn the_profiler_itself_is_never_traced() {
        let all = Selection { all: true, ..Default::default() };
        assert_eq!(all.decide(&code("/x/_manager.py", "scope_profiler._manager", "f", "f"), identity), None);
        assert_eq!(all.decide(&code("/x/__init__.py", "scope_profiler", "f", "f"), identity), None);
        assert_eq!(
            all.decide(&code("/x/m.py", "scope_profiler_extra", "f", "f"), identity).as_deref(),
            Some("scope_profiler_extra.f")
        );
    }

    #[test]
    fn include_then_exclude_globs_on_the_region_name() {
        let sel = Selection {
            include: vec!["__main__.work*".into(), "*.helper".into()],
            exclude: vec!["*_skip".into()],
            ..Default::default()
        };
        let d = |q: &str| sel.decide(&code("/s.py", "__main__", q, q), identity);
        assert_eq!(d("work").as_deref(), Some("__main__.work"));
        assert_eq!(d("worker.run").as_deref(), Some("__main__.worker.run"));
        assert_eq!(d("A.helper").as_deref(), Some("__main__.A.helper"));
        assert_eq!(d("work_skip"), None);
        assert_eq!(d("other"), None);
        let only_exclude = Selection { exclude: vec!["__main__.fib".into()], ..Default::default() };
        assert_eq!(only_exclude.decide(&code("/s.py", "__main__", "fib", "fib"), identity), None);
        assert!(only_exclude.decide(&code("/s.py", "__main__", "fib2", "fib2"), identity).is_some());
    }

    #[test]
    fn entrypoint_renames_the_code_named_so() {
        let sel = Selection { entrypoint: Some("main".into()), ..Default::default() };
        assert_eq!(sel.decide(&code("/s.py", "__main__", "main", "main"), identity).as_deref(), Some("main"));
        assert_eq!(sel.decide(&code("/s.py", "__main__", "A.main", "main"), identity).as_deref(), Some("main"));
        assert_eq!(sel.decide(&code("/s.py", "__main__", "f", "f"), identity).as_deref(), Some("__main__.f"));
    }

    #[test]
    fn the_main_module_and_the_package_run_by_dash_m_are_the_users_wherever_installed() {
        let site = "/venv/lib/python3.11/site-packages";
        let sel = Selection {
            system_prefixes: vec![site.into(), "/usr/lib/python3.11".into()],
            main_package: top_level_package("pip.__main__").map(str::to_string),
            ..Default::default()
        };
        let d = |file: &str, module: &str, q: &str| sel.decide(&code(file, module, q, q), identity);
        let main_file = format!("{site}/pip/__main__.py");
        assert_eq!(d(&main_file, "__main__", "_main").as_deref(), Some("__main__._main"));
        assert_eq!(d(&main_file, "__mp_main__", "_main").as_deref(), Some("__main__._main"));
        let cli = format!("{site}/pip/_internal/cli/main.py");
        assert_eq!(d(&cli, "pip._internal.cli.main", "main").as_deref(), Some("pip._internal.cli.main.main"));
        assert_eq!(d(&format!("{site}/pip/__init__.py"), "pip", "main").as_deref(), Some("pip.main"));
        // another installed package, a name that only starts like it, the standard library
        assert_eq!(d(&format!("{site}/rich/text.py"), "rich.text", "Text.render"), None);
        assert_eq!(d(&format!("{site}/pipx/main.py"), "pipx.main", "cli"), None);
        assert_eq!(d("/usr/lib/python3.11/json/__init__.py", "json", "dumps"), None);
        // a pseudo-file is no file of the user's, even in the main module
        assert_eq!(d("<string>", "__main__", "f"), None);
        assert_eq!(d("<string>", "pip._vendor.attr", "__init__"), None);
        // no -m: an installed package is not the user's, nor a main module installed there
        let no_m = Selection { main_package: None, ..sel.clone() };
        assert_eq!(no_m.decide(&code(&cli, "pip._internal.cli.main", "main", "main"), identity), None);
        assert_eq!(no_m.decide(&code(&main_file, "__main__", "_main", "_main"), identity), None);
    }

    #[test]
    fn start_up_hooks_and_the_profilers_own_files_are_not_the_users() {
        let sel = Selection {
            system_prefixes: vec!["/venv/lib/python3.11/site-packages".into()],
            own_dirs: vec!["/src/py/python/scope_profiler/".into()],
            ..Default::default()
        };
        // Debian's sitecustomize, outside the venv's prefixes
        let debian = code("/usr/lib/python3.11/sitecustomize.py", "sitecustomize", "<module>", "<module>");
        assert_eq!(sel.decide(&debian, identity), None);
        assert_eq!(sel.decide(&code("/home/u/usercustomize.py", "usercustomize", "f", "f"), identity), None);
        let boot =
            code("/src/py/python/scope_profiler/_follow_boot/sitecustomize.py", "sitecustomize", "_boot", "_boot");
        assert_eq!(sel.decide(&boot, identity), None);
        let all = Selection { all: true, ..sel.clone() };
        assert_eq!(all.decide(&boot, identity), None);
        assert_eq!(all.decide(&debian, identity).as_deref(), Some("sitecustomize.<module>"));
        // a directory that only starts like the profiler's is not its own
        let near = code("/src/py/python/scope_profiler_app/m.py", "app.m", "f", "f");
        assert_eq!(sel.decide(&near, identity).as_deref(), Some("app.m.f"));
    }

    #[test]
    fn an_include_selects_what_it_names_wherever_installed() {
        let site = "/venv/lib/python3.11/site-packages";
        let sel = Selection {
            system_prefixes: vec![site.into()],
            include: vec!["pip.*".into()],
            exclude: vec!["pip._vendor.*".into()],
            ..Default::default()
        };
        let d = |module: &str, q: &str| sel.decide(&code(&format!("{site}/x.py"), module, q, q), identity);
        assert_eq!(d("pip._internal.cli.main", "main").as_deref(), Some("pip._internal.cli.main.main"));
        assert_eq!(d("pip._vendor.rich.text", "Text"), None);
        assert_eq!(d("json", "dumps"), None);
        assert_eq!(sel.decide(&code("/home/u/app.py", "__main__", "f", "f"), identity), None);
    }

    #[test]
    fn package_names() {
        assert_eq!(top_level_package("pip._internal.cli"), Some("pip"));
        assert_eq!(top_level_package("app"), Some("app"));
        assert_eq!(top_level_package(""), None);
        assert!(in_package("pip", "pip") && in_package("pip.x", "pip"));
        assert!(!in_package("pipx", "pip") && !in_package("pi", "pip"));
        assert!(is_pseudo_file("<frozen runpy>") && is_pseudo_file("") && !is_pseudo_file("/a/b.py"));
    }

    #[test]
    fn fnmatch_matches_python() {
        // expected values from Python's fnmatch.fnmatchcase
        let cases = [
            ("__main__.fib", "*fib", true),
            ("__main__.fib", "__main__.*", true),
            ("a.b.c", "a*c", true),
            ("abc", "a?c", true),
            ("ac", "a?c", false),
            ("abc", "a[bx]c", true),
            ("abc", "a[!b]c", false),
            ("adc", "a[!b]c", true),
            ("a-c", "a[a-]c", true),
            ("abc", "a[a-c]c", true),
            ("a]c", "a[]]c", true),
            ("a[c", "a[c", true),
            ("abc", "", false),
            ("", "*", true),
            ("aaab", "*a*b", true),
            ("aaab", "*a*c", false),
            ("Fib", "fib", false),
        ];
        for (name, pat, want) in cases {
            assert_eq!(fnmatch(name, pat), want, "fnmatch({name:?}, {pat:?})");
        }
    }

    #[test]
    fn real_path_of_a_missing_file_is_absolute() {
        let p = real_path("no/such/file.py");
        assert!(Path::new(&p).is_absolute() && p.ends_with("no/such/file.py"), "{p}");
        assert_eq!(real_path("/no/such/abs.py"), "/no/such/abs.py");
    }
}

/// The call budget of one tracing recording (`recursive_call_limit`): calls past it are
/// not recorded but counted, so the run says what it left out (never silently).
/// Used with the GIL held (one writer at a time); plain counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallBudget {
    /// Most calls recorded; `u64::MAX` = no limit.
    pub limit: u64,
    /// Calls recorded so far.
    pub recorded: u64,
    /// Calls not recorded because the limit was reached.
    pub dropped: u64,
}

impl CallBudget {
    pub fn new(limit: u64) -> Self {
        CallBudget { limit, recorded: 0, dropped: 0 }
    }

    /// Count one call entry: true when it is recorded, false when it is dropped.
    #[inline]
    pub fn admit(&mut self) -> bool {
        if self.recorded < self.limit {
            self.recorded += 1;
            true
        } else {
            self.dropped += 1;
            false
        }
    }
}

#[cfg(test)]
mod budget_tests {
    use super::CallBudget;

    #[test]
    fn budget_records_up_to_the_limit_and_counts_the_rest() {
        let mut b = CallBudget::new(3);
        let admitted: Vec<bool> = (0..5).map(|_| b.admit()).collect();
        assert_eq!(admitted, vec![true, true, true, false, false]);
        assert_eq!((b.recorded, b.dropped), (3, 2));
    }
}
