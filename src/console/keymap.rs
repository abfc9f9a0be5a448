//! The console's keys: one table per mode that dispatches key presses, renders the help
//! overlay and writes the hint line, so no screen can promise a key that does something else.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where the keys go: the panes, or the overlay that covers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Main,
    Help,
    Inspector,
    /// An evidence pointer opened at its file.
    FileView,
    /// Typing the reason or note of an operator command.
    Editor,
    Search,
    QuitPrompt,
    /// A decision was written for a run that has stopped: start it again?
    ResumePrompt,
    /// The diff of a judged attempt.
    Diff,
    /// `P`: what shipping the ended run would send; `y` sends it.
    ShipPrompt,
    /// A worker stream row in full.
    Row,
    /// The session list of `harrow` with no arguments.
    Browser,
    /// `harrow prep`: writing the answer to the model's question.
    Answer,
    /// `harrow prep`: the model is working on the last answer.
    Thinking,
    /// `harrow prep`: the drafted plan, to write, edit, send back or drop.
    Review,
    /// `harrow prep`: editing the drafted plan's files by hand.
    PlanEditor,
    /// `harrow prep`: stop the interview?
    StopPrompt,
    /// In the diff: typing a comment on a line.
    Comment,
}

impl Mode {
    pub const ALL: [Mode; 18] = [
        Mode::Main,
        Mode::Help,
        Mode::Inspector,
        Mode::FileView,
        Mode::Editor,
        Mode::Search,
        Mode::QuitPrompt,
        Mode::ResumePrompt,
        Mode::Diff,
        Mode::ShipPrompt,
        Mode::Row,
        Mode::Browser,
        Mode::Answer,
        Mode::Thinking,
        Mode::Review,
        Mode::PlanEditor,
        Mode::StopPrompt,
        Mode::Comment,
    ];

    /// The name the help overlay gives the table.
    pub fn title(self) -> &'static str {
        match self {
            Mode::Main => "Keys",
            Mode::Help => "Keys of the help",
            Mode::Inspector => "Keys of the verdict inspector",
            Mode::FileView => "Keys of the evidence view",
            Mode::Editor => "Keys of the decision editor",
            Mode::Search => "Keys of the search box",
            Mode::QuitPrompt => "Keys of the quit prompt",
            Mode::ResumePrompt => "Keys of the resume offer",
            Mode::Diff => "Keys of the diff view",
            Mode::ShipPrompt => "Keys of the ship offer",
            Mode::Row => "Keys of the row view",
            Mode::Browser => "Keys of the session list",
            Mode::Answer => "Keys of the interview",
            Mode::Thinking => "Keys while the model works",
            Mode::Review => "Keys of the drafted plan",
            Mode::PlanEditor => "Keys of the plan editor",
            Mode::StopPrompt => "Keys of the stop prompt",
            Mode::Comment => "Keys of a comment on a line",
        }
    }

    /// Modes where unbound keys are typed into a text box.
    pub fn takes_text(self) -> bool {
        matches!(
            self,
            Mode::Editor | Mode::Search | Mode::Answer | Mode::PlanEditor | Mode::Comment
        )
    }

    /// The binding table of the mode, in the order the help lists it.
    pub fn bindings(self) -> &'static [Binding] {
        match self {
            Mode::Main => MAIN,
            Mode::Help => HELP,
            Mode::Inspector => INSPECTOR,
            Mode::FileView => FILE_VIEW,
            Mode::Editor => EDITOR,
            Mode::Search => SEARCH,
            Mode::QuitPrompt => QUIT_PROMPT,
            Mode::ResumePrompt => RESUME_PROMPT,
            Mode::Diff => DIFF,
            Mode::ShipPrompt => SHIP_PROMPT,
            Mode::Row => ROW,
            Mode::Browser => BROWSER,
            Mode::Answer => ANSWER,
            Mode::Thinking => THINKING,
            Mode::Review => REVIEW,
            Mode::PlanEditor => PLAN_EDITOR,
            Mode::StopPrompt => STOP_PROMPT,
            Mode::Comment => COMMENT,
        }
    }

    /// What Ctrl-C means here: never ignored, so the console can always be left.
    fn interrupt(self) -> Action {
        match self {
            Mode::Main | Mode::Browser => Action::Quit,
            Mode::Help | Mode::Inspector | Mode::FileView | Mode::Diff | Mode::Row => Action::Close,
            Mode::Editor
            | Mode::Search
            | Mode::QuitPrompt
            | Mode::ResumePrompt
            | Mode::ShipPrompt
            | Mode::Answer
            | Mode::Thinking
            | Mode::PlanEditor
            | Mode::Comment => Action::Cancel,
            Mode::Review => Action::Discard,
            Mode::StopPrompt => Action::StopAndQuit,
        }
    }
}

