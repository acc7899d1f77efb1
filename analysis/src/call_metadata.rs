//! Per-call metadata as a run stores it: a JSON list with one object per call, the text
//! Python's `json.dumps` wrote (the reference's file holds the same).
//!
//! That text is Python's dialect of JSON, not strict JSON: a float that is not finite is
//! written `NaN`, `Infinity` or `-Infinity`, and a string holding a lone surrogate (a `str`
//! Python allows) keeps it as a `\udXXX` escape. Python's `json.loads` reads both back as
//! they were; so does everything here, which never re-encodes a value:
//!
//! * [`calls`] splits a row's list into its calls' objects (the texts as stored) and says
//!   which call is unreadable when one is;
//! * [`is_empty`] tells the texts that mean "no metadata" (`[]`, `null`, ...);
//! * [`array_items`] and [`object_entries`] split lists and objects into their parts
//!   without checking the parts.
use serde_json::value::RawValue;

/// Why a row's stored metadata cannot be read as one object per call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct BadMetadata {
    /// The first call whose entry is unreadable, when the list itself could be split.
    pub call: Option<usize>,
    pub reason: String,
}

/// Whether `text` is one of the ways a row with no per-call metadata is stored: blank,
/// `[]`, `{}`, `null` or `""`.
pub fn is_empty(text: &str) -> bool {
    matches!(text.trim(), "" | "[]" | "{}" | "null" | "\"\"")
}

/// `text` with `NaN`, `Infinity` and `-Infinity` outside strings replaced by numbers of the
/// same length (`0.0`, `0.000000`), so that a strict JSON parser checks the rest and the
/// byte positions of both texts agree.
fn strict_twin(text: &str) -> std::borrow::Cow<'_, str> {
    let b = text.as_bytes();
    if !b.iter().any(|&c| c == b'N' || c == b'I') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = b.to_vec();
    let (mut p, mut in_string) = (0, false);
    while p < b.len() {
        match b[p] {
            b'\\' if in_string => p += 1,
            b'"' => in_string = !in_string,
            b'N' if !in_string && b[p..].starts_with(b"NaN") => {
                out[p..p + 3].copy_from_slice(b"0.0");
                p += 2;
            }
            b'I' if !in_string && b[p..].starts_with(b"Infinity") => {
                out[p..p + 8].copy_from_slice(b"0.000000");
                p += 7;
            }
            _ => {}
        }
        p += 1;
    }
    // only ASCII letters were replaced by ASCII digits: still UTF-8
    std::borrow::Cow::Owned(String::from_utf8(out).unwrap_or_default())
}

/// Whether `text` is one JSON object in Python's dialect (what one call's entry must be);
/// the reason when it is not.
pub fn check_object(text: &str) -> Result<(), String> {
    if !text.trim_start().starts_with('{') {
        let shown: String = text.chars().take(40).collect();
        return Err(format!("{shown} is not an object"));
    }
    check_value(text)
}

/// Whether `item` is one JSON value in Python's dialect (see the module docs); the reason
/// when it is not.
fn check_value(item: &str) -> Result<(), String> {
    serde_json::from_str::<&RawValue>(&strict_twin(item)).map(drop).map_err(|e| e.to_string())
}

/// The objects of a row's per-call metadata list `text`, one per call, as stored.
///
/// Errors: [`BadMetadata`] when `text` is not a JSON list of objects in Python's dialect,
/// naming the first unreadable call when the list could be split into calls.
pub fn calls(text: &str) -> Result<Vec<&str>, BadMetadata> {
    let items = entries(text)?;
    match items.iter().position(|item| !item.starts_with('{')) {
        Some(k) => Err(BadMetadata { call: Some(k), reason: format!("call {k}'s entry is not an object") }),
        None => Ok(items),
    }
}

