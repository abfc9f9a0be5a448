//! Any text as `submit_case` or `submit_verdict` arguments, as a model sends them: parsing never
//! panics; what parses is consistent (a case has a summary and a criterion map; an accept has no
//! category, a reject has one), and renders its feedback and summary.

#![no_main]

use harrow::harness::{case, verdict};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(c) = case::parse(text) {
        assert!(!c.summary.trim().is_empty(), "a case has a summary: {c:?}");
        assert!(!c.ac_coverage.is_empty(), "a case maps its criteria: {c:?}");
    }
    for threshold in [None, Some(60.0)] {
        if let Ok(v) = verdict::parse_held(text, threshold) {
            if v.accepted() {
                assert!(v.rejection_category.is_none(), "an accept carries no category: {v:?}");
            } else {
                assert!(v.rejection_category.is_some(), "a reject names its category: {v:?}");
            }
            let _ = v.summary();
            let _ = v.feedback();
            let _ = v.outcome();
        }
    }
});
