//! The console's keys: one table that both dispatches key presses and renders the help overlay,
//! so the overlay can never promise a key that does nothing.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

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
    Search,
    Filter,
    SearchNext,
    SearchPrev,
    Theme,
    Mouse,
    /// Seek to this many tenths of the log.
    Seek(u8),
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub keys: &'static [KeyCode],
    /// How the overlay writes the keys.
    pub label: &'static str,
    pub action: Action,
    pub help: &'static str,
}

/// Every binding, in the order the overlay lists them.
pub const BINDINGS: &[Binding] = &[
    Binding {
        keys: &[KeyCode::Char('?')],
        label: "?",
        action: Action::Help,
        help: "show or hide this help",
    },
    Binding { keys: &[KeyCode::Char('q')], label: "q", action: Action::Quit, help: "quit" },
    Binding {
        keys: &[KeyCode::Tab],
        label: "Tab",
        action: Action::Focus,
        help: "focus the next pane (on small terminals: the next tab)",
    },
    Binding {
        keys: &[KeyCode::BackTab],
        label: "S-Tab",
        action: Action::FocusBack,
        help: "focus the previous pane",
    },
    Binding {
        keys: &[KeyCode::Char('z')],
        label: "z",
        action: Action::Zoom,
        help: "zoom the focused pane to the whole screen, or back",
    },
    Binding {
        keys: &[KeyCode::Char('j'), KeyCode::Down],
        label: "j ↓",
        action: Action::Down,
        help: "down (the stream: toward the newest)",
    },
    Binding {
        keys: &[KeyCode::Char('k'), KeyCode::Up],
        label: "k ↑",
        action: Action::Up,
        help: "up (the stream: back in time; stops following)",
    },
    Binding {
        keys: &[KeyCode::Char('g'), KeyCode::Home],
        label: "g",
        action: Action::Top,
        help: "to the top",
    },
    Binding {
        keys: &[KeyCode::Char('G'), KeyCode::End],
        label: "G",
        action: Action::Bottom,
        help: "to the newest, and follow it again",
    },
    Binding {
        keys: &[KeyCode::Char('/')],
        label: "/",
        action: Action::Search,
        help: "search the worker stream (a tool, a path, a word)",
    },
    Binding {
        keys: &[KeyCode::Char('f')],
        label: "f",
        action: Action::Filter,
        help: "worker stream: everything, worker ↔ evaluator only, problems only",
    },
    Binding {
        keys: &[KeyCode::Char('n')],
        label: "n",
        action: Action::SearchNext,
        help: "next match of the search",
    },
    Binding {
        keys: &[KeyCode::Char('N')],
        label: "N",
        action: Action::SearchPrev,
        help: "previous match of the search",
    },
    Binding {
        keys: &[KeyCode::Char(' ')],
        label: "space",
        action: Action::PlayPause,
        help: "play or pause the replay",
    },
    Binding {
        keys: &[KeyCode::Char('+'), KeyCode::Char('=')],
        label: "+",
        action: Action::Faster,
        help: "replay faster (up to as fast as possible)",
    },
    Binding {
        keys: &[KeyCode::Char('-')],
        label: "-",
        action: Action::Slower,
        help: "replay slower (down to 0.5×)",
    },
    Binding {
        keys: &[KeyCode::Char('.')],
        label: ".",
        action: Action::StepForward,
        help: "step one event forward (pauses)",
    },
    Binding {
        keys: &[KeyCode::Char(',')],
        label: ",",
        action: Action::StepBack,
        help: "step one event back (pauses)",
    },
    Binding {
        keys: &[KeyCode::Char('x')],
        label: "x",
        action: Action::NextFailure,
        help: "jump to the next failure: a reject, failed validators, a failed task",
    },
    Binding {
        keys: &[KeyCode::Char('X')],
        label: "X",
        action: Action::PrevFailure,
        help: "jump to the previous failure",
    },
    Binding {
        keys: &[
            KeyCode::Char('0'),
            KeyCode::Char('1'),
            KeyCode::Char('2'),
            KeyCode::Char('3'),
            KeyCode::Char('4'),
            KeyCode::Char('5'),
            KeyCode::Char('6'),
            KeyCode::Char('7'),
            KeyCode::Char('8'),
            KeyCode::Char('9'),
        ],
        label: "0–9",
        action: Action::Seek(0),
        help: "seek to 0–90 % (see the timeline); in the inspector: open evidence [n]",
    },
    Binding {
        keys: &[KeyCode::Char('}')],
        label: "}",
        action: Action::NextVerdict,
        help: "jump to the next verdict",
    },
    Binding {
        keys: &[KeyCode::Char('{')],
        label: "{",
        action: Action::PrevVerdict,
        help: "jump to the previous verdict",
    },
    Binding {
        keys: &[KeyCode::Char(']')],
        label: "]",
        action: Action::NextTask,
        help: "jump to the next task's start",
    },
    Binding {
        keys: &[KeyCode::Char('[')],
        label: "[",
        action: Action::PrevTask,
        help: "jump to the previous task's start",
    },
    Binding {
        keys: &[KeyCode::Enter],
        label: "Enter",
        action: Action::Inspect,
        help: "inspect the verdict at the cursor: category, concern, evidence, case",
    },
    Binding {
        keys: &[KeyCode::Esc],
        label: "Esc",
        action: Action::Close,
        help: "close the inspector or the help; leave the zoom",
    },
    Binding {
        keys: &[KeyCode::Char('p')],
        label: "p",
        action: Action::Pause,
        help: "live: pause at the next task boundary, or resume",
    },
    Binding {
        keys: &[KeyCode::Char('s')],
        label: "s",
        action: Action::Step,
        help: "live: run exactly one more task, then pause",
    },
    Binding {
        keys: &[KeyCode::Char('a')],
        label: "a",
        action: Action::Approve,
        help: "live: approve the waiting (or selected) task, with a reason",
    },
    Binding {
        keys: &[KeyCode::Char('r')],
        label: "r",
        action: Action::Reject,
        help: "live: send it back with guidance for its next attempt",
    },
    Binding {
        keys: &[KeyCode::Char('F')],
        label: "F",
        action: Action::ForceAccept,
        help: "live: accept it below the bar, with a reason",
    },
    Binding {
        keys: &[KeyCode::Char('v')],
        label: "v",
        action: Action::RetryEval,
        help: "live: ask the evaluator again about the held task's work",
    },
    Binding {
        keys: &[KeyCode::Char('S')],
        label: "S",
        action: Action::Skip,
        help: "live: skip the task, with a reason",
    },
    Binding {
        keys: &[KeyCode::Char('K')],
        label: "K",
        action: Action::FailTask,
        help: "live: fail (kill) the task, with a reason; the run stops",
    },
    Binding {
        keys: &[KeyCode::Char('e')],
        label: "e",
        action: Action::Note,
        help: "live: a note for the worker's next attempt",
    },
    Binding {
        keys: &[KeyCode::Char('t')],
        label: "t",
        action: Action::Theme,
        help: "next theme (dark, light, high contrast, yours)",
    },
    Binding {
        keys: &[KeyCode::Char('m')],
        label: "m",
        action: Action::Mouse,
        help: "mouse capture on or off (off: select text as usual)",
    },
];

