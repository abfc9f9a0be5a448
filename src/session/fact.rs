//! The sparse decode of an event: only the fields folds and indexes read.
//!
//! Decoding a whole event costs allocations for every string; a fact borrows the few strings it
//! keeps from the line and lets serde skip everything else (prompts, tool output, reasoning), so
//! folding a log runs at the speed of scanning it.

use super::event::EventKind;
use super::lenient::{FromToken, LBool, LFloat, LInt, LStr};
use super::sparse::{self, Cursor, Token};
use super::state::{Ruling, StopReason};

/// The envelope of a line, with its sparse payload.
#[derive(Debug, Default)]
pub struct Fact<'a> {
    pub ts: LStr<'a>,
    pub seq: LInt,
    /// The lane that ran the event's task (absent without lanes).
    pub lane: LInt,
    pub kind: LStr<'a>,
    pub payload: FactPayload<'a>,
}

/// A value a fold keeps, as read from its line, and which field it fills.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mark {
    field: u8,
    token: Token,
}

/// The envelope's fields, numbered above every payload field.
const TS: u8 = 250;
const SEQ: u8 = 251;
const LANE: u8 = 252;
const KIND: u8 = 253;

/// What reading lines keeps for their facts: where each value a fold reads sits, and the text
/// of the kept strings, checked and unescaped once. Reading happens on any thread; the fold
/// borrows the text without looking at its bytes again.
///
/// The strings are gathered as bytes, each checked on the way in (a plain ASCII one in the
/// same pass that looks for control characters), and become one `String` when marking is done
/// ([`KeptValues::settle`]): a block's few hundred kilobytes checked as text at once rather
/// than a million short strings each handed to the UTF-8 check on its own.
#[derive(Debug, Default)]
pub struct KeptValues {
    pub marks: Vec<Mark>,
    /// The kept strings while lines are marked.
    gathered: Vec<u8>,
    /// The kept strings once settled, which the marks' string tokens point into.
    text: String,
}

impl KeptValues {
    /// Empty, keeping what was allocated.
    pub fn clear(&mut self) {
        self.marks.clear();
        self.gathered = std::mem::take(&mut self.text).into_bytes();
        self.gathered.clear();
    }

    /// Where the gathered text ends now, to [`KeptValues::truncate`] back to.
    pub fn gathered_len(&self) -> usize {
        self.gathered.len()
    }

    /// Drops what a line that turned out unreadable left: its marks past `marks` and its text
    /// past `text`.
    pub fn truncate(&mut self, marks: usize, text: usize) {
        self.marks.truncate(marks);
        self.gathered.truncate(text);
    }

    /// Ends marking: the gathered strings become the text the fold borrows. Every string was
    /// checked as UTF-8 as it came in, so this always succeeds; were that ever wrong, a kept
    /// value would read wrong or empty (its range no longer on a character's boundary) rather
    /// than the read stop.
    pub fn settle(&mut self) {
        let gathered = std::mem::take(&mut self.gathered);
        self.text = String::from_utf8(gathered)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    }

    /// The kept strings' text, once [`KeptValues::settle`]d.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// Reads and checks the value at `c` and marks it for `field`.
fn keep(c: &mut Cursor<'_>, field: u8, kept: &mut KeptValues) -> sparse::Result<()> {
    let whole = matches!(
        field,
        ids::plan_tasks | ids::conflicts | ids::content | ids::reasoning | ids::candidates
    );
    let token = if whole { c.whole()? } else { c.token(&mut kept.gathered)? };
    kept.marks.push(Mark { field, token });
    Ok(())
}

/// Whether a text field says something (there, not null, not empty), known without copying
/// the text: a model's words and reasoning can be long, and a fold only asks whether they are
/// there.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Said(pub bool);

impl FromToken<'_> for Said {
    fn from_token(line: &[u8], _: &str, token: Token) -> Self {
        let Token::Whole { start, end } = token else { return Said(false) };
        let raw = line.get(start as usize..end as usize).unwrap_or_default();
        Said(!raw.is_empty() && raw != b"null" && raw != b"\"\"")
    }
}

impl<'de> serde::Deserialize<'de> for Said {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match serde_json::Value::deserialize(d)? {
            serde_json::Value::Null => Said(false),
            serde_json::Value::String(s) => Said(!s.is_empty()),
            _ => Said(true),
        })
    }
}

/// `plan_tasks` and `conflicts`, kept whole.
impl FromToken<'_> for Option<serde_json::Value> {
    fn from_token(line: &[u8], _: &str, token: Token) -> Self {
        let Token::Whole { start, end } = token else { return None };
        let raw = line.get(start as usize..end as usize)?;
        serde_json::from_slice::<Option<serde_json::Value>>(raw).ok().flatten()
    }
}

