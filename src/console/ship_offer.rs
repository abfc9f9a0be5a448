//! `P` on a run that has ended: what pushing its branch or opening its pull request would send
//! — the branch, the remote, the title and the first lines of the description — read on a
//! job, shown, and sent only when the person presses `y`. The outcome is a notice here and an
//! event in the session's log (written by the ship code), so the stream shows it too.

use super::chrome::popup;
use super::keymap::Action;
use super::outcome::Outcome;
use crate::ship::preview::Preview;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// The offer on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShipOffer {
    pub preview: Preview,
    /// A pull request (push first), or a push only.
    pub pr: bool,
}

impl ShipOffer {
    /// A pull request when the remote is on a forge, else a push.
    pub fn new(preview: Preview) -> ShipOffer {
        let pr = preview.forge.is_ok();
        ShipOffer { preview, pr }
    }

    pub fn act(&mut self, action: Action) -> Outcome {
        match action {
            Action::Submit => {
                Outcome::Ship { pr: self.pr, partial: !self.preview.unfinished.is_empty() }
            }
            Action::Focus if self.preview.forge.is_ok() => {
                self.pr = !self.pr;
                Outcome::Stay
            }
            Action::Focus => Outcome::Notice(format!(
                "push only: {}",
                self.preview.forge.as_ref().err().map_or("", String::as_str)
            )),
            Action::Cancel => Outcome::Closed,
            _ => Outcome::Unbound,
        }
    }

    /// The offer in words, one string per line.
    pub fn lines(&self) -> Vec<String> {
        let p = &self.preview;
        let mut lines = vec![
            format!("branch   {} → {} ({})", p.branch, p.remote, p.url),
            format!(
                "push     {}",
                if p.git_token {
                    "with $HARROW_GIT_TOKEN"
                } else {
                    "with your git credentials (helper, ssh-agent, ~/.ssh)"
                }
            ),
        ];
        match &p.forge {
            Ok((forge, var, true)) => lines.push(format!("forge    {forge}, with ${var}")),
            Ok((forge, var, false)) => lines.push(format!(
                "forge    {forge}: ${var} is not set — the description goes to a file, with the page to paste it on"
            )),
            Err(why) => lines.push(format!("forge    none: {why}")),
        }
        lines.push(format!("title    {}", p.title));
        if let Some(url) = &p.open_pr {
            lines.push(format!(
                "open     {url}: the push goes to it, and its description becomes the record as it stands"
            ));
        }
        if !p.unfinished.is_empty() {
            lines.push(format!(
                "partial  {} did not finish: only what was accepted goes",
                p.unfinished.join(", ")
            ));
        }
        lines.push(String::new());
        lines.extend(p.body.iter().map(|l| format!("  │ {l}")));
        lines.push("  │ …".into());
        lines.push(String::new());
        lines.push(match (self.pr, p.forge.is_ok()) {
            (true, _) if p.open_pr.is_some() => {
                "y  push, then update the pull request   Tab  push only   Esc  cancel".into()
            }
            (true, _) => {
                "y  push, then open the pull request   Tab  push only   Esc  cancel".into()
            }
            (false, true) => "y  push the branch   Tab  pull request   Esc  cancel".into(),
            (false, false) => "y  push the branch   Esc  cancel".into(),
        });
        lines
    }

    pub fn draw(&self, frame: &mut Frame, area: Rect) {
        let lines: Vec<Line> = self.lines().into_iter().map(Line::raw).collect();
        let width = area.width.saturating_sub(4).min(110);
        let height = (lines.len() as u16 + 2).min(area.height);
        let rect = popup(frame, area, width, height, area.height.saturating_sub(height) / 3);
        let title = match (self.pr, self.preview.open_pr.is_some()) {
            (true, true) => " Update the pull request ",
            (true, false) => " Open a pull request ",
            (false, _) => " Push the branch ",
        };
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
            rect,
        );
    }
}

impl super::views::View for ShipOffer {
    fn mode(&self) -> super::keymap::Mode {
        super::keymap::Mode::ShipPrompt
    }

    /// Stays open while it only scrolls or says something; what ships or closes closes it.
    fn act(&mut self, action: Action) -> super::views::Step {
        let outcome = ShipOffer::act(self, action);
        if matches!(outcome, Outcome::Stay | Outcome::Notice(_) | Outcome::Unbound) {
            super::views::Step::Stay(outcome)
        } else {
            super::views::Step::Close(outcome)
        }
    }

    fn draw(&self, frame: &mut Frame, area: Rect, _paint: &super::views::Paint<'_>) {
        ShipOffer::draw(self, frame, area);
    }
}
