//! Themes: named colours for each role on screen, read from TOML (`themes/*.toml` built in, more
//! from the config dir's `themes/`). `NO_COLOR` turns every colour off whatever the theme.

use crate::session::state::TaskState;
use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The built-in themes, in the order `t` cycles through them.
const BUILT_IN: [(&str, &str); 3] = [
    ("dark.toml", include_str!("../../themes/dark.toml")),
    ("light.toml", include_str!("../../themes/light.toml")),
    ("high-contrast.toml", include_str!("../../themes/high-contrast.toml")),
];

/// A theme file as written: every role needs a colour, so a file cannot half-apply.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: String,
    colors: ColorsFile,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ColorsFile {
    status_fg: String,
    status_bg: String,
    border: String,
    focus: String,
    title: String,
    muted: String,
    notice: String,
    selected_fg: String,
    selected_bg: String,
    match_bg: String,
    ok: String,
    warn: String,
    bad: String,
    waiting: String,
    active: String,
    band_a: String,
    band_b: String,
}

/// The colour of each role on screen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Colors {
    pub status_fg: Color,
    pub status_bg: Color,
    pub border: Color,
    pub focus: Color,
    pub title: Color,
    pub muted: Color,
    pub notice: Color,
    pub selected_fg: Color,
    pub selected_bg: Color,
    pub match_bg: Color,
    pub ok: Color,
    pub warn: Color,
    pub bad: Color,
    pub waiting: Color,
    pub active: Color,
    pub band_a: Color,
    pub band_b: Color,
}

/// A theme ready to draw with. With `color` off (`NO_COLOR`) every style is plain and emphasis
/// falls back to reverse video and bold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Theme {
    pub name: String,
    pub color: bool,
    pub colors: Colors,
}

fn parse(text: &str) -> Result<(String, Colors), String> {
    let file: ThemeFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        match line {
            Some(l) => format!("line {l}: {}", e.message()),
            None => e.message().to_owned(),
        }
    })?;
    let c = &file.colors;
    let get = |role: &str, value: &str| -> Result<Color, String> {
        value.parse().map_err(|_| {
            format!("{role} = {value:?} is not a colour (a name like \"light-blue\", 0–255 or \"#rrggbb\")")
        })
    };
    Ok((
        file.name,
        Colors {
            status_fg: get("status_fg", &c.status_fg)?,
            status_bg: get("status_bg", &c.status_bg)?,
            border: get("border", &c.border)?,
            focus: get("focus", &c.focus)?,
            title: get("title", &c.title)?,
            muted: get("muted", &c.muted)?,
            notice: get("notice", &c.notice)?,
            selected_fg: get("selected_fg", &c.selected_fg)?,
            selected_bg: get("selected_bg", &c.selected_bg)?,
            match_bg: get("match_bg", &c.match_bg)?,
            ok: get("ok", &c.ok)?,
            warn: get("warn", &c.warn)?,
            bad: get("bad", &c.bad)?,
            waiting: get("waiting", &c.waiting)?,
            active: get("active", &c.active)?,
            band_a: get("band_a", &c.band_a)?,
            band_b: get("band_b", &c.band_b)?,
        },
    ))
}

/// Where user themes live: `themes/` beside the configuration file.
pub fn user_dir() -> Option<PathBuf> {
    crate::config::config_path(None).and_then(|p| p.parent().map(|d| d.join("themes")))
}

/// Every theme there is, never none: the built-in ones, then the user's (a user theme with a
/// built-in name replaces it). A user file that does not parse is left out and reported, one
/// line per file.
pub fn load_all(user_dir: Option<&Path>) -> (Vec<Theme>, Vec<String>) {
    let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let mut themes = Vec::new();
    let mut problems = Vec::new();
    for (file, text) in BUILT_IN {
        match parse(text) {
            Ok((name, colors)) => themes.push(Theme { name, color, colors }),
            Err(e) => problems.push(format!("built-in theme {file}: {e}")),
        }
    }
    let mut files: Vec<PathBuf> = user_dir
        .and_then(|d| std::fs::read_dir(d).ok())
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for path in files {
        let parsed =
            std::fs::read_to_string(&path).map_err(|e| e.to_string()).and_then(|t| parse(&t));
        match parsed {
            Ok((name, colors)) => {
                let theme = Theme { name, color, colors };
                match themes.iter_mut().find(|t| t.name == theme.name) {
                    Some(existing) => *existing = theme,
                    None => themes.push(theme),
                }
            }
            Err(e) => problems.push(format!("{}: {e}; fix it or move it aside", path.display())),
        }
    }
    if themes.is_empty() {
        // Only a broken build has no built-in theme (a test parses them); draw without colour.
        themes.push(Theme { name: "plain".into(), color: false, colors: Colors::default() });
    }
    (themes, problems)
}