/// The action a key press asks for. Ctrl-C always quits.
pub fn action_for(key: &KeyEvent) -> Option<Action> {
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    let action = BINDINGS.iter().find(|b| b.keys.contains(&key.code)).map(|b| b.action)?;
    Some(match (action, key.code) {
        (Action::Seek(_), KeyCode::Char(c)) => Action::Seek(c.to_digit(10).unwrap_or(0) as u8),
        (action, _) => action,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_binding_is_reachable_and_unique() {
        for b in BINDINGS {
            for k in b.keys {
                let got = action_for(&KeyEvent::new(*k, KeyModifiers::NONE));
                assert_eq!(
                    got.map(|a| std::mem::discriminant(&a)),
                    Some(std::mem::discriminant(&b.action)),
                    "{}",
                    b.label
                );
            }
        }
        assert_eq!(
            action_for(&KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(action_for(&KeyEvent::new(KeyCode::Char('Z'), KeyModifiers::NONE)), None);
        assert_eq!(
            action_for(&KeyEvent::new(KeyCode::Char('7'), KeyModifiers::NONE)),
            Some(Action::Seek(7))
        );
    }

    /// Every action, listed through a match that stops compiling when one is added.
    fn all_actions() -> Vec<Action> {
        let every = [
            Action::Quit,
            Action::Help,
            Action::Focus,
            Action::FocusBack,
            Action::Zoom,
            Action::Down,
            Action::Up,
            Action::Top,
            Action::Bottom,
            Action::PlayPause,
            Action::Faster,
            Action::Slower,
            Action::StepForward,
            Action::StepBack,
            Action::NextFailure,
            Action::PrevFailure,
            Action::NextVerdict,
            Action::PrevVerdict,
            Action::NextTask,
            Action::PrevTask,
            Action::Inspect,
            Action::Close,
            Action::Pause,
            Action::Step,
            Action::Approve,
            Action::Reject,
            Action::ForceAccept,
            Action::RetryEval,
            Action::Skip,
            Action::FailTask,
            Action::Note,
            Action::Search,
            Action::Filter,
            Action::SearchNext,
            Action::SearchPrev,
            Action::Theme,
            Action::Mouse,
            Action::Seek(0),
        ];
        for a in every {
            match a {
                Action::Quit
                | Action::Help
                | Action::Focus
                | Action::FocusBack
                | Action::Zoom
                | Action::Down
                | Action::Up
                | Action::Top
                | Action::Bottom
                | Action::PlayPause
                | Action::Faster
                | Action::Slower
                | Action::StepForward
                | Action::StepBack
                | Action::NextFailure
                | Action::PrevFailure
                | Action::NextVerdict
                | Action::PrevVerdict
                | Action::NextTask
                | Action::PrevTask
                | Action::Inspect
                | Action::Close
                | Action::Pause
                | Action::Step
                | Action::Approve
                | Action::Reject
                | Action::ForceAccept
                | Action::RetryEval
                | Action::Skip
                | Action::FailTask
                | Action::Note
                | Action::Search
                | Action::Filter
                | Action::SearchNext
                | Action::SearchPrev
                | Action::Theme
                | Action::Mouse
                | Action::Seek(_) => {}
            }
        }
        every.to_vec()
    }

    #[test]
    fn every_action_has_a_key_in_the_table() {
        for action in all_actions() {
            assert!(
                BINDINGS
                    .iter()
                    .any(|b| std::mem::discriminant(&b.action) == std::mem::discriminant(&action)),
                "{action:?} has no key, so the help cannot offer it"
            );
        }
    }
}
