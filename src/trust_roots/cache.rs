//! The last answer of [`super::folder_stands_for`], kept in harrow's cache folder
//! ([`crate::remembered`]) beside the stamps of what it was worked out from: a harrow start
//! then looks at two stamps instead of reading every certificate (a few milliseconds on each
//! start, on a system's 150 roots).
//!
//! `update-ca-certificates` and `c_rehash` rewrite the bundle and the folder's links, which
//! moves their stamps, and the answer is worked out again. A planted answer can only make a
//! start load the bundle it could have skipped, or skip one whose roots the folder holds.

use std::path::Path;

/// The cache file's name.
const NAME: &str = "tls-roots";

/// [`super::folder_stands_for`], from the cache when the bundle and folder are as they were;
/// else worked out and cached when `scan` allows it, `None` when it does not.
pub(super) fn stands_for(bundle: &Path, dir: &Path, exact: bool, scan: bool) -> Option<bool> {
    let (question, kept) = (question(bundle, dir, exact), crate::remembered::Remembered::here());
    if let Some(answer) = question.as_deref().and_then(|q| kept.recall(NAME, q)) {
        match answer.as_str() {
            "1" => return Some(true),
            "0" => return Some(false),
            _ => {}
        }
    }
    if !scan {
        return None;
    }
    let answer = super::folder_stands_for(bundle, dir, exact);
    if let Some(question) = question {
        kept.keep(NAME, &question, if answer { "1" } else { "0" });
    }
    Some(answer)
}

/// The question and the stamps of what answers it: the bundle's and the folder's.
fn question(bundle: &Path, dir: &Path, exact: bool) -> Option<String> {
    let stamps = crate::remembered::stamps;
    Some(format!("harrow tls roots v1 exact={exact} {} {}", stamps(bundle)?, stamps(dir)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_names_the_answer_asked_for_and_the_stamps_of_both() {
        let tmp = tempfile::tempdir().unwrap();
        let bundle = tmp.path().join("bundle.crt");
        std::fs::write(&bundle, "x").unwrap();
        let asked = question(&bundle, tmp.path(), false).unwrap();
        assert_ne!(question(&bundle, tmp.path(), true).unwrap(), asked, "the exact answer");
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&bundle, "yy").unwrap();
        assert_ne!(question(&bundle, tmp.path(), false).unwrap(), asked, "the bundle rewritten");
        assert_eq!(question(&tmp.path().join("gone"), tmp.path(), false), None);
    }
}
