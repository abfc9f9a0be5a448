//! The interview screen of `harrow prep`: the conversation above, the answer being written
//! below in a text area (Ctrl-S or Alt-Enter sends, Esc asks whether to stop), and the draft
//! to review before anything is written (`y` writes it, `e` edits any part of it by hand, `r`
//! sends it back with a note, `n` writes nothing). The terminal is restored when the screen is dropped, on error and on panic.

use crate::prep::{Decision, Person};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use tui_textarea::TextArea;

/// Who said a line of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Model,
    Person,
    Harrow,
}

/// The interview on the whole terminal.
#[derive(Debug)]
pub struct InterviewScreen {
    terminal: ratatui::DefaultTerminal,
    said: Vec<(Who, String)>,
    stopped: bool,
    /// Rows scrolled back from the newest, while reviewing a long draft.
    back: usize,
}

/// What a key did while writing.
enum Typed {
    Send,
    Stop,
    Edit,
}

fn typed(key: &KeyEvent) -> Typed {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    match key.code {
        KeyCode::Char('s') if ctrl => Typed::Send,
        KeyCode::Enter if alt => Typed::Send,
        KeyCode::Esc => Typed::Stop,
        KeyCode::Char('c') if ctrl => Typed::Stop,
        _ => Typed::Edit,
    }
}

impl InterviewScreen {
    /// Takes the terminal for the interview.
    pub fn open() -> std::io::Result<InterviewScreen> {
        Ok(InterviewScreen {
            terminal: ratatui::try_init()?,
            said: Vec::new(),
            stopped: false,
            back: 0,
        })
    }

    /// Draws the conversation, the text area (when writing) and the hint line.
    fn draw(&mut self, text: Option<&TextArea<'static>>, hint: &str) {
        let said = &self.said;
        let back = self.back;
        let _ = self.terminal.draw(|frame| {
            let [talk, input, hints] = Layout::vertical([
                Constraint::Min(3),
                Constraint::Length(if text.is_some() { 7 } else { 0 }),
                Constraint::Length(1),
            ])
            .areas(frame.area());
            let mut lines = Vec::new();
            for (who, text) in said {
                let (label, style) = match who {
                    Who::Model => ("prep", Style::default().add_modifier(Modifier::BOLD)),
                    Who::Person => ("you", Style::default()),
                    Who::Harrow => ("harrow", Style::default().add_modifier(Modifier::DIM)),
                };
                lines.push(Line::styled(format!("{label}:"), style));
                lines.extend(text.lines().map(|l| Line::styled(format!("  {l}"), style)));
                lines.push(Line::raw(""));
            }
            let width = usize::from(talk.width.saturating_sub(2)).max(1);
            let rows: usize = lines.iter().map(|l| l.width().max(1).div_ceil(width)).sum();
            let top = rows
                .saturating_sub(usize::from(talk.height.saturating_sub(2)))
                .saturating_sub(back);
            let block =
                Block::default().borders(Borders::ALL).title(" harrow prep — the interview ");
            frame.render_widget(
                Paragraph::new(lines)
                    .wrap(Wrap { trim: false })
                    .scroll((u16::try_from(top).unwrap_or(u16::MAX), 0))
                    .block(block),
                talk,
            );
            if let Some(text) = text {
                let block = Block::default().borders(Borders::ALL).title(" Your answer ");
                let inner = block.inner(input);
                frame.render_widget(block, input);
                frame.render_widget(text, inner);
            }
            frame.render_widget(Paragraph::new(hint.to_owned()), hints);
        });
    }

    /// The next key press.
    fn key() -> Option<KeyEvent> {
        loop {
            match event::read().ok()? {
                Event::Key(k) if k.kind == KeyEventKind::Press => return Some(k),
                _ => {}
            }
        }
    }