/// Declares the sparse payload once: each field is named here only, and becomes both a
/// struct field and the key the reader matches (a test checks every key is a field some typed
/// payload in [`super::event`] writes).
macro_rules! fact_fields {
    ($( $(#[$doc:meta])* $field:ident : $ty:ty ),* $(,)?) => {
        /// Each kept payload field's number, as a [`Mark`] names it.
        #[allow(non_upper_case_globals)]
        mod ids {
            #[allow(non_camel_case_types, dead_code)]
            enum Field { $( $field, )* }
            $( pub(super) const $field: u8 = Field::$field as u8; )*
        }

        /// The payload fields any fold reads, across every event type.
        #[derive(Debug, Default)]
        pub struct FactPayload<'a> {
            $( $(#[$doc])* pub $field: $ty, )*
        }

        impl<'a> FactPayload<'a> {
            /// The keys the sparse reader keeps; every other key is skipped undecoded.
            pub const FIELDS: &'static [&'static str] = &[$( stringify!($field), )*];

            /// The number of the field kept under `key`, if a fold reads it. (A chain of
            /// comparisons, which mostly compare lengths, measured cheaper than a hash table.)
            fn field_id(key: &[u8]) -> Option<u8> {
                match key {
                    $( k if k == stringify!($field).as_bytes() => Some(ids::$field), )*
                    _ => None,
                }
            }

            /// Fills the field numbered `id` from a value of `line`.
            fn set(&mut self, id: u8, line: &'a [u8], text: &'a str, token: Token) {
                match id {
                    $( ids::$field => self.$field = FromToken::from_token(line, text, token), )*
                    _ => {}
                }
            }

            /// Empties the field numbered `id` again.
            fn unset(&mut self, id: u8) {
                match id {
                    $( ids::$field => self.$field = Default::default(), )*
                    _ => {}
                }
            }

            /// Each field as the full decoder's lenient types read it from a decoded payload:
            /// the oracle the sparse reader is tested against.
            #[cfg(test)]
            fn oracle(payload: &serde_json::Value) -> String {
                let texts: Vec<String> = Self::FIELDS
                    .iter()
                    .map(|k| payload.get(k).map_or_else(|| "null".to_owned(), ToString::to_string))
                    .collect();
                let text = |k: &str| texts[Self::FIELDS.iter().position(|f| *f == k).unwrap_or(0)].as_str();
                let oracle = FactPayload {
                    $( $field: serde_json::from_str(text(stringify!($field))).unwrap_or_default(), )*
                };
                format!("{oracle:?}")
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
    /// `model_call`: the token counts are estimates (the server sent no usage).
    tokens_estimated: LBool,
    /// `model_call`: the wait before the call is tried again; absent, it was not.
    retry_backoff_seconds: LFloat,
    tool: LStr<'a>,
    hook: LStr<'a>,
    outcome: LStr<'a>,
    verdict: LStr<'a>,
    rejection_category: LStr<'a>,
    parse_failed: LBool,
    /// `evaluator_verdict`: harrow judged (an empty diff), not the evaluator.
    by_harness: LBool,
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
    /// `evaluator_verdict`: what the gate made of an accept's witnesses.
    evidence_gate: LStr<'a>,
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
    /// `feedback_sent`: what the worker was sent back for (`merge`, `validators`, …), and for
    /// a merge the files that conflicted (rare, so kept whole).
    kind: LStr<'a>,
    conflicts: Option<serde_json::Value>,
    /// `assistant_message`: whether the model said or thought something, beside its tool
    /// calls (each of which has a row of its own).
    content: Said,
    reasoning: Said,
    /// `turn_tree`, `task_rewound`: the worktree's state as a git tree.
    tree: LStr<'a>,
    /// `task_rewound`: the attempt and turn the task went back to, the attempts set aside
    /// (rare, so kept whole), the attempts that allowed, and where its conversation goes on.
    to_attempt: LInt,
    to_turn: LInt,
    rewound: Option<serde_json::Value>,
    granted: LInt,
    /// `task_rewound`, `context_reset`: the `seq` of the last event of the conversation the
    /// task goes on from.
    continues_at: LInt,
    /// `best_of`: the attempts weighed (rare, so kept whole), and the one that landed.
    candidates: Option<serde_json::Value>,
    winner: LInt,
    /// `model_call`: the model that answered; `model_switch`: the one a role moved to.
    model: LStr<'a>,
    to_model: LStr<'a>,
    /// `context_compacted`: the window the conversation was fitted to (learned from a server
    /// when it named one).
    window: LInt,
    /// `model_switch`: where the calls went (`kind`, read above, says why: `fallback` or
    /// `escalation`).
    to_base_url: LStr<'a>,
}

impl<'a> Fact<'a> {
    /// Decodes a line with the sparse reader ([`sparse`]) into `kept`, whose text the fact
    /// borrows. Fails only when the line is not one JSON object; the `type` may be absent (an
    /// empty kind), which folds treat as an event they do not know.
    pub fn decode(line: &'a [u8], kept: &'a mut KeptValues) -> sparse::Result<Fact<'a>> {
        kept.clear();
        Fact::mark(line, kept)?;
        kept.settle();
        Ok(Fact::from_marks(line, &kept.text, &kept.marks))
    }

    /// The costly half of [`Fact::decode`], which needs nothing but the line's bytes and so runs
    /// on any thread: checks the line and appends to `kept` where each value a fold keeps sits
    /// and the text of its strings. A key given twice keeps its last value.
    pub fn mark(line: &[u8], kept: &mut KeptValues) -> sparse::Result<()> {
        let first = kept.marks.len();
        let mut c = Cursor::new(line);
        c.object(|key, c| {
            let field = match key {
                b"ts" => TS,
                b"seq" => SEQ,
                b"lane" => LANE,
                b"type" => KIND,
                b"payload" => {
                    // An earlier payload's values give way to this one's (their text stays
                    // behind, unreferenced).
                    let marks = &mut kept.marks;
                    let mut i = first;
                    while i < marks.len() {
                        if marks[i].field < TS {
                            marks.remove(i);
                        } else {
                            i += 1;
                        }
                    }
                    return if c.peek() == Some(b'{') {
                        c.object(|key, c| match FactPayload::field_id(key) {
                            Some(id) => keep(c, id, kept),
                            None => c.skip_value(),
                        })
                    } else {
                        c.skip_value()
                    };
                }
                _ => return c.skip_value(),
            };
            keep(c, field, kept)
        })?;
        c.end()
    }

    /// The cheap half of [`Fact::decode`]: the fact from a line checked by [`Fact::mark`], its
    /// marks and the kept text they point into.
    pub fn from_marks(line: &'a [u8], text: &'a str, marks: &[Mark]) -> Fact<'a> {
        let mut fact = Fact::default();
        fact.fill(line, text, marks);
        fact
    }

    /// [`Fact::from_marks`] into a fact that is empty or was last [`Fact::empty`]ed: a fold
    /// takes a million facts, and making each anew writes and drops every field, a kilobyte,
    /// where a line fills about seven.
    pub fn fill(&mut self, line: &'a [u8], text: &'a str, marks: &[Mark]) {
        for &Mark { field, token } in marks {
            match field {
                TS => self.ts = FromToken::from_token(line, text, token),
                SEQ => self.seq = FromToken::from_token(line, text, token),
                LANE => self.lane = FromToken::from_token(line, text, token),
                KIND => self.kind = FromToken::from_token(line, text, token),
                id => self.payload.set(id, line, text, token),
            }
        }
    }

    /// Empties the fields `marks` filled, leaving the fact as [`Fact::default`] again.
    pub fn empty(&mut self, marks: &[Mark]) {
        for &Mark { field, .. } in marks {
            match field {
                TS => self.ts = LStr::default(),
                SEQ => self.seq = LInt::default(),
                LANE => self.lane = LInt::default(),
                KIND => self.kind = LStr::default(),
                id => self.payload.unset(id),
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fields_a_fold_needs_and_skips_the_rest() {
        let line = br#"{"ts": "2026-11-22T04:28:45Z", "type": "model_call", "payload": {"task_id": "T-001", "iter": 1, "prompt_tokens": 3851, "eval_tokens": 157, "cost": 0.00121247, "reasoning_details": [{"text": "long"}], "tokens_used_total": 4008}}"#;
        let mut kept = KeptValues::default();
        let f = Fact::decode(line, &mut kept).unwrap();
        assert_eq!(f.kind(), "model_call");
        assert_eq!(f.payload.task_id.get(), Some("T-001"));
        assert_eq!(f.payload.prompt_tokens.value, Some(3851));
        assert_eq!(f.payload.cost.0, Some(0.001_212_47));
        assert_eq!(f.payload.tokens_used_total.value, Some(4008));
    }

    #[test]
    fn a_key_given_twice_keeps_its_last_value() {
        let mut kept = KeptValues::default();
        let f = Fact::decode(
            br#"{"payload":{"task_id":"A","iter":1},"type":"x","payload":{"iter":2},"type":"y"}"#,
            &mut kept,
        )
        .unwrap();
        assert_eq!((f.kind(), f.payload.task_id.get(), f.payload.iter.value), ("y", None, Some(2)));
    }

    #[test]
    fn odd_envelopes_still_decode() {
        let decode = |line: &[u8]| {
            Fact::decode(line, &mut KeptValues::default()).map(|f| f.kind().to_owned())
        };
        assert_eq!(decode(br#"{"type":"stop","payload":null}"#).unwrap(), "stop");
        assert_eq!(decode(br#"{"payload":{"task_id":1}}"#).unwrap(), "");
        assert!(decode(br#"{"type":"stop""#).is_err());
        assert!(decode(b"\"just a string\"").is_err());
    }

    /// Every line the full decoder takes, the sparse reader takes with the same values; a line
    /// the sparse reader refuses, the full decoder refuses too.
    fn agrees_with_the_full_decoder(line: &[u8]) {
        let full = crate::session::event::Event::decode(line);
        let mut kept = KeptValues::default();
        let sparse = Fact::decode(line, &mut kept);
        match (&full, &sparse) {
            (Ok(event), Ok(fact)) => {
                assert_eq!(fact.kind(), event.kind, "{}", String::from_utf8_lossy(line));
                assert_eq!(fact.ts.get(), event.ts.as_deref().filter(|t| !t.is_empty()));
                assert_eq!(
                    format!("{:?}", fact.payload),
                    FactPayload::oracle(&event.payload_value()),
                    "{}",
                    String::from_utf8_lossy(line)
                );
            }
            (Ok(_), Err(e)) => {
                panic!(
                    "the sparse reader refused ({e}) a line the full decoder takes: {}",
                    String::from_utf8_lossy(line)
                )
            }
            (Err(_), _) => {}
        }
    }

    fn fixture_lines() -> Vec<Vec<u8>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut files = Vec::new();
        let mut dirs = vec![root];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "jsonl") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() >= 5, "the fixtures are there");
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for file in files {
            let bytes = std::fs::read(file).unwrap();
            lines.extend(bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec));
        }
        for dialect in
            [crate::session::synth::Dialect::Harrow, crate::session::synth::Dialect::Tilth]
        {
            let mut out = Vec::new();
            crate::session::synth::generate(&mut out, 400, dialect, 7).unwrap();
            lines.extend(out.split(|b| *b == b'\n').map(<[u8]>::to_vec));
        }
        lines
    }

    #[test]
    fn the_sparse_reader_agrees_with_the_full_decoder_on_every_fixture_and_its_damage() {
        let lines = fixture_lines();
        for (n, line) in lines.iter().enumerate() {
            agrees_with_the_full_decoder(line);
            // Torn at a few places, spliced with the next line, a byte changed.
            for cut in [1, line.len() / 3, line.len() / 2, line.len().saturating_sub(1)] {
                agrees_with_the_full_decoder(&line[..cut.min(line.len())]);
                let mut spliced = line[..cut.min(line.len())].to_vec();
                spliced.extend_from_slice(&lines[(n + 1) % lines.len()]);
                agrees_with_the_full_decoder(&spliced);
            }
            for (i, byte) in
                [(line.len() / 4, b'"'), (line.len() / 5, b'\\'), (line.len() / 6, b'}')]
            {
                let mut changed = line.clone();
                if let Some(b) = changed.get_mut(i) {
                    *b = byte;
                }
                agrees_with_the_full_decoder(&changed);
            }
        }
        for odd in [
            &br#"{"type":"t\u0079pe","payload":{"task_id":"T-\u0031","iter":1e2,"cost":3,"accept":"yes","passed":"","below_bar":"\u0000"}}"#[..],
            br#"{"type":"model_call","payload":[1,2]}"#,
            br#"{"t\u0079pe":"model_call","p\u0061yload":{"t\u0061sk_id":"T-9"}}"#,
            br#"{"type":"model_call","payload":{"plan_tasks":null,"task_id":7}}"#,
            br#"{"type":"session_start","payload":{"plan_tasks":[{"id":"T-1","title":"a"}]}}  "#,
            br#"{"payload":{"iter":18446744073709551615,"attempt":-3.7}}"#,
        ] {
            agrees_with_the_full_decoder(odd);
            assert!(Fact::decode(odd, &mut KeptValues::default()).is_ok());
        }
    }

    #[test]
    fn a_fact_filled_and_emptied_line_after_line_reads_as_a_fresh_one() {
        let lines = fixture_lines();
        let mut kept = KeptValues::default();
        let mut spans = Vec::new();
        for line in &lines {
            let first = kept.marks.len();
            if Fact::mark(line, &mut kept).is_ok() {
                spans.push((line.as_slice(), first, kept.marks.len()));
            } else {
                kept.marks.truncate(first);
            }
        }
        kept.settle();
        assert!(spans.len() > 800, "the fixtures and the generated sessions were read");
        let mut reused = Fact::default();
        for &(line, from, to) in &spans {
            let marks = &kept.marks[from..to];
            reused.fill(line, &kept.text, marks);
            let fresh = Fact::from_marks(line, &kept.text, marks);
            assert_eq!(
                format!("{reused:?}"),
                format!("{fresh:?}"),
                "{}",
                String::from_utf8_lossy(line)
            );
            reused.empty(marks);
        }
        assert_eq!(format!("{reused:?}"), format!("{:?}", Fact::default()));
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
