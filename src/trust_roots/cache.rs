//! The last answer of [`super::folder_stands_for`], kept in harrow's cache folder beside the
//! stamps of what it was worked out from: a harrow start then looks at two stamps instead of
//! reading every certificate (a few milliseconds on each start, on a system's 150 roots).
//!
//! `update-ca-certificates` and `c_rehash` rewrite the bundle and the folder's links, which
//! moves their stamps, and the answer is worked out again. The cache folder is the user's (a
//! sandboxed command cannot write it); what is found there is still read only as a regular
//! file, capped and without waiting, so a FIFO or a device planted there cannot hold a start.

use std::fmt::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The most of the cache file read: one line.
const READ_LIMIT: u64 = 8 << 10;

/// [`super::folder_stands_for`], from the cache when the bundle and folder are as they were;
/// else worked out and cached when `scan` allows it, `None` when it does not.
pub(super) fn stands_for(bundle: &Path, dir: &Path, exact: bool, scan: bool) -> Option<bool> {
    let (key, file) = (key(bundle, dir, exact), place());
    if let (Some(key), Some(file)) = (&key, &file)
        && let Some(answer) = read(file).and_then(|text| answer_in(&text, key))
    {
        return Some(answer);
    }
    if !scan {
        return None;
    }
    let answer = super::folder_stands_for(bundle, dir, exact);
    if let (Some(key), Some(file)) = (key, file) {
        write(&file, &format!("{key}{}\n", u8::from(answer)));
    }
    Some(answer)
}

/// What the cache says for `key`: its line is the key and `1` or `0`.
fn answer_in(text: &str, key: &str) -> Option<bool> {
    match text.strip_prefix(key)? {
        "1\n" => Some(true),
        "0\n" => Some(false),
        _ => None,
    }
}

/// The question and the stamps of what answers it: the bundle's and the folder's device,
/// inode, length and change times (links followed, as OpenSSL follows them).
fn key(bundle: &Path, dir: &Path, exact: bool) -> Option<String> {
    let mut key = format!("harrow tls roots v1 exact={exact}");
    for path in [bundle, dir] {
        let m = std::fs::metadata(path).ok()?;
        let _ = write!(
            key,
            " \"{}\" {}:{}:{}:{}.{}:{}.{}",
            path.to_string_lossy().escape_debug(),
            m.dev(),
            m.ino(),
            m.len(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec()
        );
    }
    key.push_str(" = ");
    Some(key)
}

fn place() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "harrow").map(|d| d.cache_dir().join("tls-roots"))
}

fn read(file: &Path) -> Option<String> {
    crate::safe_io::read_text_capped(file, READ_LIMIT).ok()
}

/// Writes the line whole or not at all (a temporary file renamed into place); a cache folder
/// that cannot be written only costs the next start the work, and the answer lost in a crash
/// is worked out again.
fn write(file: &Path, line: &str) {
    if let Some(dir) = file.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let _ = crate::safe_io::replace_volatile(file, line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_read_back_only_for_the_same_question_and_stamps() {
        let tmp = tempfile::tempdir().unwrap();
        let bundle = tmp.path().join("bundle.crt");
        std::fs::write(&bundle, "x").unwrap();
        let key = key(&bundle, tmp.path(), false).unwrap();
        assert_eq!(answer_in(&format!("{key}1\n"), &key), Some(true));
        assert_eq!(answer_in(&format!("{key}0\n"), &key), Some(false));
        assert_eq!(answer_in(&format!("{key}1\nmore"), &key), None);
        // Asked for the exact answer, or the bundle rewritten: worked out again.
        let exact = super::key(&bundle, tmp.path(), true).unwrap();
        assert_eq!(answer_in(&format!("{key}1\n"), &exact), None);
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&bundle, "yy").unwrap();
        let moved = super::key(&bundle, tmp.path(), false).unwrap();
        assert_eq!(answer_in(&format!("{key}1\n"), &moved), None);
        assert_eq!(super::key(&tmp.path().join("gone"), tmp.path(), false), None);
    }
}
