//! The interview of `harrow prep` as a screen of the console's loop. The interview itself (the
//! model's turns, the reads, writing the plan) runs on a thread of its own and talks to the
//! screen through [`RemotePerson`]; the screen shows the conversation, a spinner while the
//! model works (Esc stops it, mid-call), the answer being written, and the draft to review.
//! Its keys are the tables of [`Mode::Answer`], [`Mode::Thinking`], [`Mode::Review`],
//! [`Mode::PlanEditor`] and [`Mode::StopPrompt`], so `?` lists them and the hint line offers
//! only keys that work.

use super::jobs::{FromInterview, Job};
use super::keymap::{Action, Mode, action_for, hint_line};
use super::screen::{Cx, Flow, Msg, Screen};
use crate::prep::{Decision, Person};
use crossterm::event::{Event, KeyEvent, KeyEventKind};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};
use tui_textarea::TextArea;

/// What the screen sends back.
#[derive(Debug)]
enum ToInterview {
    /// The answer, or `None` when the person stopped.
    Answer(Option<String>),
    Decision(Decision),
}

/// The person, seen from the interview's thread: each question and draft goes to the screen
/// and the thread waits for what the person sends back.
#[derive(Debug)]
pub struct RemotePerson {
    tx: Sender<Msg>,
    replies: Receiver<ToInterview>,
    stop: Arc<tokio::sync::Notify>,
    stopped: Arc<AtomicBool>,
    /// The last thing harrow said, printed once the terminal is given back.
    pub last_said: Option<String>,
}

impl RemotePerson {
    fn send(&self, what: FromInterview) {
        let _ = self.tx.send(Msg::Job(Job::Interview(what)));
    }

    /// Tells the screen the interview is over (the thread is about to end).
    pub fn ended(&self) {
        self.send(FromInterview::Ended);
    }
}

impl Person for RemotePerson {
    fn how_to_answer(&self) -> &'static str {
        "Ctrl-S or Alt-Enter sends an answer; Enter starts a new line"
    }

    fn answer(&mut self, question: &str) -> Option<String> {
        self.send(FromInterview::Asked(question.trim().to_owned()));
        match self.replies.recv() {
            Ok(ToInterview::Answer(answer)) => answer,
            Ok(ToInterview::Decision(_)) | Err(_) => {
                self.stopped.store(true, Ordering::Relaxed);
                None
            }
        }
    }

    fn show(&mut self, text: &str) {
        self.last_said = Some(text.trim().to_owned());
        self.send(FromInterview::Said(text.trim().to_owned()));
    }

    fn review(&mut self, shown: &str) -> Decision {
        self.send(FromInterview::Review(shown.to_owned()));
        match self.replies.recv() {
            Ok(ToInterview::Decision(d)) => d,
            Ok(ToInterview::Answer(_)) | Err(_) => Decision::Reject,
        }
    }

    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    fn reading(&mut self, what: &str) {
        self.send(FromInterview::Reading(what.to_owned()));
    }

    fn stop_signal(&self) -> Option<Arc<tokio::sync::Notify>> {
        Some(self.stop.clone())
    }
}

/// Who said a line of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Model,
    Person,
    Harrow,
    Reads,
}

