//! Where harrow's TLS trust roots are read from, settled before libgit2 starts.
//!
//! libgit2 is built with OpenSSL so that `push` and `pr` work over https. When it starts (the
//! first git call of every harrow process) it loads the whole CA bundle that `SSL_CERT_FILE`
//! names (the user's, or the one git2 finds with openssl-probe), whether or not anything is
//! ever pushed: about 20 ms of parsing certificates, a fifth of the CPU of a short run. OpenSSL
//! finds a root just as well when a connection needs it, one file at a time by its subject's
//! hash, in the folder `SSL_CERT_DIR` names. When every certificate of the bundle is also in
//! that folder under a hashed name (`update-ca-certificates` and `c_rehash` write both: Debian,
//! Ubuntu, Alpine, Arch), harrow starts with `SSL_CERT_FILE` at an empty file and
//! `SSL_CERT_DIR` at that folder: the same roots, read only by a push over https. A bundle
//! with one certificate the folder lacks (a company's root added to the bundle alone) is
//! loaded as before.
//!
//! Whatever harrow starts (the worker's commands, validators) gets the two variables as the
//! user had them: [`FILE_WAS`] and [`DIR_WAS`] keep them, and [`crate::hands::environment`]
//! puts them back.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::Path;

mod cache;

/// OpenSSL's variables for the bundle and the hashed folder.
pub const CERT_FILE: &str = "SSL_CERT_FILE";
pub const CERT_DIR: &str = "SSL_CERT_DIR";
/// Set when harrow chose the two variables: what the user had (empty for not set), so the
/// processes harrow starts get that.
pub const FILE_WAS: &str = "HARROW_SSL_CERT_FILE_WAS";
pub const DIR_WAS: &str = "HARROW_SSL_CERT_DIR_WAS";
/// An empty file every Unix system has: a bundle with no certificate in it.
const EMPTY: &str = "/dev/null";
/// The most read of one file: system bundles are a few hundred KB, a hashed file one
/// certificate.
const READ_LIMIT: u64 = 16 << 20;
const PEM_BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
const PEM_END: &[u8] = b"-----END CERTIFICATE-----";

/// The variables a new harrow image should start with so libgit2 loads no bundle; nothing
/// when harrow already chose them or the folder cannot stand for the bundle. With `scan`
/// false only a cached answer is used: a process whose environment still holds keys (see
/// [`crate::keys::seal`]) re-executes at once rather than reading every certificate first,
/// and the image it becomes works the answer out for the next start ([`warm`]).
pub fn deferred(scan: bool) -> Vec<(&'static str, OsString)> {
    let user = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let (file, dir) = (user(CERT_FILE), user(CERT_DIR));
    if std::env::var_os(FILE_WAS).is_some() || file.as_deref() == Some(EMPTY.as_ref()) {
        return Vec::new();
    }
    // The bundle and the folder git2 itself would give OpenSSL: the user's, else the system's
    // (a user's list of folders is left alone).
    let found = openssl_probe::probe();
    let folder = match &dir {
        Some(d) if d.to_string_lossy().contains(':') => return Vec::new(),
        Some(d) => Some(std::path::PathBuf::from(d)),
        None => found.cert_dir,
    };
    let (Some(bundle), Some(folder)) = (found.cert_file, folder) else { return Vec::new() };
    // A user's bundle with no folder of theirs is all that rustls trusts for harrow's own
    // requests (the models, a forge): the folder must then hold nothing more.
    let exact = file.is_some() && dir.is_none();
    if cache::stands_for(&bundle, &folder, exact, scan) != Some(true) {
        return Vec::new();
    }
    let mut env = vec![(CERT_FILE, OsString::from(EMPTY))];
    if dir.is_none() {
        env.push((CERT_DIR, folder.into_os_string()));
    }
    env.push((FILE_WAS, file.unwrap_or_default()));
    env.push((DIR_WAS, dir.unwrap_or_default()));
    env
}

/// Works out and caches whether the folder stands for the bundle, for the next start, when
/// this one could only look in the cache and found nothing.
pub fn warm() {
    let _ = deferred(true);
}

