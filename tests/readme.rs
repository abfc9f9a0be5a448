//! The README's examples are real: the configuration it shows parses, and the verbs it
//! documents exist.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use harrow::config::Config;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// The TOML code blocks of the README, in order.
fn toml_blocks(text: &str) -> Vec<&str> {
    text.split("```toml\n").skip(1).map(|rest| rest.split("```").next().unwrap()).collect()
}

#[test]
fn the_configuration_example_parses() {
    let text = readme();
    let blocks = toml_blocks(&text);
    assert!(blocks.len() >= 2, "the configuration section and the notify example");
    for block in &blocks {
        Config::parse(block).unwrap_or_else(|e| panic!("{e}:\n{block}"));
    }
    let section = &text[text.find("## Configuration").unwrap()..];
    let config = Config::parse(toml_blocks(section)[0]).unwrap();
    assert_eq!(config.hands.deny[0].label, "no publishing");
    assert_eq!(config.validators.unwrap()[0].name, "tests");
    assert_eq!(config.sessions.dirs.len(), 1);
    assert!(!config.notify.command.is_empty());
}

#[test]
fn every_documented_verb_exists() {
    let help =
        std::process::Command::new(env!("CARGO_BIN_EXE_harrow")).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for line in readme().lines().filter(|l| l.starts_with("### `harrow ")) {
        let verb = line.trim_start_matches("### `harrow ").split([' ', '`']).next().unwrap();
        assert!(
            help.contains(&format!("  {verb} ")),
            "README documents `{verb}`, which harrow --help lacks:\n{help}"
        );
    }
}