/// Something the operator can ask of the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Help,
    Focus,
    FocusBack,
    Zoom,
    Down,
    Up,
    Top,
    Bottom,
    PlayPause,
    Faster,
    Slower,
    StepForward,
    StepBack,
    NextFailure,
    PrevFailure,
    NextVerdict,
    PrevVerdict,
    NextTask,
    PrevTask,
    Inspect,
    Close,
    Pause,
    Step,
    Approve,
    Reject,
    ForceAccept,
    RetryEval,
    Skip,
    FailTask,
    Note,
    /// Words for the task at work, read before its worker's next model request.
    Steer,
    /// Set a task back to the attempt picked in the Ledger, or the turn picked in the Worker.
    Rewind,
    /// In the diff: a comment on the line under the cursor.
    Comment,
    /// In the diff: the comments, sent as the operator's review.
    SendReview,
    /// In the editor: a steer becomes a queue (for the next attempt) and back.
    SwitchWords,
    Search,
    Filter,
    SearchNext,
    SearchPrev,
    /// Show only the rows the last search matches, or every row again.
    OnlyMatches,
    Theme,
    Mouse,
    /// Worker rows carry their time: off, the clock's, since the start.
    RowTime,
    /// In a run with lanes: follow the next lane (Worker rows, the plan's selection), then
    /// every lane again.
    Lane,
    /// Seek to this many tenths of the log.
    Seek(u8),
    /// Open the inspector's evidence pointer number n.
    Evidence(u8),
    /// Send what the text box holds.
    Submit,
    /// Leave a text box or a prompt without doing anything.
    Cancel,
    /// The quit prompt: stop the run, then quit.
    StopAndQuit,
    /// The quit prompt: leave the run going, then quit.
    LeaveRunning,
    /// The browser: open the selected session.
    Open,
    /// The fleet: select the next run that needs a person.
    NextWaiting,
    /// The fleet: show only runs in this state group (0: all).
    Show(u8),
    /// The fleet: the next order of the list.
    Sort,
    /// The fleet: resume the selected run.
    ResumeRun,
    /// The diff of the attempt in focus, against the task's start.
    Diff,
    /// The diff of the attempt in focus since the attempt before it.
    DiffSincePrevious,
    /// Write the session out as Markdown, to share it.
    Export,
    /// Push the ended run's branch, or open a pull request for it.
    Ship,
    /// Put the shown text on the clipboard (OSC 52: over SSH and in tmux too).
    Copy,
    /// The diff view: the next / previous file.
    NextFile,
    PrevFile,
    /// Scroll sideways, and by a page.
    Left,
    Right,
    PageDown,
    PageUp,
    /// The drafted plan: write its files and commit them.
    Accept,
    /// The drafted plan: edit it by hand.
    Edit,
    /// The drafted plan: send it back to the model with a note.
    Revise,
    /// The drafted plan: write nothing.
    Discard,
}