    /// Edits `shown` (the draft's files) in the whole screen until Ctrl-S (`Some`) or Esc.
    fn edit(&mut self, shown: &str) -> Option<String> {
        let mut text = TextArea::new(shown.lines().map(str::to_owned).collect());
        loop {
            let _ = self.terminal.draw(|frame| {
                let [area, hints] = Layout::vertical([Constraint::Min(3), Constraint::Length(1)])
                    .areas(frame.area());
                let block = Block::default()
                    .borders(Borders::ALL)
                    .title(" Edit the plan: each file follows its ==> line ");
                let inner = block.inner(area);
                frame.render_widget(block, area);
                frame.render_widget(&text, inner);
                frame.render_widget(
                    Paragraph::new(
                        "Ctrl-S keeps the edit (it is checked) · Esc goes back without it",
                    ),
                    hints,
                );
            });
            let key = Self::key()?;
            match typed(&key) {
                Typed::Send => return Some(text.lines().join("\n")),
                Typed::Stop => return None,
                Typed::Edit => {
                    text.input(key);
                }
            }
        }
    }

    /// Writes text in the area until it is sent (`Some`) or the person stops (`None`).
    fn write(&mut self, placeholder: &str) -> Option<String> {
        let mut text = TextArea::default();
        text.set_placeholder_text(placeholder);
        loop {
            self.draw(
                Some(&text),
                "Ctrl-S or Alt-Enter sends · Enter starts a new line · Esc stops",
            );
            let key = Self::key()?;
            match typed(&key) {
                Typed::Send => {
                    let answer = text.lines().join("\n").trim().to_owned();
                    if !answer.is_empty() {
                        return Some(answer);
                    }
                }
                Typed::Stop => {
                    self.draw(
                        Some(&text),
                        "Stop the interview? Nothing is written. y stops · any other key goes on",
                    );
                    if Self::key().is_some_and(|k| k.code == KeyCode::Char('y')) {
                        self.stopped = true;
                        return None;
                    }
                }
                Typed::Edit => {
                    text.input(key);
                }
            }
        }
    }
}

impl Drop for InterviewScreen {
    /// Gives the terminal back, and leaves the last word (what was written, or that nothing
    /// was) on it.
    fn drop(&mut self) {
        ratatui::restore();
        if let Some((Who::Harrow, last)) = self.said.last() {
            println!("{}", crate::printable::text(last));
        }
    }
}

impl Person for InterviewScreen {
    fn answer(&mut self, question: &str) -> Option<String> {
        self.said.push((Who::Model, question.trim().to_owned()));
        let answer = self.write("your answer")?;
        self.said.push((Who::Person, answer.clone()));
        self.draw(None, "the model is working on it…");
        Some(answer)
    }

    fn show(&mut self, text: &str) {
        self.said.push((Who::Harrow, text.trim().to_owned()));
        self.draw(None, "");
    }

    fn review(&mut self, shown: &str) -> Decision {
        self.said.push((Who::Harrow, format!("The plan, as it will be written:\n\n{shown}")));
        self.back = 0;
        loop {
            self.draw(
                None,
                "y writes and commits it · e edits it · r sends it back with a note · n writes nothing · ↑↓ PgUp PgDn scroll",
            );
            let Some(key) = Self::key() else { return Decision::Reject };
            match key.code {
                KeyCode::Up | KeyCode::Char('k') => self.back += 1,
                KeyCode::Down | KeyCode::Char('j') => self.back = self.back.saturating_sub(1),
                KeyCode::PageUp => self.back += 20,
                KeyCode::PageDown => self.back = self.back.saturating_sub(20),
                KeyCode::Char('y') => return Decision::Accept,
                KeyCode::Char('n') | KeyCode::Esc => return Decision::Reject,
                KeyCode::Char('e') => {
                    if let Some(text) = self.edit(shown) {
                        self.said.push((Who::Person, "(edited the plan by hand)".into()));
                        return Decision::Edit(text);
                    }
                }
                KeyCode::Char('r') => {
                    self.back = 0;
                    let Some(note) = self.write("what should change") else {
                        return Decision::Reject;
                    };
                    self.said.push((Who::Person, note.clone()));
                    self.draw(None, "the model is revising the plan…");
                    return Decision::Revise(note);
                }
                _ => {}
            }
        }
    }

    fn stopped(&self) -> bool {
        self.stopped
    }
}
