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

/// Every `harrow …` command the README shows — in a shell block, in running text, or as a
/// heading's synopsis with every optional part filled in — as the words harrow would get.
fn documented_commands(text: &str) -> Vec<(String, Vec<String>)> {
    let mut found: Vec<String> = Vec::new();
    for block in text.split("```sh\n").skip(1).map(|rest| rest.split("```").next().unwrap()) {
        for line in block.lines() {
            let line = line.split("  #").next().unwrap().trim();
            let line = line.split(" > ").next().unwrap();
            if line.starts_with("harrow ") {
                found.push(line.to_owned());
            }
        }
    }
    for span in text.split('`').skip(1).step_by(2) {
        if span.starts_with("harrow ") && !span.contains(['<', '—']) {
            found.push(span.to_owned());
        }
    }
    found.sort();
    found.dedup();
    let sample = |word: &str| -> String {
        match word {
            "ID" | "ID|DIR" | "DIR" | "[ID|DIR]" => "20261126-000000-aaaaaa".into(),
            "PLAN" => ".harrow/search".into(),
            "FILE" => "out.md".into(),
            "NAME" | "TEXT" => "words".into(),
            "X" | "N" => "2".into(),
            "T-NNN" => "T-001".into(),
            "OP" => "pause".into(),
            other => other.split('|').next().unwrap().to_owned(),
        }
    };
    // A synopsis is its required words with each optional part in turn (some exclude each
    // other, as `--json` and `--live` do).
    let mut commands = Vec::new();
    for line in found {
        let text = line.replace("[options]", "").replace("...", "");
        let mut required = String::new();
        let mut optional = Vec::new();
        let mut rest = text.as_str();
        while let Some(open) = rest.find('[') {
            required.push_str(&rest[..open]);
            let close = rest[open..].find(']').map_or(rest.len(), |c| open + c);
            optional.push(rest[open + 1..close].to_owned());
            rest = rest.get(close + 1..).unwrap_or("");
        }
        required.push_str(rest);
        let words = |extra: &str| -> Vec<String> {
            shell_words(&format!("{required} {extra}")).iter().map(|w| sample(w)).collect()
        };
        commands.push((line.clone(), words("")));
        for part in &optional {
            commands.push((line.clone(), words(part)));
        }
    }
    commands
}

/// Words as a shell splits them: whitespace separates, double quotes keep a word whole.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                word.get_or_insert_with(String::new);
            }
            c if c.is_whitespace() && !quoted => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

#[test]
fn every_command_the_readme_shows_is_one_harrow_takes_as_written() {
    use clap::Parser;
    let commands = documented_commands(&readme());
    assert!(commands.len() > 30, "{commands:?}");
    for (line, words) in &commands {
        if words.len() == 2 {
            // `harrow check` in running text names the verb: it must exist.
            let help = harrow::cli::Cli::try_parse_from([&words[0], &words[1], "--help"]);
            let kind = help.err().map(|e| e.kind());
            assert_eq!(kind, Some(clap::error::ErrorKind::DisplayHelp), "no verb `{line}`");
            continue;
        }
        if let Err(e) = harrow::cli::Cli::try_parse_from(words) {
            panic!("the README shows `{line}`, which harrow does not take ({words:?}):\n{e}");
        }
    }
    // The check can fail: a flag no verb has is refused.
    assert!(harrow::cli::Cli::try_parse_from(["harrow", "push", "x", "--no-such-flag"]).is_err());
}
