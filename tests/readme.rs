//! The README's examples are real: the configuration it shows parses, and the verbs it
//! documents exist.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use harrow::config::Config;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

#[test]
fn the_configuration_example_parses() {
    let text = readme();
    let start = text.find("```toml\n").unwrap() + "```toml\n".len();
    let end = start + text[start..].find("```").unwrap();
    let config = Config::parse(&text[start..end]).unwrap();
    assert_eq!(config.hands.deny[0].label, "no publishing");
    assert_eq!(config.validators.unwrap()[0].name, "tests");
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