/// When a binding earns a place on the hint line, and how high.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    No,
    /// Rank (lower first) and the short text, whatever the console shows.
    Always(u8, &'static str),
    /// Only while watching a run.
    Live(u8, &'static str),
    /// Only in a replay.
    Replay(u8, &'static str),
}

/// A key with the modifiers it must be pressed with (Shift is part of a character, never
/// required: `G` is `G` however the terminal reports it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl Key {
    /// Whether a press is this key.
    pub fn matches(self, press: &KeyEvent) -> bool {
        let wanted = KeyModifiers::CONTROL | KeyModifiers::ALT;
        self.code == press.code && press.modifiers.intersection(wanted) == self.mods
    }

    /// The key as the help and the hint line write it: `j`, `↓`, `Enter`, `Ctrl-S`.
    pub fn label(self) -> String {
        let name = match self.code {
            KeyCode::Char(' ') => "space".to_owned(),
            KeyCode::Char(c) if self.mods.is_empty() => c.to_string(),
            KeyCode::Char(c) => c.to_ascii_uppercase().to_string(),
            KeyCode::Down => "↓".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::BackTab => "S-Tab".into(),
            other => other.to_string(),
        };
        let mut out = String::new();
        if self.mods.contains(KeyModifiers::CONTROL) {
            out.push_str("Ctrl-");
        }
        if self.mods.contains(KeyModifiers::ALT) {
            out.push_str("Alt-");
        }
        out + &name
    }
}

/// A key pressed alone.
const fn k(code: KeyCode) -> Key {
    Key { code, mods: KeyModifiers::NONE }
}

/// A key pressed with Ctrl.
const fn ctrl(code: KeyCode) -> Key {
    Key { code, mods: KeyModifiers::CONTROL }
}

/// A key pressed with Alt.
const fn alt(code: KeyCode) -> Key {
    Key { code, mods: KeyModifiers::ALT }
}

/// One row of a table.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub keys: &'static [Key],
    pub action: Action,
    pub help: &'static str,
    pub hint: Hint,
    /// Where the key means something: the help of a live console lists no replay's clock keys,
    /// and a replay's help no decisions.
    pub only: Only,
}

/// Whether a key is for watching a run, for a replay, or for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Only {
    Both,
    Live,
    Replay,
}

impl Only {
    /// Whether a key so scoped is listed in a console that is `live` (or a replay).
    pub fn listed(self, live: bool) -> bool {
        match self {
            Only::Both => true,
            Only::Live => live,
            Only::Replay => !live,
        }
    }
}

impl Binding {
    /// How the overlay writes the keys: each key's own label, so it cannot disagree with them.
    /// A run of digits is written as a range (`0–9`).
    pub fn label(&self) -> String {
        let digits: Vec<char> = self
            .keys
            .iter()
            .filter_map(|key| match key.code {
                KeyCode::Char(c) if c.is_ascii_digit() && key.mods.is_empty() => Some(c),
                _ => None,
            })
            .collect();
        if digits.len() > 2 && digits.len() == self.keys.len() {
            return format!("{}–{}", digits[0], digits[digits.len() - 1]);
        }
        self.keys.iter().map(|key| key.label()).collect::<Vec<_>>().join(" ")
    }
}

const fn bind(keys: &'static [Key], action: Action, help: &'static str, hint: Hint) -> Binding {
    Binding { keys, action, help, hint, only: Only::Both }
}

/// A key that only means something while a run is watched.
const fn live(keys: &'static [Key], action: Action, help: &'static str, hint: Hint) -> Binding {
    Binding { only: Only::Live, ..bind(keys, action, help, hint) }
}

/// A key of the replay's clock.
const fn replay(keys: &'static [Key], action: Action, help: &'static str, hint: Hint) -> Binding {
    Binding { only: Only::Replay, ..bind(keys, action, help, hint) }
}

use Action as A;
use Hint as H;
use KeyCode as K;

const DIGITS: &[Key] = &[
    k(K::Char('0')),
    k(K::Char('1')),
    k(K::Char('2')),
    k(K::Char('3')),
    k(K::Char('4')),
    k(K::Char('5')),
    k(K::Char('6')),
    k(K::Char('7')),
    k(K::Char('8')),
    k(K::Char('9')),
];