/// The entries of the JSON list `text` in Python's dialect (any values), as stored.
///
/// Errors: as [`calls`], but an entry may be any JSON value.
pub fn entries(text: &str) -> Result<Vec<&str>, BadMetadata> {
    let twin = strict_twin(text);
    let base = twin.as_ptr() as usize;
    if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(&twin) {
        let at = |item: &RawValue| item.get().as_ptr() as usize - base;
        return Ok(items.iter().map(|item| &text[at(item)..at(item) + item.get().len()]).collect());
    }
    // say which call: split the list without checking its items, then check each
    let items = array_items(text)
        .map_err(|why| BadMetadata { call: None, reason: format!("not a JSON list of objects ({why})") })?;
    for (k, item) in items.iter().enumerate() {
        check_value(item).map_err(|why| BadMetadata { call: Some(k), reason: format!("call {k}'s entry: {why}") })?;
    }
    // every item is fine on its own: what is wrong lies between them
    Err(BadMetadata { call: None, reason: "not a JSON list of objects".into() })
}

/// `(key, value)` texts of the members of the JSON object `text` (values not checked).
pub fn object_entries(text: &str) -> Result<Vec<(String, String)>, String> {
    let b = text.as_bytes();
    let mut p = ws(b, 0);
    expect(b, p, b'{')?;
    p = ws(b, p + 1);
    let mut out = Vec::new();
    if b.get(p) == Some(&b'}') {
        return end(b, p + 1, out);
    }
    loop {
        if b.get(p) != Some(&b'"') {
            return Err(format!("expected a string key at byte {p}"));
        }
        let k_end = skip_string(b, p)?;
        let key = text[p..k_end].to_string();
        p = ws(b, k_end);
        expect(b, p, b':')?;
        p = ws(b, p + 1);
        let v_end = skip_value(b, p)?;
        out.push((key, text[p..v_end].trim_end().to_string()));
        p = ws(b, v_end);
        match b.get(p) {
            Some(b',') => p = ws(b, p + 1),
            Some(b'}') => return end(b, p + 1, out),
            _ => return Err(format!("expected ',' or '}}' at byte {p}")),
        }
    }
}

/// The texts of the items of the JSON array `text` (items not checked).
pub fn array_items(text: &str) -> Result<Vec<String>, String> {
    let b = text.as_bytes();
    let mut p = ws(b, 0);
    expect(b, p, b'[')?;
    p = ws(b, p + 1);
    let mut out = Vec::new();
    if b.get(p) == Some(&b']') {
        return end(b, p + 1, out);
    }
    loop {
        let v_end = skip_value(b, p)?;
        out.push(text[p..v_end].trim_end().to_string());
        p = ws(b, v_end);
        match b.get(p) {
            Some(b',') => p = ws(b, p + 1),
            Some(b']') => return end(b, p + 1, out),
            _ => return Err(format!("expected ',' or ']' at byte {p}")),
        }
    }
}

fn end<T>(b: &[u8], p: usize, out: T) -> Result<T, String> {
    if ws(b, p) == b.len() {
        Ok(out)
    } else {
        Err(format!("text after the end at byte {p}"))
    }
}

fn expect(b: &[u8], p: usize, c: u8) -> Result<(), String> {
    if b.get(p) == Some(&c) {
        Ok(())
    } else {
        Err(format!("expected '{}' at byte {p}", c as char))
    }
}

fn ws(b: &[u8], mut p: usize) -> usize {
    while p < b.len() && b[p].is_ascii_whitespace() {
        p += 1;
    }
    p
}

/// End (exclusive) of the string starting at `p` (a `"`).
fn skip_string(b: &[u8], mut p: usize) -> Result<usize, String> {
    p += 1;
    while p < b.len() {
        match b[p] {
            b'\\' => p += 2,
            b'"' => return Ok(p + 1),
            _ => p += 1,
        }
    }
    Err("unterminated string".into())
}

