//! A private tmux server running the real binary: keys in, screens out. Each test starts its
//! own server on its own socket, ended when the handle is dropped.

// Compiled into each test crate that includes it; each uses part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A private tmux server running the real binary.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn start(cmd: &str, w: u16, h: u16) -> Tmux {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let socket = format!("harrow-test-{}-{n}", std::process::id());
        let shell = format!("{cmd}; status=$?; echo; echo \"[exit $status]\"; sleep 30");
        let ok = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
                &shell,
            ])
            .status()
            .unwrap();
        assert!(ok.success(), "tmux could not start");
        Tmux { socket }
    }

    pub fn keys(&self, keys: &[&str]) {
        Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t"])
            .args(keys)
            .status()
            .unwrap();
    }

    /// Runs a tmux command on this test's server (`set -g set-clipboard off`).
    pub fn command(&self, args: &[&str]) {
        let ok = Command::new("tmux").args(["-L", &self.socket]).args(args).status().unwrap();
        assert!(ok.success(), "tmux {args:?}");
    }

    /// Types text literally (tmux would read `{` and the like as its own syntax).
    pub fn literal(&self, text: &str) {
        Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t", "-l", text])
            .status()
            .unwrap();
    }

    /// What a tmux command of this server prints (`show-buffer`, an option's value).
    pub fn ask(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits for the shell's `[exit N]` line after the program (`needle` is `[exit ` or the
    /// whole marker): a line that begins with it, so a program's own text that merely holds
    /// those words (a replayed tool's output) is never taken for its end.
    pub fn wait_exit(&self, needle: &str) -> String {
        self.wait_exit_long(needle, 60)
    }

    pub fn wait_exit_long(&self, needle: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.screen();
            if s.lines().any(|l| l.starts_with(needle)) {
                return s;
            }
            assert!(Instant::now() < deadline, "{needle:?} never ended a line; the screen:\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_long(needle, 60)
    }

    /// Waits until `needle` is off the screen: what a key that closes a view did, so the next
    /// key is read on its own (an Escape and a key that arrive together read as Alt and the
    /// key).
    pub fn wait_gone(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let s = self.screen();
            if !s.contains(needle) {
                return s;
            }
            assert!(Instant::now() < deadline, "{needle:?} never went; the screen:\n{s}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Escape, then a wait until `needle` (in the view it closes) is off the screen.
    pub fn escape_from(&self, needle: &str) -> String {
        self.keys(&["Escape"]);
        self.wait_gone(needle)
    }

    pub fn wait_long(&self, needle: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if self.screen().contains(needle) {
                // Under load tmux can catch a frame half drawn: read it again once it is done.
                std::thread::sleep(Duration::from_millis(200));
                let s = self.screen();
                if s.contains(needle) {
                    return s;
                }
            }
            let s = self.screen();
            assert!(Instant::now() < deadline, "{needle:?} never appeared; the screen:\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Tmux {
    /// Copies everything the program writes to the pane, escape sequences included, to `file`.
    pub fn record(&self, file: &Path) {
        let ok = Command::new("tmux")
            .args(["-L", &self.socket, "pipe-pane", "-o", "-t", "t"])
            .arg(format!("cat >> {}", file.display()))
            .status()
            .unwrap();
        assert!(ok.success());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).status();
    }
}