const MAIN: &[Binding] = &[
    bind(&[k(K::Char('?'))], A::Help, "show or hide this help", H::Always(0, "? help")),
    bind(&[k(K::Char('q'))], A::Quit, "quit", H::Always(1, "q quit")),
    bind(
        &[k(K::Tab)],
        A::Focus,
        "focus the next pane (on small terminals: the next tab)",
        H::Always(5, "Tab pane"),
    ),
    bind(&[k(K::BackTab)], A::FocusBack, "focus the previous pane", H::No),
    bind(
        &[k(K::Char('z'))],
        A::Zoom,
        "zoom the focused pane to the whole screen, or back",
        H::Live(8, "z zoom"),
    ),
    bind(
        &[k(K::Char('j')), k(K::Down)],
        A::Down,
        "down (the worker cursor: a newer row; past the newest it follows again)",
        H::No,
    ),
    bind(
        &[k(K::Char('k')), k(K::Up)],
        A::Up,
        "up (the worker cursor: an older row, which stays picked as rows arrive)",
        H::No,
    ),
    bind(&[k(K::Char('g')), k(K::Home)], A::Top, "to the top", H::No),
    bind(&[k(K::Char('G')), k(K::End)], A::Bottom, "to the newest, and follow it again", H::No),
    bind(
        &[k(K::Char('/'))],
        A::Search,
        "search the worker stream (a tool, a path, a word)",
        H::Always(6, "/ search"),
    ),
    bind(
        &[k(K::Char('f'))],
        A::Filter,
        "worker stream: everything, worker ↔ evaluator only, problems only",
        H::No,
    ),
    bind(&[k(K::Char('n'))], A::SearchNext, "next match of the search", H::No),
    bind(&[k(K::Char('N'))], A::SearchPrev, "previous match of the search", H::No),
    bind(
        &[k(K::Char('&'))],
        A::OnlyMatches,
        "only the rows the search matches, or all again",
        H::No,
    ),
    replay(
        &[k(K::Char(' '))],
        A::PlayPause,
        "play or pause the replay",
        H::Replay(2, "space play"),
    ),
    replay(
        &[k(K::Char('+')), k(K::Char('='))],
        A::Faster,
        "replay faster (up to as fast as possible)",
        H::Replay(7, "+/- speed"),
    ),
    replay(&[k(K::Char('-'))], A::Slower, "replay slower (down to 0.5×)", H::No),
    replay(
        &[k(K::Char('.'))],
        A::StepForward,
        "step one event forward (pauses)",
        H::Replay(8, "./, step"),
    ),
    replay(&[k(K::Char(','))], A::StepBack, "step one event back (pauses)", H::No),
    bind(
        &[k(K::Char('x'))],
        A::NextFailure,
        "jump to the next failure: a reject, failed validators, a failed task",
        H::Replay(3, "x failure"),
    ),
    bind(&[k(K::Char('X'))], A::PrevFailure, "jump to the previous failure", H::No),
    bind(DIGITS, A::Seek(0), "seek to 0–90 % (see the timeline)", H::No),
    bind(&[k(K::Char('}'))], A::NextVerdict, "jump to the next verdict", H::No),
    bind(&[k(K::Char('{'))], A::PrevVerdict, "jump to the previous verdict", H::No),
    bind(&[k(K::Char(']'))], A::NextTask, "jump to the next task's start", H::No),
    bind(&[k(K::Char('['))], A::PrevTask, "jump to the previous task's start", H::No),
    bind(
        &[k(K::Enter)],
        A::Inspect,
        "Worker: the row under the cursor in full; a verdict, elsewhere: inspect it",
        H::Always(4, "Enter inspect"),
    ),
    bind(&[k(K::Esc)], A::Close, "leave the zoom; else back to the fleet, if from it", H::No),
    live(
        &[k(K::Char('p'))],
        A::Pause,
        "live: pause at the next task boundary, or resume",
        H::Live(2, "p pause"),
    ),
    live(
        &[k(K::Char('s'))],
        A::Step,
        "live: run exactly one more task, then pause",
        H::Live(7, "s step"),
    ),
    live(
        &[k(K::Char('a'))],
        A::Approve,
        "live: approve the waiting task, with a reason (or allow its agent's ask)",
        H::Live(9, "a/r/F decide"),
    ),
    live(
        &[k(K::Char('r'))],
        A::Reject,
        "live: send it back with guidance (or deny its agent's ask)",
        H::No,
    ),
    live(&[k(K::Char('F'))], A::ForceAccept, "live: accept it below the bar, with a reason", H::No),
    live(
        &[k(K::Char('v'))],
        A::RetryEval,
        "live: ask the evaluator again about the held task's work",
        H::No,
    ),
    live(&[k(K::Char('S'))], A::Skip, "live: skip the task, with a reason", H::No),
    live(
        &[k(K::Char('K'))],
        A::FailTask,
        "live: fail (kill) the task, with a reason; the run stops",
        H::No,
    ),
    live(&[k(K::Char('e'))], A::Note, "live: a note for the worker's next attempt", H::No),
    live(
        &[k(K::Char('i'))],
        A::Steer,
        "live: words for the task at work, read before its next model request",
        H::No,
    ),
    live(
        &[k(K::Char('u'))],
        A::Rewind,
        "live: rewind the task to the Ledger's picked verdict, or a picked ◆ turn",
        H::No,
    ),
    bind(
        &[k(K::Char('d'))],
        A::Diff,
        "the diff of the attempt in focus as judged (Worker: the picked row's)",
        H::Always(7, "d diff"),
    ),
    bind(
        &[k(K::Char('D'))],
        A::DiffSincePrevious,
        "what a rework changed since the attempt before it",
        H::No,
    ),
    bind(
        &[k(K::Char('E'))],
        A::Export,
        "export the session as Markdown into its folder; again: stop it",
        H::No,
    ),
    bind(&[k(K::Char('P'))], A::Ship, "ship an ended run: push it, or open a pull request", H::No),
    bind(&[k(K::Char('t'))], A::Theme, "next theme (dark, light, high contrast, yours)", H::No),
    bind(
        &[k(K::Char('T'))],
        A::RowTime,
        "worker rows show their time: the clock's, since the start, or none",
        H::No,
    ),
    bind(
        &[k(K::Char('L'))],
        A::Lane,
        "follow one lane's rows and task, then the next, then all lanes",
        H::No,
    ),
    bind(
        &[k(K::Char('m'))],
        A::Mouse,
        "mouse capture on or off (off: select text as usual)",
        H::No,
    ),
];