/// End (exclusive) of the value starting at `p`: a string, an array or object (nested),
/// or a scalar (number, `true`, `NaN`, ...: up to the next delimiter).
fn skip_value(b: &[u8], p: usize) -> Result<usize, String> {
    match b.get(p) {
        None => Err(format!("expected a value at byte {p}")),
        Some(b'"') => skip_string(b, p),
        Some(b'[') | Some(b'{') => {
            let mut depth = 0usize;
            let mut q = p;
            while q < b.len() {
                match b[q] {
                    b'"' => {
                        q = skip_string(b, q)?;
                        continue;
                    }
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(q + 1);
                        }
                    }
                    _ => {}
                }
                q += 1;
            }
            Err("unterminated array or object".into())
        }
        Some(_) => {
            let mut q = p;
            while q < b.len() && !matches!(b[q], b',' | b'}' | b']' | b':') && !b[q].is_ascii_whitespace() {
                q += 1;
            }
            if q == p {
                Err(format!("expected a value at byte {p}"))
            } else {
                Ok(q)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_floats_and_lone_surrogates_are_read_as_python_writes_them() {
        // what `json.dumps([{"v": nan, ...}])` writes
        let text = r#"[{"v": NaN, "w": Infinity, "x": -Infinity, "s": "\ud800", "n": "NaN Infinity"}, {}]"#;
        let items = calls(text).unwrap();
        assert_eq!(items, [r#"{"v": NaN, "w": Infinity, "x": -Infinity, "s": "\ud800", "n": "NaN Infinity"}"#, "{}"]);
        assert_eq!(calls("[]").unwrap(), Vec::<&str>::new());
        assert_eq!(calls(r#"[{"a": [1, {"b": NaN}]}]"#).unwrap(), [r#"{"a": [1, {"b": NaN}]}"#]);
    }

    #[test]
    fn an_unreadable_entry_is_named_by_its_call() {
        let e = calls(r#"[{"a": 1}, {"b": Nan}, {}]"#).unwrap_err();
        assert_eq!(e.call, Some(1), "{e}");
        let e = calls(r#"[{"a": 1}, 7]"#).unwrap_err();
        assert_eq!(e.call, Some(1), "{e}");
        assert!(e.reason.contains("not an object"), "{e}");
        for whole in [r#"[{"a": 1}, {"b""#, "7", "{not json", r#"[{"a": 1}] x"#] {
            let e = calls(whole).unwrap_err();
            assert_eq!(e.call, None, "{whole}: {e}");
            assert!(e.reason.contains("not a JSON list of objects"), "{whole}: {e}");
        }
        assert!(calls(r#"[{"a": NaNa}]"#).is_err());
        assert!(calls(r#"[{"a": Infinityy}]"#).is_err());
    }

    #[test]
    fn empty_texts() {
        for t in ["", "  ", "[]", "{}", "null", "\"\"", " [] "] {
            assert!(is_empty(t), "{t:?}");
        }
        assert!(!is_empty("[{}]"));
    }

    #[test]
    fn splits_without_reencoding() {
        let e = object_entries(r#"{"a": [1, {"x": "}"}], "\u00e9": NaN, "n": -1e+16, "s": "a\"b"}"#).unwrap();
        let keys: Vec<&str> = e.iter().map(|(k, _)| k.as_str()).collect();
        let values: Vec<&str> = e.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(keys, [r#""a""#, r#""\u00e9""#, r#""n""#, r#""s""#]);
        assert_eq!(values, [r#"[1, {"x": "}"}]"#, "NaN", "-1e+16", r#""a\"b""#]);
        assert_eq!(object_entries("{}").unwrap(), vec![]);
        assert_eq!(array_items(r#"[{}, {"a": [1, 2]}]"#).unwrap(), vec!["{}".to_string(), r#"{"a": [1, 2]}"#.into()]);
    }

    #[test]
    fn refuses_what_is_not_one_object() {
        for bad in ["[1]", "{\"a\" 1}", "{\"a\": 1", "{1: 2}", "{\"a\": 1} x", "", "{\"a\": }"] {
            assert!(object_entries(bad).is_err(), "{bad}");
        }
    }
}
