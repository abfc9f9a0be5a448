//! The key tables checked: no key bound twice in a mode, every binding shown in the help.

use super::*;
use std::collections::HashSet;

#[test]
fn no_key_is_bound_twice_in_any_mode() {
    for mode in Mode::ALL {
        let mut seen = HashSet::new();
        for b in mode.bindings() {
            for k in b.keys {
                assert!(seen.insert(*k), "{mode:?}: {k:?} is bound twice");
            }
        }
    }
}

#[test]
fn every_key_of_every_table_dispatches_its_own_action() {
    for mode in Mode::ALL {
        for b in mode.bindings() {
            for k in b.keys {
                let got = action_for(mode, &KeyEvent::new(k.code, k.mods));
                assert_eq!(
                    got.map(|a| std::mem::discriminant(&a)),
                    Some(std::mem::discriminant(&b.action)),
                    "{mode:?} {}",
                    b.label()
                );
            }
        }
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert!(action_for(mode, &ctrl_c).is_some(), "{mode:?} must let Ctrl-C out");
    }
    assert_eq!(
        action_for(Mode::Main, &KeyEvent::new(KeyCode::Char('7'), KeyModifiers::NONE)),
        Some(Action::Seek(7))
    );
    assert_eq!(
        action_for(Mode::Inspector, &KeyEvent::new(KeyCode::Char('3'), KeyModifiers::NONE)),
        Some(Action::Evidence(3)),
        "a digit in the inspector opens evidence, never seeks"
    );
    assert_eq!(
        action_for(Mode::Editor, &KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE)),
        None
    );
    let press = |code, mods| action_for(Mode::Answer, &KeyEvent::new(code, mods));
    assert_eq!(press(KeyCode::Char('s'), KeyModifiers::CONTROL), Some(Action::Submit));
    assert_eq!(press(KeyCode::Enter, KeyModifiers::ALT), Some(Action::Submit));
    assert_eq!(press(KeyCode::Char('s'), KeyModifiers::NONE), None, "a plain s is typed");
    assert_eq!(press(KeyCode::Enter, KeyModifiers::NONE), None, "Enter is a new line");
    assert_eq!(
        action_for(Mode::Main, &KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT)),
        Some(Action::Bottom),
        "Shift is part of the character"
    );
}

#[test]
fn the_hint_line_offers_only_keys_of_its_table() {
    for mode in Mode::ALL {
        for live in [false, true] {
            let line = hint_line(mode, live, 400);
            assert!(!line.is_empty(), "{mode:?} has no hints");
            for hint in line.split("  ") {
                let keys = hint.split(' ').next().unwrap_or("");
                let pieces: Vec<&str> =
                    if keys == "/" { vec![keys] } else { keys.split('/').collect() };
                for key in pieces {
                    assert!(
                        mode.bindings().iter().any(|b| b.label().split(' ').any(|l| l == key)),
                        "{mode:?}: the hint {hint:?} names {key:?}, which the table does not bind"
                    );
                }
            }
        }
    }
    assert!(hint_line(Mode::Main, true, 400).contains("p pause"));
    assert!(!hint_line(Mode::Main, false, 400).contains("p pause"));
    assert!(hint_line(Mode::Main, false, 400).starts_with("? help  q quit  space play"));
}