const HELP: &[Binding] = &[
    bind(&[k(K::Char('j')), k(K::Down)], A::Down, "scroll down", H::Always(1, "j/k scroll")),
    bind(&[k(K::Char('k')), k(K::Up)], A::Up, "scroll up", H::No),
    bind(
        &[k(K::Esc), k(K::Char('?')), k(K::Char('q'))],
        A::Close,
        "close the help",
        H::Always(0, "Esc closes"),
    ),
];

const INSPECTOR: &[Binding] = &[
    bind(
        &[
            k(K::Char('1')),
            k(K::Char('2')),
            k(K::Char('3')),
            k(K::Char('4')),
            k(K::Char('5')),
            k(K::Char('6')),
            k(K::Char('7')),
            k(K::Char('8')),
            k(K::Char('9')),
        ],
        A::Evidence(1),
        "open evidence pointer [n] at its file",
        H::Always(0, "1–9 evidence"),
    ),
    bind(&[k(K::Char('j')), k(K::Down)], A::Down, "scroll down", H::Always(1, "j/k scroll")),
    bind(&[k(K::Char('k')), k(K::Up)], A::Up, "scroll up", H::No),
    bind(&[k(K::Char('d'))], A::Diff, "the diff of this attempt as judged", H::Always(3, "d diff")),
    bind(
        &[k(K::Char('D'))],
        A::DiffSincePrevious,
        "what changed since the attempt before it",
        H::No,
    ),
    bind(&[k(K::Char('?'))], A::Help, "the keys of the inspector", H::No),
    bind(
        &[k(K::Esc), k(K::Char('q'))],
        A::Close,
        "close the inspector",
        H::Always(2, "Esc closes"),
    ),
];

const FILE_VIEW: &[Binding] = &[
    bind(&[k(K::Char('j')), k(K::Down)], A::Down, "scroll down", H::Always(0, "j/k scroll")),
    bind(&[k(K::Char('k')), k(K::Up)], A::Up, "scroll up", H::No),
    bind(
        &[k(K::Esc), k(K::Char('q'))],
        A::Close,
        "back to the verdict",
        H::Always(1, "Esc back to the verdict"),
    ),
];

const EDITOR: &[Binding] = &[
    bind(
        &[k(K::Enter)],
        A::Submit,
        "send the decision with this text",
        H::Always(0, "Enter sends"),
    ),
    bind(
        &[k(K::Tab)],
        A::SwitchWords,
        "words to steer with now become words queued for the next attempt, and back",
        H::No,
    ),
    bind(&[k(K::Esc)], A::Cancel, "cancel: nothing is sent", H::Always(1, "Esc cancels")),
];

const COMMENT: &[Binding] = &[
    bind(
        &[k(K::Enter)],
        A::Submit,
        "keep the comment on the line (an empty one takes it away)",
        H::Always(0, "Enter keeps it"),
    ),
    bind(
        &[k(K::Esc)],
        A::Cancel,
        "back to the diff, the comment not kept",
        H::Always(1, "Esc back"),
    ),
];

const SEARCH: &[Binding] = &[
    bind(&[k(K::Enter)], A::Submit, "search the worker stream", H::Always(0, "Enter searches")),
    bind(&[k(K::Esc)], A::Cancel, "cancel the search", H::Always(1, "Esc cancels")),
];

