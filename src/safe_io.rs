//! Opening files in folders that someone else can write: a session folder shared with other
//! users, a worktree or a lane's git folder the worker's commands reach. Whatever is found
//! there is hostile input to harrow itself, so every write here refuses to follow a link at
//! the last component (a planted `control.jsonl → ~/.bashrc` must not make harrow write the
//! operator's files), and every read opens only a regular file without waiting (a FIFO never
//! blocks a reader, `/dev/zero` is never read) and only up to a limit.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most a session's side file (`summary.json`, `checkpoint.json`, `progress.txt`, a plan
/// copy) is read to: far above what a run writes, far below what would strain the machine
/// when a shared folder holds a planted giant.
pub const SMALL_FILE: u64 = 64 << 20;

/// The flags every open here adds: never wait on a FIFO or a device, never leak into a child.
const NO_WAIT: i32 = libc::O_NONBLOCK | libc::O_CLOEXEC;

/// Why a file was not opened, for the error's text: what it is instead of a regular file.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Refuses an open file that is not a regular file, naming what it is.
fn regular(file: File, path: &Path) -> io::Result<File> {
    let meta = file.metadata()?;
    if meta.is_file() {
        Ok(file)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is {}, not a regular file", path.display(), kind_of(&meta)),
        ))
    }
}

/// Opens `path` for appending, creating it when missing, without following a link at its last
/// component and only when it is a regular file. What harrow appends to in a session folder
/// (`control.jsonl`, `resume.log`, the event log) goes through this.
pub fn open_append(path: &Path) -> io::Result<File> {
    open_no_follow(path, OpenOptions::new().create(true).append(true))
}

/// Opens `path` to write from its start (not truncated), with the same refusals as
/// [`open_append`]; the file must exist.
pub fn open_write(path: &Path) -> io::Result<File> {
    open_no_follow(path, OpenOptions::new().write(true))
}

/// Creates `path` afresh for writing, truncating a regular file that is there, never through a
/// link.
pub fn create(path: &Path) -> io::Result<File> {
    let file = open_no_follow(path, OpenOptions::new().create(true).write(true))?;
    file.set_len(0)?;
    Ok(file)
}

/// Opens `path` as `how` says, refusing a link at its last component, never waiting, and
/// only when it is a regular file.
fn open_no_follow(path: &Path, how: &mut OpenOptions) -> io::Result<File> {
    let file = how
        .custom_flags(libc::O_NOFOLLOW | NO_WAIT)
        .mode(0o644)
        .open(path)
        .map_err(|e| refused_link(e, path))?;
    regular(file, path)
}

/// `ELOOP` from `O_NOFOLLOW` in words.
fn refused_link(e: io::Error, path: &Path) -> io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is a symbolic link; harrow does not write through links", path.display()),
        )
    } else {
        e
    }
}

/// Replaces `path` whole with `bytes`: written to a fresh temporary file in the same folder
/// (created exclusively, so a link planted at its name is never followed), synced and renamed
/// over the target. A link at `path` is replaced, not written through.
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_as(path, bytes, true)
}

/// [`replace`] without syncing: for a file rewritten many times a second whose loss in a
/// crash costs nothing (the reply in flight).
pub fn replace_volatile(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_as(path, bytes, false)
}

fn replace_as(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut attempt = 0u32;
    let (tmp, mut file) = loop {
        let tmp = dir.join(format!(".{name}.tmp-{}-{}", std::process::id(), unique(attempt)));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(0o644)
            .open(&tmp)
        {
            Ok(file) => break (tmp, file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    let result = (|| {
        file.write_all(bytes)?;
        if durable {
            file.sync_all()?;
        }
        std::fs::rename(&tmp, path)?;
        if !durable {
            return Ok(());
        }
        if let Ok(d) = File::open(dir) {
            // Persist the rename itself; some file systems cannot sync a folder, which is fine.
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A number that differs between calls, for temporary names.
fn unique(attempt: u32) -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    (n << 32) ^ nanos ^ u64::from(attempt)
}

/// Opens `path` for reading only when it is a regular file (a link to one is fine: reading
/// writes nothing), without ever waiting on a FIFO or a device.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new().read(true).custom_flags(NO_WAIT).open(path)?;
    regular(file, path)
}

/// Opens `path` for reading only when it is a regular file itself, not a link to one: for a
/// file in a folder another process writes, which could point a link anywhere.
pub fn open_regular_no_follow(path: &Path) -> io::Result<File> {
    open_no_follow(path, OpenOptions::new().read(true))
}

/// Reads a whole regular file of at most `limit` bytes; a larger one is refused, never held.
pub fn read_capped(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let len = file.metadata()?.len();
    if len > limit {
        return Err(too_large(path, limit));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(path, limit));
    }
    Ok(bytes)
}

fn too_large(path: &Path, limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{} is larger than {limit} bytes; harrow does not read it whole", path.display()),
    )
}

/// A file the operator names (a plan, a config, comments, answers), read whole as UTF-8 text:
/// a regular file of at most `limit` bytes, opened without waiting, so a FIFO or a device
/// named by mistake (or planted) is refused at once with what it is, never waited on.
pub fn read_named(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_capped(path, limit)?).map_err(|_| {
        io::Error::new(io::ErrorKind::InvalidData, format!("{} is not UTF-8 text", path.display()))
    })
}

/// [`read_capped`] as UTF-8 text (invalid bytes replaced).
pub fn read_text_capped(path: &Path, limit: u64) -> io::Result<String> {
    read_capped(path, limit).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Makes the folder `path` when missing; refuses one that is a link (a write below it would
/// land wherever the link points).
pub fn ensure_dir(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is {}, not a folder harrow made", path.display(), kind_of(&meta)),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => std::fs::create_dir_all(path),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn no_write_follows_a_planted_link_and_the_victim_keeps_its_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let link = tmp.path().join("control.jsonl");
        symlink(&victim, &link).unwrap();
        let e = open_append(&link).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(open_write(&link).is_err());
        assert!(create(&link).is_err());
        replace(&link, b"harrow's\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(!std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "harrow's\n");
        let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 2, "no temporary file is left");
    }

    #[test]
    fn readers_refuse_fifos_devices_folders_and_what_is_too_large_without_waiting() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("events.jsonl");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        let e = open_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        assert!(open_append(&fifo).is_err(), "a FIFO is never written either");
        let zero = tmp.path().join("zero");
        symlink("/dev/zero", &zero).unwrap();
        assert!(read_capped(&zero, 1 << 20).unwrap_err().to_string().contains("a device"));
        assert!(open_regular(tmp.path()).unwrap_err().to_string().contains("a folder"));
        let big = tmp.path().join("summary.json");
        std::fs::write(&big, vec![b'x'; 2000]).unwrap();
        assert!(read_capped(&big, 1999).unwrap_err().to_string().contains("larger than"));
        assert_eq!(read_capped(&big, 2000).unwrap().len(), 2000);
    }

    #[test]
    fn a_folder_that_is_a_link_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        symlink(&elsewhere, tmp.path().join("ledger")).unwrap();
        assert!(ensure_dir(&tmp.path().join("ledger")).is_err());
        ensure_dir(&tmp.path().join("fresh/deeper")).unwrap();
        ensure_dir(&tmp.path().join("fresh")).unwrap();
    }
}
