//! The strict reading of a line harrow wrote: what every event harrow appends must pass.
//!
//! Readers of `events.jsonl` are lenient on purpose (Tilth's logs of every era, torn tails,
//! unknown types), so a malformed line harrow wrote itself would go unnoticed: shown raw, or
//! dropped by a reader that keeps the first of two equal keys where another keeps the last.
//! This check is what tests hold harrow's writer to: one JSON object, no key twice at any
//! depth, the envelope complete, and a payload that decodes into its own type.

use super::event::{Event, Payload};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// JSON that refuses an object with the same key twice.
struct NoDuplicateKeys;

impl<'de> Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeysVisitor)
    }
}

struct NoDuplicateKeysVisitor;

impl<'de> Visitor<'de> for NoDuplicateKeysVisitor {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!("the key '{key}' appears twice")));
            }
            map.next_value::<NoDuplicateKeys>()?;
        }
        Ok(NoDuplicateKeys)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(NoDuplicateKeys)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
}

/// Checks that `line` is JSON with no key twice at any depth.
pub fn no_duplicate_keys(line: &[u8]) -> Result<(), String> {
    serde_json::from_slice::<NoDuplicateKeys>(line).map(|_| ()).map_err(|e| e.to_string())
}

/// Checks one `events.jsonl` line as harrow must write it: JSON with no duplicate key, a
/// `ts`, a `seq`, a `type`, and a payload that decodes into its type's struct (an event name
/// this build does not know is refused too: harrow writes only names it knows).
pub fn check_event_line(line: &[u8]) -> Result<(), String> {
    no_duplicate_keys(line)?;
    let event = Event::decode(line).map_err(|e| e.to_string())?;
    if event.ts.is_none() || event.seq.is_none() {
        return Err(format!("{}: the envelope lacks ts or seq", event.kind));
    }
    if let Payload::Raw(_) = event.payload {
        return Err(format!("{}: the payload does not decode into its type", event.kind));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_key_twice_at_any_depth() {
        assert!(no_duplicate_keys(br#"{"a":1,"b":{"c":[{"d":1}]}}"#).is_ok());
        let e = no_duplicate_keys(br#"{"a":1,"b":{"attempt":1,"attempt":2}}"#).unwrap_err();
        assert!(e.contains("'attempt' appears twice"), "{e}");
        assert!(no_duplicate_keys(br#"[{"x":1},{"x":1,"x":2}]"#).is_err());
    }

    #[test]
    fn an_event_needs_its_envelope_and_a_typed_payload() {
        let good = br#"{"ts":"2026-11-22T04:28:43.123Z","seq":1,"type":"stop","payload":{"reason":"all_done"}}"#;
        assert!(check_event_line(good).is_ok());
        let tilth =
            br#"{"ts":"2026-11-22T04:28:43Z","type":"stop","payload":{"reason":"all_done"}}"#;
        assert!(check_event_line(tilth).is_err(), "harrow writes seq");
        let mistyped =
            br#"{"ts":"t","seq":1,"type":"model_call","payload":{"prompt_tokens":"many"}}"#;
        assert!(check_event_line(mistyped).unwrap_err().contains("does not decode"));
        let unknown = br#"{"ts":"t","seq":1,"type":"made_up","payload":{}}"#;
        assert!(check_event_line(unknown).is_err());
    }
}