const QUIT_PROMPT: &[Binding] = &[
    bind(
        &[k(K::Char('y'))],
        A::StopAndQuit,
        "stop the run at the next task boundary (resumable), and quit",
        H::Always(0, "y stop it"),
    ),
    bind(
        &[k(K::Char('n'))],
        A::LeaveRunning,
        "leave the run going, printing its events here",
        H::Always(1, "n leave it running"),
    ),
    bind(&[k(K::Esc)], A::Cancel, "stay in the console", H::Always(2, "Esc stay")),
];

const SHIP_PROMPT: &[Binding] = &[
    bind(&[k(K::Char('y'))], A::Submit, "send it, as shown", H::Always(0, "y send")),
    bind(
        &[k(K::Tab)],
        A::Focus,
        "switch between a pull request and a push only",
        H::Always(1, "Tab pull request / push only"),
    ),
    bind(&[k(K::Esc)], A::Cancel, "send nothing", H::Always(2, "Esc cancel")),
];

const RESUME_PROMPT: &[Binding] = &[
    bind(
        &[k(K::Enter)],
        A::Submit,
        "resume the session in the background, so the run acts on the decision",
        H::Always(0, "Enter resumes the run"),
    ),
    bind(
        &[k(K::Esc)],
        A::Cancel,
        "not now: the decision waits for the next `harrow resume`",
        H::Always(1, "Esc not now"),
    ),
];

const DIFF: &[Binding] = &[
    bind(
        &[k(K::Char('j')), k(K::Down)],
        A::Down,
        "the cursor down a line",
        H::Always(1, "j/k move"),
    ),
    bind(&[k(K::Char('k')), k(K::Up)], A::Up, "the cursor up a line", H::No),
    bind(
        &[k(K::Char('c'))],
        A::Comment,
        "a comment on the line under the cursor (again: edit it; emptied: gone)",
        H::Always(4, "c comment"),
    ),
    bind(
        &[k(K::Char('R'))],
        A::SendReview,
        "send the comments as your review: reject with a category, or accept (live)",
        H::Always(5, "R review"),
    ),
    bind(&[k(K::PageDown), k(K::Char(' '))], A::PageDown, "a page down", H::No),
    bind(&[k(K::PageUp)], A::PageUp, "a page up", H::No),
    bind(&[k(K::Char('n'))], A::NextFile, "the next file", H::Always(0, "n/N file")),
    bind(&[k(K::Char('N'))], A::PrevFile, "the previous file", H::No),
    bind(
        &[k(K::Char('l')), k(K::Right)],
        A::Right,
        "scroll right (long lines)",
        H::Always(2, "h/l sideways"),
    ),
    bind(&[k(K::Char('h')), k(K::Left)], A::Left, "scroll left", H::No),
    bind(&[k(K::Char('g')), k(K::Home)], A::Top, "to the top", H::No),
    bind(&[k(K::Char('G')), k(K::End)], A::Bottom, "to the end", H::No),
    bind(&[k(K::Char('?'))], A::Help, "the keys of the diff view", H::No),
    bind(&[k(K::Esc), k(K::Char('q'))], A::Close, "close the diff", H::Always(3, "Esc closes")),
];

const ROW: &[Binding] = &[
    bind(&[k(K::Char('j')), k(K::Down)], A::Down, "scroll down", H::Always(1, "j/k scroll")),
    bind(&[k(K::Char('k')), k(K::Up)], A::Up, "scroll up", H::No),
    bind(&[k(K::PageDown), k(K::Char(' '))], A::PageDown, "a page down", H::No),
    bind(&[k(K::PageUp)], A::PageUp, "a page up", H::No),
    bind(&[k(K::Char('g')), k(K::Home)], A::Top, "to the top", H::No),
    bind(&[k(K::Char('G')), k(K::End)], A::Bottom, "to the end", H::No),
    bind(&[k(K::Char('/'))], A::Search, "find a word in this row", H::Always(2, "/ find")),
    bind(&[k(K::Char('n'))], A::SearchNext, "the next line holding it", H::No),
    bind(&[k(K::Char('N'))], A::SearchPrev, "the previous line holding it", H::No),
    bind(
        &[k(K::Char('y'))],
        A::Copy,
        "copy the whole text to the clipboard (OSC 52: works over SSH and in tmux)",
        H::Always(3, "y copy"),
    ),
    bind(&[k(K::Char('?'))], A::Help, "the keys of the row view", H::No),
    bind(&[k(K::Esc), k(K::Char('q'))], A::Close, "close the row", H::Always(0, "Esc closes")),
];