/// How the console looks and calls for attention: its themes, the one to start with, and the
/// notification style. The binary reads them from the user's files and environment
/// ([`Look::from_user`]); tests pass [`Look::built_in`], so nothing of the machine leaks in.
#[derive(Debug, Clone)]
pub struct Look {
    pub themes: Vec<Theme>,
    pub theme: usize,
    pub notify: crate::config::Notify,
    /// A user theme or config that could not be read, said once on screen.
    pub problem: Option<String>,
}

impl Look {
    /// The user's themes, `$HARROW_THEME` or the config's theme, `NO_COLOR`, and the
    /// config's notification style.
    pub fn from_user() -> Look {
        let (themes, problems) = load_all(user_dir().as_deref());
        let console = crate::config::Config::load(None).map(|(c, _)| c.console).ok();
        Look {
            theme: initial(&themes),
            themes,
            notify: console.and_then(|c| c.notify).unwrap_or_default(),
            problem: problems.into_iter().next(),
        }
    }

    /// The theme selected.
    pub fn current(&self) -> &Theme {
        &self.themes[self.theme.min(self.themes.len().saturating_sub(1))]
    }

    /// The built-in themes only, the first selected, in colour or not: no file or variable
    /// of the machine is read.
    pub fn built_in(color: bool) -> Look {
        let themes = BUILT_IN
            .iter()
            .filter_map(|(_, text)| parse(text).ok())
            .map(|(name, colors)| Theme { name, color, colors })
            .collect();
        Look { themes, theme: 0, notify: crate::config::Notify::Bell, problem: None }
    }
}

/// The theme to start with: `$HARROW_THEME`, else the configuration's `[console] theme`, else
/// the first. A name that matches no theme falls back to the first.
pub fn initial(themes: &[Theme]) -> usize {
    let wanted = std::env::var("HARROW_THEME")
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| crate::config::Config::load(None).ok().and_then(|(c, _)| c.console.theme));
    wanted.and_then(|w| themes.iter().position(|t| t.name == w)).unwrap_or(0)
}

impl Theme {
    /// Text in `c`, or plain text without colour.
    pub fn fg(&self, c: Color) -> Style {
        if self.color { Style::default().fg(c) } else { Style::default() }
    }

    pub fn status(&self) -> Style {
        if self.color {
            Style::default().fg(self.colors.status_fg).bg(self.colors.status_bg)
        } else {
            Style::default().add_modifier(Modifier::REVERSED)
        }
    }

    /// The selected row of a focused list.
    pub fn selected(&self) -> Style {
        if self.color {
            Style::default().fg(self.colors.selected_fg).bg(self.colors.selected_bg)
        } else {
            Style::default().add_modifier(Modifier::REVERSED)
        }
    }

    /// The row a search landed on.
    pub fn matched(&self) -> Style {
        if self.color {
            Style::default().bg(self.colors.match_bg).add_modifier(Modifier::BOLD)
        } else {
            Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        }
    }

    pub fn border(&self, focused: bool) -> Style {
        match (focused, self.color) {
            (true, true) => Style::default().fg(self.colors.focus).add_modifier(Modifier::BOLD),
            (true, false) => Style::default().add_modifier(Modifier::BOLD),
            (false, _) => self.fg(self.colors.border),
        }
    }

    /// A task state in the plan.
    pub fn state(&self, state: &TaskState) -> Style {
        self.fg(match state {
            TaskState::Done => self.colors.ok,
            TaskState::DoneBelowBar | TaskState::DoneUnreviewed => self.colors.warn,
            TaskState::Failed => self.colors.bad,
            TaskState::NeedsOperator | TaskState::Blocked => self.colors.waiting,
            TaskState::Pending | TaskState::Skipped => self.colors.muted,
            TaskState::Running
            | TaskState::Validating
            | TaskState::Evaluating
            | TaskState::Rework
            | TaskState::Other(_) => self.colors.active,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_themes_parse_and_a_bad_user_theme_is_one_line_naming_the_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("mine.toml"), BUILT_IN[0].1.replace("\"dark\"", "\"mine\""))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            dir.path().join("broken.toml"),
            BUILT_IN[0].1.replace("ok = \"green\"", "ok = \"grean\""),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let (themes, problems) = load_all(Some(dir.path()));
        let names: Vec<&str> = themes.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["dark", "light", "high-contrast", "mine"]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("broken.toml") && problems[0].contains("ok = \"grean\""));
        assert!(!problems[0].contains('\n'));
    }
}
