//! The sparse decode of an event: only the fields folds and indexes read.
//!
//! Decoding a whole event costs allocations for every string; a fact borrows the few strings it
//! keeps from the line and lets serde skip everything else (prompts, tool output, reasoning), so
//! folding a log runs at the speed of scanning it.

use super::event::EventKind;
use super::lenient::{LBool, LFloat, LInt, LStr};
use super::state::{Ruling, StopReason};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use std::fmt;

/// The envelope of a line, with its sparse payload.
#[derive(Debug, Deserialize)]
pub struct Fact<'a> {
    #[serde(borrow, default)]
    pub ts: LStr<'a>,
    #[serde(default)]
    pub seq: LInt,
    /// The lane that ran the event's task (absent without lanes).
    #[serde(default)]
    pub lane: LInt,
    #[serde(rename = "type", borrow, default)]
    pub kind: LStr<'a>,
    #[serde(borrow, default)]
    pub payload: FactPayload<'a>,
}

/// Declares the sparse payload once: each field is named here only, and becomes both a
/// struct field and the key the reader matches (a test checks every key is a field some typed
/// payload in [`super::event`] writes).
macro_rules! fact_fields {
    ($( $(#[$doc:meta])* $field:ident : $ty:ty ),* $(,)?) => {
        /// The payload fields any fold reads, across every event type.
        #[derive(Debug, Default)]
        pub struct FactPayload<'a> {
            $( $(#[$doc])* pub $field: $ty, )*
        }

        impl<'a> FactPayload<'a> {
            /// The keys the sparse reader keeps; every other key is skipped undecoded.
            pub const FIELDS: &'static [&'static str] = &[$( stringify!($field), )*];

            /// Reads the value of `key` into its field; `false` when the reader does not keep
            /// the key (the caller skips its value).
            fn read<'de: 'a, A: MapAccess<'de>>(
                &mut self,
                key: &str,
                map: &mut A,
            ) -> Result<bool, A::Error> {
                match key {
                    $( stringify!($field) => self.$field = map.next_value()?, )*
                    _ => return Ok(false),
                }
                Ok(true)
            }
        }
    };
}

fact_fields! {
    task_id: LStr<'a>,
    session_id: LStr<'a>,
    iter: LInt,
    attempt: LInt,
    phase: LStr<'a>,
    feature: LStr<'a>,
    role: LStr<'a>,
    prompt_tokens: LInt,
    eval_tokens: LInt,
    cached_tokens: LInt,
    reasoning_tokens: LInt,
    cost: LFloat,
    tokens_used_total: LInt,
    health: LStr<'a>,
    tool: LStr<'a>,
    hook: LStr<'a>,
    outcome: LStr<'a>,
    verdict: LStr<'a>,
    rejection_category: LStr<'a>,
    parse_failed: LBool,
    below_threshold: LBool,
    accept: LBool,
    passed: LBool,
    reason: LStr<'a>,
    below_bar: LBool,
    last_category: LStr<'a>,
    by_operator: LBool,
    reviewed: LBool,
    last_outcome: LStr<'a>,
    base_commit: LStr<'a>,
    diff_digest: LStr<'a>,
    attempt_commit: LStr<'a>,
    task_count: LInt,
    to: LStr<'a>,
    action: LStr<'a>,
    sha: LStr<'a>,
    no_eval: LBool,
    /// `session_start`: the sandbox the worker's commands ran in.
    sandbox: LStr<'a>,
    control_offset: LInt,
    granted_attempt: LBool,
    set_aside: LStr<'a>,
    /// `session_start`, `session_resume`: the machine the run works on.
    host: LStr<'a>,
    /// `stop`: what stopped the run, in words.
    error: LStr<'a>,
    /// `evaluator_verdict`: what the evaluator found and what it asks for (the fleet's
    /// preview of a held task).
    concern: LStr<'a>,
    next_step: LStr<'a>,
    /// `push`, `pull_request`: where the branch went and the pull request's address.
    remote: LStr<'a>,
    branch: LStr<'a>,
    url: LStr<'a>,
    /// `session_start`: the plan's tasks, `[{"id", "title"}]` (rare, so kept whole).
    plan_tasks: Option<serde_json::Value>,
}

impl<'a> Fact<'a> {
    /// Decodes a line. Fails only when it is not a JSON object; the `type` may be absent (an
    /// empty kind), which folds treat as an event they do not know.
    pub fn decode(line: &'a [u8]) -> serde_json::Result<Fact<'a>> {
        serde_json::from_slice(line)
    }

    pub fn kind(&self) -> &str {
        self.kind.0.as_deref().unwrap_or("")
    }

    /// The kind, when this build knows the name.
    pub fn event_kind(&self) -> Option<EventKind> {
        EventKind::from_name(self.kind())
    }

    /// What a verdict decided: the evaluator's or Tilth's judge's; `None` for other events
    /// and for a verdict word that is neither accept nor reject.
    pub fn ruling(&self) -> Option<Ruling> {
        match self.event_kind()? {
            EventKind::Verdict => self.payload.verdict.get().and_then(Ruling::read),
            EventKind::JudgeVerdict => Some(if self.payload.accept.0 == Some(true) {
                Ruling::Accept
            } else {
                Ruling::Reject
            }),
            _ => None,
        }
    }

    /// Why a `stop` event says the run stopped.
    pub fn stop_reason(&self) -> Option<StopReason> {
        if self.event_kind()? != EventKind::Stop {
            return None;
        }
        self.payload.reason.get().map(StopReason::parse)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for FactPayload<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FactPayload<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a payload object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut p = FactPayload::default();
                while let Some(key) = map.next_key::<LStr<'de>>()? {
                    let Some(key) = key.0 else {
                        map.next_value::<de::IgnoredAny>()?;
                        continue;
                    };
                    if !p.read(key.as_ref(), &mut map)? {
                        map.next_value::<de::IgnoredAny>()?;
                    }
                }
                Ok(p)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(FactPayload::default())
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(FactPayload::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(FactPayload::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(FactPayload::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(FactPayload::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(FactPayload::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(FactPayload::default())
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fields_a_fold_needs_and_skips_the_rest() {
        let line = br#"{"ts": "2026-11-22T04:28:45Z", "type": "model_call", "payload": {"task_id": "T-001", "iter": 1, "prompt_tokens": 3851, "eval_tokens": 157, "cost": 0.00121247, "reasoning_details": [{"text": "long"}], "tokens_used_total": 4008}}"#;
        let f = Fact::decode(line).unwrap();
        assert_eq!(f.kind(), "model_call");
        assert_eq!(f.payload.task_id.get(), Some("T-001"));
        assert_eq!(f.payload.prompt_tokens.value, Some(3851));
        assert_eq!(f.payload.cost.0, Some(0.001_212_47));
        assert_eq!(f.payload.tokens_used_total.value, Some(4008));
    }

    #[test]
    fn odd_envelopes_still_decode() {
        assert_eq!(Fact::decode(br#"{"type":"stop","payload":null}"#).unwrap().kind(), "stop");
        assert_eq!(Fact::decode(br#"{"payload":{"task_id":1}}"#).unwrap().kind(), "");
        assert!(Fact::decode(br#"{"type":"stop""#).is_err());
        assert!(Fact::decode(b"\"just a string\"").is_err());
    }

    #[test]
    fn every_key_the_sparse_reader_keeps_is_a_field_some_payload_writes() {
        use crate::session::event::EventKind;
        for key in FactPayload::FIELDS {
            let writers: Vec<&str> = EventKind::ALL
                .iter()
                .filter(|k| k.fields().contains(key))
                .map(|k| k.name())
                .collect();
            assert!(
                !writers.is_empty(),
                "the sparse reader keeps {key:?}, which no typed payload in event.rs writes"
            );
        }
    }
}