/// Whether `dir` can stand for `bundle`: every certificate of the bundle is also in a file of
/// the folder under a hashed name, as OpenSSL looks it up (before, libgit2 and rustls trusted
/// the bundle and the folder together; now the folder alone) — and with `exact`, the folder
/// holds no certificate the bundle lacks. An empty or unreadable bundle has nothing to stand
/// for.
pub(crate) fn folder_stands_for(bundle: &Path, dir: &Path, exact: bool) -> bool {
    let Some(wanted) = read(bundle).map(|b| certificates(&b)) else { return false };
    if wanted.is_empty() {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    let mut held = HashSet::new();
    for entry in entries.flatten() {
        if is_hashed_name(&entry.file_name().to_string_lossy())
            && let Some(bytes) = read(&entry.path())
        {
            held.extend(certificates(&bytes));
        }
    }
    let wanted: HashSet<Vec<u8>> = wanted.into_iter().collect();
    wanted.is_subset(&held) && (!exact || held.is_subset(&wanted))
}

/// A regular file (a link to one, as the hashed names are, is followed), whole, never waiting
/// on a FIFO or a device; `None` for anything else or anything larger than [`READ_LIMIT`].
fn read(path: &Path) -> Option<Vec<u8>> {
    crate::safe_io::read_capped(path, READ_LIMIT).ok()
}

/// The certificates of a PEM text, each as its base64 body without white space: the same
/// certificate written with other line breaks is the same.
fn certificates(pem: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = pem;
    while let Some(start) = memchr::memmem::find(rest, PEM_BEGIN) {
        let body = &rest[start + PEM_BEGIN.len()..];
        let Some(end) = memchr::memmem::find(body, PEM_END) else { break };
        out.push(body[..end].iter().copied().filter(|b| !b.is_ascii_whitespace()).collect());
        rest = &body[end + PEM_END.len()..];
    }
    out
}

/// OpenSSL's hashed certificate names (`1a2b3c4d.0`): eight lower-case hex digits, a dot and a
/// number; revocation lists (`.r0`) are not certificates.
fn is_hashed_name(name: &str) -> bool {
    let Some((hash, n)) = name.split_once('.') else { return false };
    hash.len() == 8
        && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
}

/// The two variables as the user had them, for a process harrow starts, when `from` (an
/// environment) shows harrow chose them: `Some(value)` to set, `None` to leave out. `None`
/// overall when harrow did not touch them.
pub fn as_the_user_had<'a>(
    from: impl IntoIterator<Item = &'a (OsString, OsString)>,
) -> Option<[(&'static str, Option<OsString>); 2]> {
    let mut was = (None, None);
    for (name, value) in from {
        let kept = Some(value.clone()).filter(|v| !v.is_empty());
        if name == FILE_WAS {
            was.0 = Some(kept);
        } else if name == DIR_WAS {
            was.1 = Some(kept);
        }
    }
    match was {
        (Some(file), Some(dir)) => Some([(CERT_FILE, file), (CERT_DIR, dir)]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn pem(body: &str) -> String {
        format!("-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n")
    }

    /// A bundle of `bundle` certificates and a folder holding `hashed` (name, certificate).
    fn place(bundle: &[&str], hashed: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("certs");
        std::fs::create_dir(&dir).unwrap();
        let file = tmp.path().join("bundle.crt");
        std::fs::write(&file, bundle.iter().map(|b| pem(b)).collect::<String>()).unwrap();
        for (name, body) in hashed {
            std::fs::write(dir.join(name), pem(body)).unwrap();
        }
        (tmp, file, dir)
    }

    #[test]
    fn a_folder_stands_for_the_bundle_only_when_it_holds_every_certificate_of_it() {
        let (_t, file, dir) =
            place(&["AAAA", "BBBB"], &[("1a2b3c4d.0", "AAAA"), ("0000ffff.1", "BB\nBB")]);
        assert!(folder_stands_for(&file, &dir, false));
        // As many files as certificates, but one of the bundle's is not among them (a
        // company's root added to the bundle alone): the bundle must be loaded.
        let (_t, file, dir) =
            place(&["AAAA", "CORP"], &[("1a2b3c4d.0", "AAAA"), ("0000ffff.1", "BBBB")]);
        assert!(!folder_stands_for(&file, &dir, false));
        // Only hashed names count: a revocation list, a plain name, upper-case hex.
        for name in ["1a2b3c4d.r0", "corp.pem", "1A2B3C4D.0", "1a2b3c4d.", "1a2b3c4.0"] {
            let (_t, file, dir) =
                place(&["AAAA", "CORP"], &[("1a2b3c4d.0", "AAAA"), (name, "CORP")]);
            assert!(!folder_stands_for(&file, &dir, false), "{name}");
        }
        // Exact: a folder holding a certificate the bundle lacks cannot stand for it when the
        // bundle is all rustls trusts.
        let (_t, file, dir) =
            place(&["AAAA"], &[("1a2b3c4d.0", "AAAA"), ("0000ffff.0", "SNAKEOIL")]);
        assert!(folder_stands_for(&file, &dir, false));
        assert!(!folder_stands_for(&file, &dir, true));
        // An empty bundle, or none: nothing to stand for.
        let (_t, file, dir) = place(&[], &[("1a2b3c4d.0", "AAAA")]);
        assert!(!folder_stands_for(&file, &dir, false));
        assert!(!folder_stands_for(&dir.join("absent.crt"), &dir, false));
    }

    #[test]
    fn a_started_process_gets_the_variables_the_user_had() {
        let user = [(OsString::from(CERT_FILE), OsString::from("/etc/corp.pem"))];
        assert_eq!(as_the_user_had(&user), None);
        let ours = [
            (OsString::from(CERT_FILE), OsString::from(EMPTY)),
            (OsString::from(FILE_WAS), OsString::from("/etc/corp.pem")),
            (OsString::from(DIR_WAS), OsString::new()),
        ];
        assert_eq!(
            as_the_user_had(&ours),
            Some([(CERT_FILE, Some("/etc/corp.pem".into())), (CERT_DIR, None)])
        );
    }
}
