//! The sparse decode of an event: only the fields folds and indexes read.
//!
//! Decoding a whole event costs allocations for every string; a fact borrows the few strings it
//! keeps from the line and lets serde skip everything else (prompts, tool output, reasoning), so
//! folding a log runs at the speed of scanning it.

use super::lenient::{LBool, LFloat, LInt, LStr};
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
    #[serde(rename = "type", borrow, default)]
    pub kind: LStr<'a>,
    #[serde(borrow, default)]
    pub payload: FactPayload<'a>,
}

/// The payload fields any fold reads, across every event type.
#[derive(Debug, Default)]
pub struct FactPayload<'a> {
    pub task_id: LStr<'a>,
    pub session_id: LStr<'a>,
    pub iter: LInt,
    pub attempt: LInt,
    pub phase: LStr<'a>,
    pub role: LStr<'a>,
    pub prompt_tokens: LInt,
    pub eval_tokens: LInt,
    pub cached_tokens: LInt,
    pub reasoning_tokens: LInt,
    pub cost: LFloat,
    pub tokens_used_total: LInt,
    pub health: LStr<'a>,
    pub tool: LStr<'a>,
    pub hook: LStr<'a>,
    pub outcome: LStr<'a>,
    pub verdict: LStr<'a>,
    pub rejection_category: LStr<'a>,
    pub parse_failed: LBool,
    pub below_threshold: LBool,
    pub accept: LBool,
    pub passed: LBool,
    pub reason: LStr<'a>,
    pub below_bar: LBool,
    pub last_category: LStr<'a>,
    pub by_operator: LBool,
    pub reviewed: LBool,
    pub last_outcome: LStr<'a>,
    pub base_commit: LStr<'a>,
    pub diff_digest: LStr<'a>,
    pub attempt_commit: LStr<'a>,
    pub task_count: LInt,
    pub to: LStr<'a>,
    pub action: LStr<'a>,
    pub sha: LStr<'a>,
    pub no_eval: LBool,
    /// `session_start`: the sandbox the worker's commands ran in.
    pub sandbox: LStr<'a>,
    pub control_offset: LInt,
    pub granted_attempt: LBool,
    pub set_aside: LStr<'a>,
    /// `session_start`: the plan's tasks, `[{"id", "title"}]` (rare, so kept whole).
    pub plan_tasks: Option<serde_json::Value>,
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
    pub fn event_kind(&self) -> Option<super::event::EventKind> {
        super::event::EventKind::from_name(self.kind())
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
                    match key.as_ref() {
                        "task_id" => p.task_id = map.next_value()?,
                        "session_id" => p.session_id = map.next_value()?,
                        "iter" => p.iter = map.next_value()?,
                        "attempt" => p.attempt = map.next_value()?,
                        "phase" => p.phase = map.next_value()?,
                        "role" => p.role = map.next_value()?,
                        "prompt_tokens" => p.prompt_tokens = map.next_value()?,
                        "eval_tokens" => p.eval_tokens = map.next_value()?,
                        "cached_tokens" => p.cached_tokens = map.next_value()?,
                        "reasoning_tokens" => p.reasoning_tokens = map.next_value()?,
                        "cost" => p.cost = map.next_value()?,
                        "tokens_used_total" => p.tokens_used_total = map.next_value()?,
                        "health" => p.health = map.next_value()?,
                        "tool" => p.tool = map.next_value()?,
                        "hook" => p.hook = map.next_value()?,
                        "outcome" => p.outcome = map.next_value()?,
                        "verdict" => p.verdict = map.next_value()?,
                        "rejection_category" => p.rejection_category = map.next_value()?,
                        "parse_failed" => p.parse_failed = map.next_value()?,
                        "below_threshold" => p.below_threshold = map.next_value()?,
                        "accept" => p.accept = map.next_value()?,
                        "passed" => p.passed = map.next_value()?,
                        "reason" => p.reason = map.next_value()?,
                        "below_bar" => p.below_bar = map.next_value()?,
                        "last_category" => p.last_category = map.next_value()?,
                        "by_operator" => p.by_operator = map.next_value()?,
                        "reviewed" => p.reviewed = map.next_value()?,
                        "last_outcome" => p.last_outcome = map.next_value()?,
                        "base_commit" => p.base_commit = map.next_value()?,
                        "diff_digest" => p.diff_digest = map.next_value()?,
                        "attempt_commit" => p.attempt_commit = map.next_value()?,
                        "task_count" => p.task_count = map.next_value()?,
                        "to" => p.to = map.next_value()?,
                        "action" => p.action = map.next_value()?,
                        "sha" => p.sha = map.next_value()?,
                        "no_eval" => p.no_eval = map.next_value()?,
                        "sandbox" => p.sandbox = map.next_value()?,
                        "control_offset" => p.control_offset = map.next_value()?,
                        "granted_attempt" => p.granted_attempt = map.next_value()?,
                        "set_aside" => p.set_aside = map.next_value()?,
                        "plan_tasks" => p.plan_tasks = map.next_value()?,
                        _ => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
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
}
