//! Where a copy (`y`) goes, and what the person is told of it. The text is always sent to the
//! terminal as OSC 52, which a terminal may ignore and tmux passes only when its
//! `set-clipboard` allows; so the copy is also put where this machine keeps copies — tmux's
//! paste buffer, else a clipboard program that is there — and the words say what happened.

use std::io::Write;
use std::process::{Command, Stdio};

/// Clipboard programs, tried in order when harrow is not inside tmux: each with the
/// environment variable that says its display is there (none: always worth a try).
const PROGRAMS: &[(&str, &[&str], Option<&str>)] = &[
    ("wl-copy", &[], Some("WAYLAND_DISPLAY")),
    ("xclip", &["-selection", "clipboard"], Some("DISPLAY")),
    ("xsel", &["--clipboard", "--input"], Some("DISPLAY")),
    ("pbcopy", &[], None),
];

/// Puts `text` where copies are kept and says where it went.
pub fn deliver(text: &str) -> String {
    let lines = text.lines().count();
    if std::env::var_os("TMUX").is_some() {
        let buffered = pipe_to("tmux", &["load-buffer", "-"], text);
        return report(
            lines,
            tmux_set_clipboard().as_deref().or(Some("")),
            buffered.then_some("tmux"),
        );
    }
    let program = PROGRAMS.iter().find(|(name, args, display)| {
        display.is_none_or(|var| std::env::var_os(var).is_some()) && pipe_to(name, args, text)
    });
    report(lines, None, program.map(|(name, ..)| *name))
}

/// What `y` did, in words. `tmux_setting` is tmux's `set-clipboard` when inside tmux (empty
/// when tmux could not say); `kept_by` is where a copy was also put (`tmux` for its paste
/// buffer, or the clipboard program).
pub fn report(lines: usize, tmux_setting: Option<&str>, kept_by: Option<&str>) -> String {
    let buffered = kept_by == Some("tmux");
    match (tmux_setting, buffered) {
        (Some("off"), true) => format!(
            "copied {lines} line(s) into tmux's paste buffer (prefix ]); the clipboard gets it only after `tmux set -g set-clipboard on` (set-clipboard is off) and y again"
        ),
        (Some("off"), false) => format!(
            "tmux keeps the copy of {lines} line(s) from the clipboard (set-clipboard is off): run `tmux set -g set-clipboard on` (or add it to ~/.tmux.conf) and press y again"
        ),
        (Some(_), true) => format!(
            "sent {lines} line(s) to the clipboard through tmux (OSC 52; the outer terminal must allow it) and into its paste buffer"
        ),
        (Some(_), false) => format!(
            "sent {lines} line(s) to the clipboard through tmux (OSC 52; the outer terminal must allow it)"
        ),
        (None, _) => match kept_by {
            Some(program) => format!("copied {lines} line(s) to the clipboard with {program}"),
            None => format!(
                "sent {lines} line(s) to the terminal's clipboard (OSC 52; a terminal without it ignores it)"
            ),
        },
    }
}

/// Runs `program args` with `text` on its standard input; whether it took it.
fn pipe_to(program: &str, args: &[&str], text: &str) -> bool {
    let Ok(mut child) = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let written =
        child.stdin.take().is_some_and(|mut stdin| stdin.write_all(text.as_bytes()).is_ok());
    child.wait().is_ok_and(|status| status.success()) && written
}

/// tmux's `set-clipboard` option, when tmux can be asked.
fn tmux_set_clipboard() -> Option<String> {
    let out = Command::new("tmux")
        .args(["show-options", "-gv", "set-clipboard"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::report;

    #[test]
    fn each_place_a_copy_went_is_said() {
        assert!(report(2, Some("off"), Some("tmux")).contains("set-clipboard is off"));
        assert!(report(2, Some("off"), Some("tmux")).contains("paste buffer"));
        assert!(report(2, Some("on"), None).contains("through tmux"));
        assert!(!report(2, Some("on"), None).contains("paste buffer"));
        assert_eq!(report(1, None, Some("xclip")), "copied 1 line(s) to the clipboard with xclip");
        assert!(report(1, None, None).contains("OSC 52"));
    }
}