const BROWSER: &[Binding] = &[
    bind(&[k(K::Char('j')), k(K::Down)], A::Down, "next run", H::Always(3, "j/k move")),
    bind(&[k(K::Char('k')), k(K::Up)], A::Up, "previous run", H::No),
    bind(&[k(K::Char('g')), k(K::Home)], A::Top, "the first run", H::No),
    bind(&[k(K::Char('G')), k(K::End)], A::Bottom, "the last run", H::No),
    bind(
        &[k(K::Enter)],
        A::Open,
        "attach: watch it if it runs, else replay it (Esc comes back)",
        H::Always(0, "Enter attach"),
    ),
    bind(
        &[k(K::Char('n'))],
        A::NextWaiting,
        "the next run that needs a person",
        H::Always(1, "n next waiting"),
    ),
    bind(
        &[k(K::Char('1'))],
        A::Show(1),
        "only runs that need a person (held, crashed, failed)",
        H::No,
    ),
    bind(&[k(K::Char('2'))], A::Show(2), "only running runs (and paused, silent)", H::No),
    bind(&[k(K::Char('3'))], A::Show(3), "only stopped runs", H::No),
    bind(&[k(K::Char('4'))], A::Show(4), "only finished runs", H::No),
    bind(&[k(K::Char('0'))], A::Show(0), "every run", H::No),
    bind(
        &[k(K::Char('/'))],
        A::Filter,
        "keep the runs whose id, feature, repo or host has a word",
        H::Always(4, "/ filter"),
    ),
    bind(
        &[k(K::Char('s'))],
        A::Sort,
        "order: needs a person first, newest, latest activity",
        H::No,
    ),
    bind(
        &[k(K::Char('a'))],
        A::Approve,
        "approve the held task, with a reason",
        H::Always(2, "a/r/F/S/K decide"),
    ),
    bind(&[k(K::Char('r'))], A::Reject, "reject it with guidance: one more attempt", H::No),
    bind(&[k(K::Char('F'))], A::ForceAccept, "accept it below the bar, with a reason", H::No),
    bind(&[k(K::Char('S'))], A::Skip, "skip the task, with a reason", H::No),
    bind(&[k(K::Char('K'))], A::FailTask, "fail the held or working task, with a reason", H::No),
    bind(&[k(K::Char('p'))], A::Pause, "pause a running run, or resume a paused one", H::No),
    bind(&[k(K::Char('e'))], A::Note, "a note for its task's next attempt", H::No),
    bind(&[k(K::Char('i'))], A::Steer, "words: a steer for its task at work, or a queue", H::No),
    bind(
        &[k(K::Char('u'))],
        A::Rewind,
        "rewind its held task: to attempt K, or turn tN, with why (`2 the parser was right`)",
        H::No,
    ),
    bind(
        &[k(K::Char('R'))],
        A::ResumeRun,
        "offer to resume a run that stopped or crashed (y does it)",
        H::No,
    ),
    bind(
        &[k(K::Char('E'))],
        A::Export,
        "export it as Markdown into its folder; again: stop it",
        H::No,
    ),
    bind(&[k(K::Char('?'))], A::Help, "these keys", H::Always(5, "? keys")),
    bind(&[k(K::Char('q'))], A::Quit, "quit", H::Always(6, "q quit")),
    bind(&[k(K::Esc)], A::Cancel, "clear the filter (back one level; q quits)", H::No),
];

const ANSWER: &[Binding] = &[
    bind(
        &[ctrl(K::Char('s')), alt(K::Enter)],
        A::Submit,
        "send the answer (Enter starts a new line)",
        H::Always(0, "Ctrl-S sends"),
    ),
    bind(
        &[k(K::Esc)],
        A::Cancel,
        "stop the interview (asks first); nothing is written",
        H::Always(2, "Esc stops"),
    ),
    bind(&[k(K::PageUp)], A::PageUp, "scroll the conversation back", H::No),
    bind(&[k(K::PageDown)], A::PageDown, "scroll the conversation forward", H::No),
    bind(
        &[k(K::Char('?'))],
        A::Help,
        "these keys (while the answer is empty; otherwise ? is typed)",
        H::Always(3, "? keys"),
    ),
];

