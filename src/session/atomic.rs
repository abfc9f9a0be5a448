//! Writing the session's side files: whole-file replacement that a crash can never leave
//! half-written, and appended lines. Everything written here passes the key scrub
//! ([`crate::keys::scrub`]), as the event log does: a key a model or a provider echoed into a
//! verdict, a ledger entry or a learning never reaches the disk.

use serde::Serialize;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` through a temporary file in the same folder, synced and renamed
/// over the target, so readers see the old file or the new one and never a torn mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let scrubbed = scrub_bytes(bytes);
    let bytes: &[u8] = &scrubbed;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = File::open(dir) {
            // Persist the rename itself; some filesystems cannot sync a directory, which is fine.
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `bytes` with every known key taken out (text that is not UTF-8 is scrubbed as far as it is).
fn scrub_bytes(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let text = String::from_utf8_lossy(bytes);
    match crate::keys::scrub(&text) {
        std::borrow::Cow::Owned(clean) => std::borrow::Cow::Owned(clean.into_bytes()),
        std::borrow::Cow::Borrowed(_) => std::borrow::Cow::Borrowed(bytes),
    }
}

/// Appends `text` to `path` (created when missing), scrubbed, and syncs it.
pub fn append_scrubbed(path: &Path, text: &str) -> io::Result<()> {
    let mut file = fs::OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(crate::keys::scrub(text).as_bytes())?;
    file.sync_data()
}

/// [`write_atomic`] of a value as pretty-printed JSON, the way Tilth writes its state files.
pub fn write_json_atomic(path: &Path, value: &impl Serialize) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
