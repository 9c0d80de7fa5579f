//! Go `text/template` builtins over template values: `index`, `slice`, the
//! escapers' argument text (`fmt.Sprint`) and `js`, and `call` (which no
//! LogQL value can satisfy: labels and fields are strings, never
//! functions). Error texts are Go's.

use super::template::Val;

/// Go's `fmt.Sprint`: the values' texts, a space between two operands when
/// neither is a string (what `html`, `js` and `urlquery` escape).
pub fn sprint(args: &[Val]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !matches!(a, Val::Str(_)) && !matches!(args[i - 1], Val::Str(_)) {
            out.push(' ');
        }
        out.push_str(&a.to_text_nested());
    }
    out
}

/// An index argument as Go's `indexArg` reads it: an integer in `0..=cap`.
fn index_arg(v: &Val, cap: usize) -> Result<usize, String> {
    let x = match v {
        Val::Int(i) => *i,
        Val::Nil => return Err("cannot index slice/array with nil".into()),
        other => {
            return Err(format!(
                "cannot index slice/array with type {}",
                other.type_name()
            ))
        }
    };
    if x < 0 || x as u128 > cap as u128 {
        return Err(format!("index out of range: {x}"));
    }
    Ok(x as usize)
}

/// `index item i…`: a string's byte (a number), a list's element, a map's
/// value (nothing when the key is missing), one index after another.
pub fn index(item: &Val, indexes: &[Val]) -> Result<Val, String> {
    let mut cur = item.clone();
    for ix in indexes {
        cur = match &cur {
            Val::Nil => return Err("index of untyped nil".into()),
            Val::Str(s) => {
                let i = index_arg(ix, s.len())?;
                match s.as_bytes().get(i) {
                    Some(&b) => Val::Int(i64::from(b)),
                    None => return Err(format!("index out of range: {i}")),
                }
            }
            Val::List(items) => {
                let i = index_arg(ix, items.len())?;
                match items.get(i) {
                    Some(v) => v.clone(),
                    None => return Err(format!("index out of range: {i}")),
                }
            }
            Val::Map(m) => match ix {
                Val::Str(k) => m.get(k).cloned().unwrap_or(Val::Nil),
                Val::Nil => Val::Nil,
                other => {
                    return Err(format!(
                        "value has type {}; should be string",
                        other.type_name()
                    ))
                }
            },
            other => return Err(format!("can't index item of type {}", other.type_name())),
        };
    }
    Ok(cur)
}

/// `slice item [i [j [k]]]`: `item[i:j]` of a string (bytes) or a list.
pub fn slice(item: &Val, indexes: &[Val]) -> Result<Val, String> {
    let len = match item {
        Val::Nil => return Err("slice of untyped nil".into()),
        Val::Str(s) => s.len(),
        Val::List(l) => l.len(),
        other => return Err(format!("can't slice item of type {}", other.type_name())),
    };
    if indexes.len() > 3 {
        return Err(format!("too many slice indexes: {}", indexes.len()));
    }
    if indexes.len() == 3 && matches!(item, Val::Str(_)) {
        return Err("cannot 3-index slice a string".into());
    }
    let mut idx = [0, len, len];
    for (slot, ix) in idx.iter_mut().zip(indexes) {
        *slot = index_arg(ix, len)?;
    }
    if idx[0] > idx[1] {
        return Err(format!("invalid slice index: {} > {}", idx[0], idx[1]));
    }
    if indexes.len() == 3 && idx[1] > idx[2] {
        return Err(format!("invalid slice index: {} > {}", idx[1], idx[2]));
    }
    Ok(match item {
        Val::Str(s) => {
            Val::Str(String::from_utf8_lossy(&s.as_bytes()[idx[0]..idx[1]]).into_owned())
        }
        Val::List(l) => Val::List(l[idx[0]..idx[1]].to_vec()),
        _ => Val::Nil,
    })
}

/// Go's `JSEscapeString`: backslash escapes for `\ ' "`, `\uXXXX` for
/// `< > & =`, control characters and runes that do not print.
pub fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' | '>' | '&' | '=' => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if c.is_ascii() || prints(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", c as u32)),
        }
    }
    out
}

/// Whether a non-ASCII rune prints, close to Go's `unicode.IsPrint`:
/// control, format and separator characters (other than the ASCII space)
/// and the replacement of invalid text do not.
fn prints(c: char) -> bool {
    !(c.is_control()
        || c.is_whitespace()
        || matches!(c as u32, 0xAD | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0xFEFF | 0xFFFD)
        || ('\u{E000}'..='\u{F8FF}').contains(&c))
}

/// `call f args…`: the error Go gives when `f` (written `f_text` in the
/// template) is not a function, which no LogQL value is.
pub fn call(f: Option<&Val>, f_text: &str) -> String {
    match f {
        None | Some(Val::Nil) => "call of nil".into(),
        Some(v) => format!("non-function {f_text} of type {}", v.type_name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Val {
        Val::Str(x.into())
    }

    #[test]
    fn index_and_slice_like_go() {
        assert_eq!(index(&s("abc"), &[Val::Int(1)]), Ok(Val::Int(98)));
        assert_eq!(index(&s("abc"), &[]), Ok(s("abc")));
        assert_eq!(
            index(&s("abc"), &[Val::Int(3)]),
            Err("index out of range: 3".into())
        );
        assert_eq!(
            index(&s("abc"), &[s("x")]),
            Err("cannot index slice/array with type string".into())
        );
        let list = Val::List(vec![s("a"), Val::Float(2.0)]);
        assert_eq!(index(&list, &[Val::Int(1)]), Ok(Val::Float(2.0)));
        let map = Val::Map([("k".to_string(), list.clone())].into_iter().collect());
        assert_eq!(index(&map, &[s("k"), Val::Int(0)]), Ok(s("a")));
        assert_eq!(index(&map, &[s("none")]), Ok(Val::Nil));
        assert_eq!(slice(&s("abcde"), &[Val::Int(1), Val::Int(3)]), Ok(s("bc")));
        assert_eq!(slice(&s("abcde"), &[Val::Int(2)]), Ok(s("cde")));
        assert_eq!(
            slice(&s("abc"), &[Val::Int(2), Val::Int(1)]),
            Err("invalid slice index: 2 > 1".into())
        );
        assert_eq!(
            slice(&s("abc"), &[Val::Int(0), Val::Int(1), Val::Int(2)]),
            Err("cannot 3-index slice a string".into())
        );
        assert_eq!(
            slice(&list, &[Val::Int(1)]),
            Ok(Val::List(vec![Val::Float(2.0)]))
        );
    }

    #[test]
    fn js_escapes_like_go() {
        assert_eq!(
            js_escape("a'b\"c\\<x>&=\n é\u{200B}"),
            "a\\'b\\\"c\\\\\\u003Cx\\u003E\\u0026\\u003D\\u000A é\\u200B"
        );
        assert_eq!(
            sprint(&[Val::Int(1), Val::Int(2), s("x"), Val::Int(3)]),
            "1 2x3"
        );
    }
}
