//! Facts about the host that the run's `/metadata` records (spec-hdf5 §2), read without
//! starting a process or importing a Python module.
//!
//! The reference computes `platform` with Python's `platform.platform()`, which on Linux
//! runs `uname -p` in a subprocess, and `omp_num_threads` by loading OpenMP runtimes with
//! `ctypes`: together ~15–20 ms at every `setup()`. Here both come from system calls:
//! `uname(2)`, `confstr(_CS_GNU_LIBC_VERSION)` and `dlopen`/`dlsym`.

use std::ffi::{c_char, c_int, CStr};

/// OpenMP runtimes whose `omp_get_max_threads()` gives `omp_num_threads`, in the order the
/// reference tries them.
pub const OMP_LIBRARY_NAMES: [&str; 5] = ["libomp.so", "libgomp.so.1", "libiomp5.so", "libomp.dylib", "libiomp5.dylib"];

/// `platform.platform()` as Python computes it on glibc Linux (`Linux-6.1.0-x86_64-with-glibc2.36`):
/// system, release and machine from `uname(2)`, the C library from
/// `confstr(_CS_GNU_LIBC_VERSION)`, joined and cleaned as `platform._platform` does.
///
/// `None` where that is not how Python computes it (not Linux, or not glibc): the caller
/// asks Python then. The processor field (`uname -p`) is left out: on Linux Python drops it
/// when it is `unknown` or equal to the machine, which is what `uname -p` prints there.
pub fn platform_string() -> Option<String> {
    let uname = uname()?;
    if uname.0 != "Linux" {
        return None;
    }
    let libc = glibc_version()?; // "glibc 2.36"
    let (name, version) = libc.split_once(' ')?;
    Some(clean_platform(&[&uname.0, &uname.1, &uname.2, "with", &format!("{name}{version}")]))
}

/// `(sysname, release, machine)` of `uname(2)`.
fn uname() -> Option<(String, String, String)> {
    // SAFETY: `utsname` is plain bytes; `uname` fills it and returns 0 on success.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |f: &[c_char]| {
        // SAFETY: uname NUL-terminates every field inside its array.
        unsafe { CStr::from_ptr(f.as_ptr()) }.to_string_lossy().into_owned()
    };
    Some((field(&u.sysname), field(&u.release), field(&u.machine)))
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_version() -> Option<String> {
    let mut buf = [0 as c_char; 64];
    // SAFETY: buf is writable for its length; confstr writes at most that, NUL-terminated.
    let n = unsafe { libc::confstr(libc::_CS_GNU_LIBC_VERSION, buf.as_mut_ptr(), buf.len()) };
    if n == 0 || n > buf.len() {
        return None;
    }
    // SAFETY: confstr NUL-terminated what it wrote (n <= len).
    Some(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn glibc_version() -> Option<String> {
    None
}

/// Python's `platform._platform(*parts)`: non-empty parts joined by `-`; blanks become `_`;
/// `/ \ : ; " ( )` become `-`; `unknown` is removed; runs of `-` collapse; no trailing `-`.
fn clean_platform(parts: &[&str]) -> String {
    let joined = parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-");
    let mut s: String = joined
        .chars()
        .map(|c| match c {
            ' ' => '_',
            '/' | '\\' | ':' | ';' | '"' | '(' | ')' => '-',
            c => c,
        })
        .collect();
    s = s.replace("unknown", "");
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    while s.ends_with('-') {
        s.pop();
    }
    s
}

/// `omp_get_max_threads()` of the first OpenMP runtime of [`OMP_LIBRARY_NAMES`] that loads
/// (as the reference does with `ctypes.CDLL`; a runtime that loads stays loaded), else the
/// first entry of `OMP_NUM_THREADS`, else 1.
pub fn omp_num_threads() -> i64 {
    for name in OMP_LIBRARY_NAMES {
        if let Some(n) = omp_max_threads_of(name) {
            return n;
        }
    }
    omp_threads_from_env(std::env::var("OMP_NUM_THREADS").ok().as_deref()).unwrap_or(1)
}

/// The first integer of an `OMP_NUM_THREADS` value (`"4,2"` -> 4).
fn omp_threads_from_env(value: Option<&str>) -> Option<i64> {
    value?.split(',').next()?.trim().parse().ok()
}

fn omp_max_threads_of(library: &str) -> Option<i64> {
    let name = std::ffi::CString::new(library).ok()?;
    // SAFETY: a NUL-terminated name; dlopen returns null when the library is absent.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW) };
    if handle.is_null() {
        return None;
    }
    // SAFETY: the handle is open; the symbol name is NUL-terminated.
    let symbol = unsafe { libc::dlsym(handle, c"omp_get_max_threads".as_ptr()) };
    if symbol.is_null() {
        return None;
    }
    // SAFETY: `omp_get_max_threads` is `int omp_get_max_threads(void)` in every OpenMP runtime.
    let get: extern "C" fn() -> c_int = unsafe { std::mem::transmute(symbol) };
    Some(i64::from(get()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_cleanup_matches_pythons_rules() {
        assert_eq!(
            clean_platform(&["Linux", "6.1.0-18-amd64", "x86_64", "with", "glibc2.36"]),
            "Linux-6.1.0-18-amd64-x86_64-with-glibc2.36"
        );
        assert_eq!(
            clean_platform(&["Linux", "5.4 (custom)", "", "with", "glibc2.31"]),
            "Linux-5.4_-custom-with-glibc2.31"
        );
        assert_eq!(clean_platform(&["Linux", "unknown", "x86_64", "with", ""]), "Linux-x86_64-with");
    }

    #[test]
    fn omp_env_value_is_read_as_the_reference_reads_it() {
        assert_eq!(omp_threads_from_env(Some("4,2")), Some(4));
        assert_eq!(omp_threads_from_env(Some(" 8 ")), Some(8));
        assert_eq!(omp_threads_from_env(Some("many")), None);
        assert_eq!(omp_threads_from_env(None), None);
    }

    /// The independent computation: Python's own `platform.platform()`, when a python3 is here.
    #[test]
    fn platform_string_equals_pythons_platform_platform() {
        let Ok(out) =
            std::process::Command::new("python3").args(["-c", "import platform; print(platform.platform())"]).output()
        else {
            return; // no Python on this machine: nothing to compare with
        };
        let python = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert_eq!(platform_string().as_deref(), Some(python.as_str()));
        } else {
            assert_eq!(platform_string(), None);
        }
    }

    #[test]
    fn omp_num_threads_equals_what_ctypes_reads() {
        let script = "import ctypes, os\n\
            for n in ('libomp.so', 'libgomp.so.1', 'libiomp5.so', 'libomp.dylib', 'libiomp5.dylib'):\n    \
                try:\n        print(int(ctypes.CDLL(n).omp_get_max_threads())); break\n    \
                except (OSError, AttributeError): pass\n\
            else:\n    print(int((os.environ.get('OMP_NUM_THREADS') or '1').split(',')[0]))";
        let Ok(out) = std::process::Command::new("python3").args(["-c", script]).output() else { return };
        let python: i64 = String::from_utf8_lossy(&out.stdout).trim().parse().expect("python printed a number");
        assert_eq!(omp_num_threads(), python);
    }
}