const THINKING: &[Binding] = &[
    bind(
        &[k(K::Esc)],
        A::Cancel,
        "stop the model and the interview (asks first); nothing is written",
        H::Always(0, "Esc stops"),
    ),
    bind(&[k(K::Char('k')), k(K::Up), k(K::PageUp)], A::PageUp, "scroll back", H::No),
    bind(&[k(K::Char('j')), k(K::Down), k(K::PageDown)], A::PageDown, "scroll forward", H::No),
    bind(&[k(K::Char('?'))], A::Help, "these keys", H::Always(1, "? keys")),
];

const REVIEW: &[Binding] = &[
    bind(
        &[k(K::Char('y'))],
        A::Accept,
        "write the plan's files and commit them",
        H::Always(0, "y writes it"),
    ),
    bind(
        &[k(K::Char('e'))],
        A::Edit,
        "edit the plan by hand (the edit is checked)",
        H::Always(1, "e edits"),
    ),
    bind(
        &[k(K::Char('r'))],
        A::Revise,
        "send it back to the model with a note",
        H::Always(2, "r revises"),
    ),
    bind(
        &[k(K::Char('n')), k(K::Esc)],
        A::Discard,
        "write nothing and end the interview",
        H::Always(3, "n writes nothing"),
    ),
    bind(&[k(K::Char('j')), k(K::Down)], A::Down, "scroll down", H::Always(4, "j/k scroll")),
    bind(&[k(K::Char('k')), k(K::Up)], A::Up, "scroll up", H::No),
    bind(&[k(K::PageDown), k(K::Char(' '))], A::PageDown, "a page down", H::No),
    bind(&[k(K::PageUp)], A::PageUp, "a page up", H::No),
    bind(&[k(K::Char('?'))], A::Help, "these keys", H::Always(5, "? keys")),
];

const PLAN_EDITOR: &[Binding] = &[
    bind(
        &[ctrl(K::Char('s'))],
        A::Submit,
        "keep the edit (it is checked before anything is written)",
        H::Always(0, "Ctrl-S keeps it"),
    ),
    bind(
        &[k(K::Esc)],
        A::Cancel,
        "back to the plan without the edit",
        H::Always(1, "Esc drops the edit"),
    ),
];

const STOP_PROMPT: &[Binding] = &[
    bind(
        &[k(K::Char('y'))],
        A::StopAndQuit,
        "stop the interview; nothing is written",
        H::Always(0, "y stops"),
    ),
    bind(
        &[k(K::Char('n')), k(K::Esc)],
        A::Cancel,
        "go on with the interview",
        H::Always(1, "n goes on"),
    ),
];

/// The action a key press asks for in `mode`. Ctrl-C always leaves: the console, or the
/// overlay that is open.
pub fn action_for(mode: Mode, key: &KeyEvent) -> Option<Action> {
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return Some(mode.interrupt());
    }
    let action =
        mode.bindings().iter().find(|b| b.keys.iter().any(|k| k.matches(key))).map(|b| b.action)?;
    let digit = match key.code {
        KeyCode::Char(c) => c.to_digit(10).map(|d| d as u8),
        _ => None,
    };
    Some(match (action, digit) {
        (Action::Seek(_), Some(d)) => Action::Seek(d),
        (Action::Evidence(_), Some(d)) => Action::Evidence(d),
        (action, _) => action,
    })
}

/// The mode's most useful keys, ranked, as many whole ones as fit `width`.
pub fn hint_line(mode: Mode, live: bool, width: usize) -> String {
    let mut hints: Vec<(u8, &str)> = mode
        .bindings()
        .iter()
        .filter_map(|b| match b.hint {
            Hint::Always(rank, text) => Some((rank, text)),
            Hint::Live(rank, text) if live => Some((rank, text)),
            Hint::Replay(rank, text) if !live => Some((rank, text)),
            Hint::No | Hint::Live(..) | Hint::Replay(..) => None,
        })
        .collect();
    hints.sort_by_key(|(rank, _)| *rank);
    let mut line = String::new();
    for (_, text) in hints {
        let sep = if line.is_empty() { "" } else { "  " };
        if line.chars().count() + sep.len() + text.chars().count() > width {
            break;
        }
        line.push_str(sep);
        line.push_str(text);
    }
    line
}

#[cfg(test)]
#[path = "keymap_tests.rs"]
mod tests;
