//! Answers a harrow start works out and keeps in harrow's cache folder for the next start: each
//! file one line, the question with the stamps of everything that decides its answer, then the
//! answer. A start whose question and stamps are the same reads the answer instead of working
//! it out again; anything else (another question, a stamp moved, a file cut short) works it out.
//!
//! The cache folder is the user's (a sandboxed command cannot write it); what is found there is
//! still read only as a regular file, capped and without waiting, so a FIFO or a device planted
//! there cannot hold a start. What a caller keeps must be safe to believe when planted: the
//! worst a false answer may do is cost the work it saves.

use std::path::{Path, PathBuf};

/// The most of a file read: one line.
const READ_LIMIT: u64 = 8 << 10;

/// A folder of remembered answers.
#[derive(Debug, Clone)]
pub struct Remembered {
    folder: Option<PathBuf>,
}

impl Remembered {
    /// harrow's cache folder (`$XDG_CACHE_HOME/harrow`); none where it cannot be found, and
    /// then every answer is worked out.
    pub fn here() -> Remembered {
        let folder =
            directories::ProjectDirs::from("", "", "harrow").map(|d| d.cache_dir().to_path_buf());
        Remembered { folder }
    }

    /// The answers kept in `folder`.
    pub fn in_folder(folder: &Path) -> Remembered {
        Remembered { folder: Some(folder.to_path_buf()) }
    }

    /// The answer kept under `name` for `question`, if the file holds that very question.
    pub fn recall(&self, name: &str, question: &str) -> Option<String> {
        let file = self.folder.as_ref()?.join(name);
        let text = crate::safe_io::read_text_capped(&file, READ_LIMIT).ok()?;
        let answer = text.strip_prefix(question)?.strip_prefix(" = ")?.strip_suffix('\n')?;
        (!answer.contains('\n')).then(|| answer.to_owned())
    }

    /// Keeps `answer` to `question` under `name`, whole or not at all (a temporary file
    /// renamed into place). A cache folder that cannot be written only costs the next start
    /// the work, and an answer lost in a crash is worked out again.
    pub fn keep(&self, name: &str, question: &str, answer: &str) {
        if let Some(folder) = &self.folder
            && std::fs::create_dir_all(folder).is_ok()
        {
            let line = format!("{question} = {answer}\n");
            let _ = crate::safe_io::replace_volatile(&folder.join(name), line.as_bytes());
        }
    }
}

/// A file's stamps as a question names them: device, inode, length, and its modification and
/// change times (links followed, as a reader of the path follows them). `None` when it cannot
/// be read, so nothing is recalled for it.
pub fn stamps(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(format!(
        "\"{}\" {}:{}:{}:{}.{}:{}.{}",
        path.to_string_lossy().escape_debug(),
        m.dev(),
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_read_back_only_for_the_same_question() {
        let tmp = tempfile::tempdir().unwrap();
        let kept = Remembered::in_folder(tmp.path());
        kept.keep("probe", "q v1 a:1", "yes");
        assert_eq!(kept.recall("probe", "q v1 a:1").as_deref(), Some("yes"));
        assert_eq!(kept.recall("probe", "q v1 a:2"), None, "another stamp");
        assert_eq!(kept.recall("probe", "q v1"), None, "a question cut short");
        assert_eq!(kept.recall("other", "q v1 a:1"), None);
        std::fs::write(tmp.path().join("probe"), "q v1 a:1 = yes\nmore\n").unwrap();
        assert_eq!(kept.recall("probe", "q v1 a:1"), None, "more than one line");
        std::fs::write(tmp.path().join("probe"), "q v1 a:1 = yes").unwrap();
        assert_eq!(kept.recall("probe", "q v1 a:1"), None, "a line cut short");
    }

    #[test]
    fn a_planted_fifo_or_link_is_neither_waited_on_nor_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let kept = Remembered::in_folder(tmp.path());
        let fifo = tmp.path().join("probe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        assert_eq!(kept.recall("probe", "q"), None);
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "mine\n").unwrap();
        std::os::unix::fs::symlink(&victim, tmp.path().join("linked")).unwrap();
        kept.keep("linked", "q", "yes");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
        assert_eq!(kept.recall("linked", "q").as_deref(), Some("yes"));
    }

    #[test]
    fn stamps_move_when_the_file_is_rewritten() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("bwrap");
        std::fs::write(&file, "x").unwrap();
        let before = stamps(&file).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&file, "yy").unwrap();
        assert_ne!(stamps(&file).unwrap(), before);
        assert_eq!(stamps(&tmp.path().join("gone")), None);
    }
}