/// What the screen is doing.
enum Step {
    Answer(TextArea<'static>),
    Thinking,
    Review,
    PlanEditor(TextArea<'static>),
    /// Asked whether to stop; the step to go back to.
    StopPrompt(Box<Step>),
    /// Stopping: waiting for the interview's thread to end.
    Stopping,
}

impl Step {
    fn mode(&self) -> Mode {
        match self {
            Step::Answer(_) => Mode::Answer,
            Step::Thinking | Step::Stopping => Mode::Thinking,
            Step::Review => Mode::Review,
            Step::PlanEditor(_) => Mode::PlanEditor,
            Step::StopPrompt(_) => Mode::StopPrompt,
        }
    }

    /// Whether nothing has been typed (or nothing can be).
    fn nothing_typed(&self) -> bool {
        match self {
            Step::Answer(text) | Step::PlanEditor(text) => text.is_empty(),
            _ => true,
        }
    }
}

/// Spinner frames, one per tick while the model works.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const SPIN: Duration = Duration::from_millis(100);

/// The interview on the whole terminal.
pub struct InterviewScreen {
    said: Vec<(Who, String)>,
    step: Step,
    /// What is open over the conversation: the keys of this mode, the same view as the
    /// other screens'.
    views: super::modal::Views,
    /// The theme the keys are drawn in.
    look: super::theme::Look,
    /// Rows scrolled back from the newest.
    back: usize,
    /// The draft under review, for the editor.
    draft: String,
    /// The answer being written is a note sending the draft back, not an answer.
    revising: bool,
    replies: Sender<ToInterview>,
    stop: Arc<tokio::sync::Notify>,
    stopped: Arc<AtomicBool>,
    /// When the model was last asked something, for the spinner's seconds.
    started: Instant,
    dirty: bool,
}

impl InterviewScreen {
    /// The screen and the person the interview's thread talks to.
    pub fn new(tx: Sender<Msg>) -> (InterviewScreen, RemotePerson) {
        let (replies, from_screen) = mpsc::channel();
        let stop = Arc::new(tokio::sync::Notify::new());
        let stopped = Arc::new(AtomicBool::new(false));
        let person = RemotePerson {
            tx,
            replies: from_screen,
            stop: stop.clone(),
            stopped: stopped.clone(),
            last_said: None,
        };
        let screen = InterviewScreen {
            said: Vec::new(),
            step: Step::Thinking,
            views: super::modal::Views::default(),
            look: super::theme::Look::from_user(),
            back: 0,
            draft: String::new(),
            revising: false,
            replies,
            stop,
            stopped,
            started: Instant::now(),
            dirty: true,
        };
        (screen, person)
    }

    /// Stops the interview: an answer awaited gets none, a model call in flight is dropped.
    fn stop_now(&mut self, was: &Step) {
        self.stopped.store(true, Ordering::Relaxed);
        self.stop.notify_one();
        if matches!(was, Step::Answer(_)) {
            let _ = self.replies.send(ToInterview::Answer(None));
        }
        self.said.push((Who::Harrow, "Stopping the interview; nothing is written.".into()));
        self.step = Step::Stopping;
    }

    fn decide(&mut self, decision: Decision) {
        let _ = self.replies.send(ToInterview::Decision(decision));
        self.step = Step::Thinking;
        self.started = Instant::now();
    }

    fn key(&mut self, key: KeyEvent) {
        let mode = self.step.mode();
        if self.views.is_open() {
            self.views.key(key);
            return;
        }
        let mut action = action_for(mode, &key);
        // `?` shows the keys while nothing is typed; inside an answer it is a character.
        if action == Some(Action::Help) && !self.step.nothing_typed() {
            action = None;
        }
        if action == Some(Action::Help) {
            self.views.open(super::help::HelpView::new(mode));
            return;
        }
        match (action, std::mem::replace(&mut self.step, Step::Thinking)) {
            (Some(Action::Submit), Step::Answer(text)) => {
                let answer = text.lines().join("\n").trim().to_owned();
                if answer.is_empty() {
                    self.step = Step::Answer(text);
                    return;
                }
                self.said.push((Who::Person, answer.clone()));
                let reply = if std::mem::take(&mut self.revising) {
                    ToInterview::Decision(Decision::Revise(answer))
                } else {
                    ToInterview::Answer(Some(answer))
                };
                let _ = self.replies.send(reply);
                self.back = 0;
                self.started = Instant::now();
            }
            (Some(Action::Submit), Step::PlanEditor(text)) => {
                self.said.push((Who::Person, "(edited the plan by hand)".into()));
                self.decide(Decision::Edit(text.lines().join("\n")));
            }
            (Some(Action::Cancel), Step::PlanEditor(_)) => self.step = Step::Review,
            (Some(Action::Cancel), Step::StopPrompt(was)) => self.step = *was,
            (Some(Action::Cancel), Step::Stopping) => self.step = Step::Stopping,
            (Some(Action::Cancel), step) => self.step = Step::StopPrompt(Box::new(step)),
            (Some(Action::StopAndQuit), Step::StopPrompt(was)) => self.stop_now(&was),
            (Some(Action::Accept), Step::Review) => self.decide(Decision::Accept),
            (Some(Action::Discard), Step::Review) => self.decide(Decision::Reject),
            (Some(Action::Edit), Step::Review) => {
                self.step = Step::PlanEditor(TextArea::new(
                    self.draft.lines().map(str::to_owned).collect(),
                ));
            }
            (Some(Action::Revise), Step::Review) => {
                let mut text = TextArea::default();
                text.set_placeholder_text("what should change");
                self.step = Step::Answer(text);
                self.revising = true;
                self.said.push((Who::Harrow, "What should change in the plan?".into()));
            }
            (Some(Action::Up), step) => {
                self.back += 1;
                self.step = step;
            }
            (Some(Action::Down), step) => {
                self.back = self.back.saturating_sub(1);
                self.step = step;
            }
            (Some(Action::PageUp), step) => {
                self.back += 20;
                self.step = step;
            }
            (Some(Action::PageDown), step) => {
                self.back = self.back.saturating_sub(20);
                self.step = step;
            }
            (_, Step::Answer(mut text)) => {
                text.input(key);
                self.step = Step::Answer(text);
            }
            (_, Step::PlanEditor(mut text)) => {
                text.input(key);
                self.step = Step::PlanEditor(text);
            }
            (_, step) => self.step = step,
        }
    }

    fn heard(&mut self, what: FromInterview) -> Flow {
        let stopping = matches!(self.step, Step::Stopping);
        match what {
            FromInterview::Said(text) => self.said.push((Who::Harrow, text)),
            FromInterview::Reading(what) => self.said.push((Who::Reads, what)),
            FromInterview::Asked(question) => {
                self.said.push((Who::Model, question));
                if !stopping {
                    let mut text = TextArea::default();
                    text.set_placeholder_text("your answer");
                    self.step = Step::Answer(text);
                }
                self.back = 0;
            }
            FromInterview::Review(shown) => {
                self.said
                    .push((Who::Harrow, format!("The plan, as it will be written:\n\n{shown}")));
                self.draft = shown;
                self.back = 0;
                if !stopping {
                    self.step = Step::Review;
                }
            }
            FromInterview::Ended => return Flow::Close,
        }
        Flow::Stay
    }

    /// The line above the hints: the spinner while the model works, or the question asked.
    fn status(&self) -> String {
        match &self.step {
            Step::Thinking => {
                let elapsed = self.started.elapsed();
                let frame = (elapsed.as_millis() / SPIN.as_millis()) as usize;
                format!(
                    "{} the model is working ({} s)",
                    SPINNER[frame % SPINNER.len()],
                    elapsed.as_secs()
                )
            }
            Step::Stopping => "stopping…".into(),
            Step::StopPrompt(_) => "Stop the interview? Nothing is written.".into(),
            _ => String::new(),
        }
    }
}

impl Screen for InterviewScreen {
    fn due(&self, _now: Instant) -> bool {
        self.dirty
    }

    fn draw(&mut self, frame: &mut Frame) {
        let mode = self.step.mode();
        let writing = matches!(self.step, Step::Answer(_));
        let [talk, input, status, hints] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(if writing { 7 } else { 0 }),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        if let Step::PlanEditor(text) = &self.step {
            let block = Block::default()
                .borders(Borders::ALL)
                .title(" Edit the plan: each file follows its ==> line ");
            let inner = block.inner(talk);
            frame.render_widget(block, talk);
            frame.render_widget(text, inner);
        } else {
            draw_talk(frame, talk, &self.said, self.back);
        }
        if let Step::Answer(text) = &self.step {
            let block = Block::default().borders(Borders::ALL).title(" Your answer ");
            let inner = block.inner(input);
            frame.render_widget(block, input);
            frame.render_widget(text, inner);
        }
        frame.render_widget(
            Paragraph::new(self.status()).style(Style::default().add_modifier(Modifier::BOLD)),
            status,
        );
        let paint = super::views::Paint { theme: self.look.current(), held: None };
        self.views.draw(frame, talk, &paint);
        let hint_mode = if self.views.is_open() { self.views.mode() } else { mode };
        frame.render_widget(
            Paragraph::new(hint_line(hint_mode, false, usize::from(hints.width)))
                .style(Style::default().add_modifier(Modifier::DIM)),
            hints,
        );
    }

    fn drawn(&mut self, _now: Instant) {
        self.dirty = false;
    }

    fn wait(&self, _now: Instant) -> Option<Duration> {
        matches!(self.step, Step::Thinking | Step::Stopping).then_some(SPIN)
    }

    fn on(&mut self, msg: Msg, _cx: &Cx) -> Flow {
        self.dirty = true;
        match msg {
            Msg::Term(Event::Key(key)) if key.kind == KeyEventKind::Press => {
                self.key(key);
                Flow::Stay
            }
            Msg::Job(Job::Interview(what)) => self.heard(what),
            Msg::InputGone => {
                let was = std::mem::replace(&mut self.step, Step::Stopping);
                self.stop_now(&was);
                Flow::Close
            }
            _ => Flow::Stay,
        }
    }

    fn turn(&mut self, _now: Instant, _cx: &Cx) -> Flow {
        self.dirty |= matches!(self.step, Step::Thinking | Step::Stopping);
        Flow::Stay
    }
}

impl std::fmt::Debug for InterviewScreen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterviewScreen")
            .field("said", &self.said)
            .field("mode", &self.step.mode())
            .finish_non_exhaustive()
    }
}

