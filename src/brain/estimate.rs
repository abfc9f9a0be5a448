//! Tokens estimated from characters, where no server has counted them: a conversation's size
//! for the compaction's threshold, and a call's usage when the server sends none.

use serde_json::Value;

/// Characters per token before any server has counted: English and code run 3–4.
pub const CHARS_PER_TOKEN: f64 = 3.5;

/// The characters a conversation sends: every message's text and tool call arguments.
pub fn chars(messages: &[Value]) -> usize {
    messages
        .iter()
        .map(|m| {
            let text = m["content"].as_str().map_or(0, str::len);
            let calls: usize = (m["tool_calls"].as_array().into_iter().flatten())
                .map(|c| c["function"]["arguments"].as_str().map_or(0, str::len) + 16)
                .sum();
            text + calls + 8
        })
        .sum()
}

/// `chars` characters at `chars_per_token`.
pub fn of_chars(chars: usize, chars_per_token: f64) -> u64 {
    (chars as f64 / chars_per_token.max(0.5)).ceil() as u64
}

/// The tokens `messages` come to at `chars_per_token`.
pub fn tokens(messages: &[Value], chars_per_token: f64) -> u64 {
    of_chars(chars(messages), chars_per_token)
}
