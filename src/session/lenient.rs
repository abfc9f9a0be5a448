//! Field types that never fail a line.
//!
//! A session log is written by many versions of two programs. When a field the fold reads holds
//! a value of an unexpected shape, the field reads as absent instead of making the whole line
//! unreadable, and large values the fold does not need are skipped without being copied.

use super::sparse::Token;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A string field: borrowed from the line when it has no escapes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LStr<'a>(pub Option<Cow<'a, str>>);

impl LStr<'_> {
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref().filter(|s| !s.is_empty())
    }
}

/// An integer field. Floats are truncated as Tilth's `int()` does; anything else is absent.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LInt {
    pub value: Option<i64>,
    /// True when the JSON value was an integer literal (Tilth ignores a float running total).
    pub was_integer: bool,
}

impl LInt {
    /// The value as a count, offset or id: `None` when absent or negative.
    pub fn count(self) -> Option<u64> {
        self.value.and_then(|n| u64::try_from(n).ok())
    }
}

/// A float field: any JSON number.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct LFloat(pub Option<f64>);

/// A truth field, with Python's truthiness for the types Tilth wrote.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LBool(pub Option<bool>);

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the visits every lenient type treats as "absent".
macro_rules! absent_visits {
    ($out:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            drain_map(map).map(|()| $out)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            drain_seq(seq).map(|()| $out)
        }
    };
}

impl<'de: 'a, 'a> Deserialize<'de> for LStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = LStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(LStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(LStr(Some(Cow::Owned(v))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            absent_visits!(LStr(None));
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'de> Deserialize<'de> for LInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LInt;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LInt, E> {
                Ok(LInt { value: Some(v), was_integer: true })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LInt, E> {
                Ok(LInt { value: i64::try_from(v).ok(), was_integer: true })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LInt, E> {
                let value = v.is_finite().then_some(v.trunc() as i64);
                Ok(LInt { value, was_integer: false })
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<LInt, E> {
                Ok(LInt::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<LInt, E> {
                Ok(LInt::default())
            }
            absent_visits!(LInt::default());
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for LFloat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LFloat;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LFloat, E> {
                Ok(LFloat(Some(v as f64)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LFloat, E> {
                Ok(LFloat(Some(v as f64)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LFloat, E> {
                Ok(LFloat(Some(v)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<LFloat, E> {
                Ok(LFloat(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<LFloat, E> {
                Ok(LFloat(None))
            }
            absent_visits!(LFloat(None));
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for LBool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LBool;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<LBool, E> {
                Ok(LBool(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LBool, E> {
                Ok(LBool(Some(v != 0)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LBool, E> {
                Ok(LBool(Some(v != 0)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LBool, E> {
                Ok(LBool(Some(v != 0.0)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LBool, E> {
                Ok(LBool(Some(!v.is_empty())))
            }
            absent_visits!(LBool(None));
        }
        d.deserialize_any(V)
    }
}

/// A field read straight from a value the sparse reader kept, with the same leniency as the
/// serde implementations above: a value of another shape reads as absent.
/// A string's text is borrowed from `text`, where the reader put it checked and unescaped;
/// a value kept whole is read from `line`.
pub trait FromToken<'a>: Sized {
    fn from_token(line: &'a [u8], text: &'a str, token: Token) -> Self;
}

impl<'a> FromToken<'a> for LStr<'a> {
    fn from_token(_: &'a [u8], text: &'a str, token: Token) -> Self {
        LStr(token.text(text).map(Cow::Borrowed))
    }
}

impl FromToken<'_> for LInt {
    fn from_token(_: &[u8], _: &str, token: Token) -> Self {
        match token {
            Token::Int(v) => LInt { value: Some(v), was_integer: true },
            Token::Big(v) => LInt { value: i64::try_from(v).ok(), was_integer: true },
            Token::Float(v) => {
                LInt { value: v.is_finite().then_some(v.trunc() as i64), was_integer: false }
            }
            _ => LInt::default(),
        }
    }
}

impl FromToken<'_> for LFloat {
    fn from_token(_: &[u8], _: &str, token: Token) -> Self {
        match token {
            Token::Int(v) => LFloat(Some(v as f64)),
            Token::Big(v) => LFloat(Some(v as f64)),
            Token::Float(v) => LFloat(Some(v)),
            _ => LFloat(None),
        }
    }
}

impl FromToken<'_> for LBool {
    fn from_token(_: &[u8], _: &str, token: Token) -> Self {
        match token {
            Token::Bool(v) => LBool(Some(v)),
            Token::Int(v) => LBool(Some(v != 0)),
            Token::Big(v) => LBool(Some(v != 0)),
            Token::Float(v) => LBool(Some(v != 0.0)),
            Token::Str { start, end } => LBool(Some(start != end)),
            Token::Null | Token::Nested | Token::Whole { .. } => LBool(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(borrow, default)]
        s: LStr<'a>,
        #[serde(default)]
        i: LInt,
        #[serde(default)]
        f: LFloat,
        #[serde(default)]
        b: LBool,
    }

    fn probe(json: &str) -> Probe<'_> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn wrong_shapes_read_as_absent() {
        let p = probe(r#"{"s":{"deep":[1,2,{"x":"y"}]},"i":"12","f":[1],"b":null}"#);
        assert_eq!(p.s, LStr(None));
        assert_eq!(p.i.value, None);
        assert_eq!(p.f, LFloat(None));
        assert_eq!(p.b, LBool(None));
    }

    #[test]
    fn values_read_as_python_would() {
        let p = probe(r#"{"s":"a\"b","i":3.9,"f":2,"b":1}"#);
        assert_eq!(p.s.get(), Some("a\"b"));
        assert_eq!(p.i, LInt { value: Some(3), was_integer: false });
        assert_eq!(p.f, LFloat(Some(2.0)));
        assert_eq!(p.b, LBool(Some(true)));
        assert!(matches!(probe(r#"{"s":"plain"}"#).s.0, Some(Cow::Borrowed("plain"))));
        assert!(probe(r#"{"i":7}"#).i.was_integer);
    }
}