/// The conversation, newest at the bottom, scrolled `back` rows.
fn draw_talk(frame: &mut Frame, area: ratatui::layout::Rect, said: &[(Who, String)], back: usize) {
    let mut lines = Vec::new();
    for (who, text) in said {
        let (label, style) = match who {
            Who::Model => ("prep", Style::default().add_modifier(Modifier::BOLD)),
            Who::Person => ("you", Style::default()),
            Who::Harrow => ("harrow", Style::default().add_modifier(Modifier::DIM)),
            Who::Reads => ("prep reads", Style::default().add_modifier(Modifier::DIM)),
        };
        if *who == Who::Reads {
            lines.push(Line::styled(format!("{label}: {}", crate::printable::line(text)), style));
            continue;
        }
        lines.push(Line::styled(format!("{label}:"), style));
        lines.extend(
            text.lines().map(|l| Line::styled(format!("  {}", crate::printable::line(l)), style)),
        );
        lines.push(Line::raw(""));
    }
    let width = usize::from(area.width.saturating_sub(2)).max(1);
    let rows: usize = lines.iter().map(|l| l.width().max(1).div_ceil(width)).sum();
    let top = rows.saturating_sub(usize::from(area.height.saturating_sub(2))).saturating_sub(back);
    let block = Block::default().borders(Borders::ALL).title(" harrow prep — the interview ");
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((u16::try_from(top).unwrap_or(u16::MAX), 0))
            .block(block),
        area,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyModifiers};

    /// A screen at `step`, scrolled back a little, with the receiving end of its replies.
    fn at(step: Step) -> (InterviewScreen, std::sync::mpsc::Receiver<ToInterview>) {
        let (tx, _rx) = mpsc::channel();
        let (mut screen, person) = InterviewScreen::new(tx);
        screen.step = step;
        screen.back = 5;
        screen.draft = "==> .harrow/f/overview.md\n# F\n".into();
        (screen, person.replies)
    }

    fn typed(text: &str) -> TextArea<'static> {
        let mut area = TextArea::default();
        area.insert_str(text);
        area
    }

    /// What a screen shows of itself: its mode, whether the keys are shown, how far it is
    /// scrolled, and what it has sent.
    fn seen(screen: &InterviewScreen, replies: &std::sync::mpsc::Receiver<ToInterview>) -> String {
        let sent: Vec<String> = replies.try_iter().map(|r| format!("{r:?}")).collect();
        let help = screen.views.is_open().then(|| screen.views.mode());
        format!("{:?} {:?} {} {sent:?}", screen.step.mode(), help, screen.back)
    }

    /// Every key every interview table binds does something on its step: a key bound but not
    /// handled would leave the screen as it was.
    #[test]
    fn every_key_of_every_interview_table_does_something() {
        let steps: [(Mode, fn() -> Step); 5] = [
            (Mode::Answer, || Step::Answer(TextArea::default())),
            (Mode::Thinking, || Step::Thinking),
            (Mode::Review, || Step::Review),
            (Mode::PlanEditor, || Step::PlanEditor(typed("# F"))),
            (Mode::StopPrompt, || Step::StopPrompt(Box::new(Step::Thinking))),
        ];
        for (mode, step) in steps {
            for b in mode.bindings() {
                for key in b.keys {
                    let (mut screen, replies) = at(step());
                    if mode == Mode::Answer && b.action == Action::Submit {
                        screen.step = Step::Answer(typed("an answer"));
                    }
                    let before = seen(&screen, &replies);
                    screen.key(KeyEvent::new(key.code, key.mods));
                    let after = seen(&screen, &replies);
                    assert_ne!(
                        before,
                        after,
                        "{mode:?}: {} ({:?}) did nothing",
                        key.label(),
                        b.action
                    );
                }
            }
        }
        let (mut screen, replies) = at(Step::Thinking);
        let before = seen(&screen, &replies);
        screen.key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE));
        assert_eq!(before, seen(&screen, &replies), "the check sees a key that does nothing");
    }

    /// Model text on the interview screen is drawn as text: no cell holds an escape or a
    /// control character, and the escapes are visible as what they are.
    #[test]
    fn hostile_model_text_on_the_interview_screen_is_only_text() {
        let hostile = "ask\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\r\rmore";
        let (mut screen, _replies) = at(Step::Thinking);
        for what in [
            FromInterview::Asked(hostile.into()),
            FromInterview::Reading(hostile.into()),
            FromInterview::Review(hostile.into()),
        ] {
            let _ = screen.heard(what);
        }
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 30)).unwrap();
        terminal.draw(|f| screen.draw(f)).unwrap();
        let cells = terminal.backend().buffer().content();
        assert!(
            cells.iter().all(|c| c.symbol().chars().all(|ch| !ch.is_control())),
            "a control character reached the screen"
        );
        let text: String = cells.iter().map(ratatui::buffer::Cell::symbol).collect();
        let shown = crate::printable::line("ask\u{1b}]0;pwned\u{7}");
        assert!(text.contains(shown.as_str()), "the escapes are shown as text ({shown}): {text}");
    }
}
