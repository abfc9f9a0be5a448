//! Writing the session's side files: whole-file replacement that a crash can never leave
//! half-written, and appended lines. Everything written here passes the key scrub
//! ([`crate::keys::scrub`]), as the event log does: a key a model or a provider echoed into a
//! verdict, a ledger entry or a learning never reaches the disk.

use serde::Serialize;
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` through a temporary file in the same folder, synced and renamed
/// over the target, so readers see the old file or the new one and never a torn mix; a link
/// planted at `path` is replaced, never written through ([`crate::safe_io::replace`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let scrubbed = scrub_bytes(bytes);
    crate::safe_io::replace(path, &scrubbed)
}

/// `bytes` with every known key taken out (text that is not UTF-8 is scrubbed as far as it is).
fn scrub_bytes(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let text = String::from_utf8_lossy(bytes);
    match crate::keys::scrub(&text) {
        std::borrow::Cow::Owned(clean) => std::borrow::Cow::Owned(clean.into_bytes()),
        std::borrow::Cow::Borrowed(_) => std::borrow::Cow::Borrowed(bytes),
    }
}

/// Appends `text` to `path` (created when missing, never through a link), scrubbed, and syncs
/// it.
pub fn append_scrubbed(path: &Path, text: &str) -> io::Result<()> {
    let mut file = crate::safe_io::open_append(path)?;
    file.write_all(crate::keys::scrub(text).as_bytes())?;
    file.sync_data()
}

/// [`write_atomic`] of a value as pretty-printed JSON, the way Tilth writes its state files.
pub fn write_json_atomic(path: &Path, value: &impl Serialize) -> io::Result<()> {
    write_atomic(path, &json_file(value)?)
}

/// A value as a state file holds it: pretty-printed JSON and a newline.
fn json_file(value: &impl Serialize) -> io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(io::Error::from)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// [`write_json_atomic`] for a view of the log that harrow rewrites at every task boundary
/// (`summary.json`, `task-status.json`): replaced whole, never torn, but not synced. Every
/// fact in it is also in `events.jsonl`, which is synced at each durability point; after a
/// crash the file may be the one before, or none, and whoever reads it falls back on the log.
/// Syncing it cost two `fsync`s per write, a fifth of a short run's.
pub fn write_json_view(path: &Path, value: &impl Serialize) -> io::Result<()> {
    crate::safe_io::replace_volatile(path, &scrub_bytes(&json_file(value)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn replaces_whole_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint.json");
        fs::write(&path, "old and much longer content").unwrap();
        write_json_atomic(&path, &serde_json::json!({"status": "running"})).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap()["status"], "running");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_view_is_replaced_whole_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "mine").unwrap();
        let path = dir.path().join("summary.json");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        write_json_view(&path, &serde_json::json!({"status": "running"})).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "mine");
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap()["status"], "running");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary file is left");
    }
}
