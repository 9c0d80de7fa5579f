//! Parsing a JSON object while keeping only the top-level fields a caller
//! needs: the rest is validated and skipped without allocating, which is
//! most of the cost of a wide document when only a few fields matter.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// Parses `text` as a JSON object, keeping the top-level fields for which
/// `wanted(key)` is true. Errors if `text` is not exactly one JSON object.
pub fn parse_selected(
    text: &str,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Map<String, Value>, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let map = de
        .deserialize_map(Selected { wanted })
        .map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(map)
}

struct Selected<'w> {
    wanted: &'w dyn Fn(&str) -> bool,
}

impl<'de> Visitor<'de> for Selected<'_> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = m.next_key_seed(Key)? {
            if (self.wanted)(&key) {
                let v: Value = m.next_value()?;
                out.insert(key.into_owned(), v);
            } else {
                m.next_value::<IgnoredAny>()?;
            }
        }
        Ok(out)
    }
}

/// A map key, borrowed from the input when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_wanted_fields() {
        let m = parse_selected(r#"{"a":1,"b":{"c":[1,2]},"d\u0041":"x","e":null}"#, &|k| {
            k != "a"
        })
        .unwrap();
        assert_eq!(
            serde_json::Value::Object(m).to_string(),
            r#"{"b":{"c":[1,2]},"dA":"x","e":null}"#
        );
    }

    #[test]
    fn still_validates_everything() {
        for bad in [
            r#"{"a":1,"b":[1,}"#,
            r#"{"a":1} x"#,
            "[1]",
            "",
            r#"{"a":tru}"#,
        ] {
            assert!(parse_selected(bad, &|_| false).is_err(), "{bad}");
        }
    }
}
