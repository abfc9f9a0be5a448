//! What a server's "too long" refusal says, in each server's words: that the request passed
//! the window, the window itself, and what the request came to — so a conversation is rebuilt
//! to the window the server has, with an estimate calibrated by the server's own count.

/// The largest context window a model is believed to have: past it, a number is a typo or
/// garbage.
pub const MAX_WINDOW: u64 = 10_000_000;

/// Whether a refusal says the request is longer than the model's window, in any server's
/// words: `OpenAI`'s `context_length_exceeded`, llama.cpp's `exceed_context_size_error` ("exceeds
/// the available context size"), vLLM's and Ollama's "maximum context length" / "context
/// length".
pub(super) fn too_long(code: &str, kind: &str, message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    [code, kind].iter().any(|k| k.contains("context_length") || k.contains("context_size"))
        || ["context length", "context size", "context window"].iter().any(|w| message.contains(w))
}

/// The window a "too long" refusal names, in any server's words: llama.cpp's "exceeds the
/// available context size (4096 tokens)", `OpenAI`'s and vLLM's "maximum context length is
/// 8192 tokens".
pub fn window_named(detail: &str) -> Option<u64> {
    let lower = detail.to_ascii_lowercase();
    let after = ["context size (", "maximum context length is "]
        .iter()
        .find_map(|w| lower.find(w).map(|at| &lower[at + w.len()..]))?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|n| *n > 0 && *n <= MAX_WINDOW)
}

/// The tokens a "too long" refusal says the request came to, in any server's words:
/// llama.cpp's "request (2158 tokens) exceeds", vLLM's "(2000 in the messages, …)", `OpenAI`'s
/// "your messages resulted in 9000 tokens", else vLLM's "you requested 2158 tokens" (which
/// counts the reply's room too, so it is read last).
pub fn prompt_named(detail: &str) -> Option<u64> {
    let lower = detail.to_ascii_lowercase();
    let number_at = |at: usize| -> Option<u64> {
        let digits: String = lower[at..].chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok().filter(|n| *n > 0 && *n <= MAX_WINDOW)
    };
    let before = |word: &str| -> Option<u64> {
        let end = lower.find(word)?;
        let start = lower[..end].rfind(|c: char| !c.is_ascii_digit()).map_or(0, |i| i + 1);
        (start < end).then(|| number_at(start)).flatten()
    };
    before(" in the messages")
        .or_else(|| {
            ["request (", "messages resulted in "]
                .iter()
                .find_map(|w| lower.find(w).and_then(|at| number_at(at + w.len())))
        })
        .or_else(|| lower.find("you requested ").and_then(|at| number_at(at + 14)))
}

#[cfg(test)]
mod tests {
    use super::{prompt_named, window_named};

    #[test]
    fn a_too_long_refusal_names_its_window_in_each_servers_words() {
        let llama = "request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it";
        assert_eq!(window_named(llama), Some(4096));
        let openai = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.";
        assert_eq!(window_named(openai), Some(8192));
        assert_eq!(window_named("the context length was exceeded"), None, "no number: unknown");
        assert_eq!(
            window_named("maximum context length is 99999999999 tokens"),
            None,
            "not a window"
        );
    }

    #[test]
    fn a_too_long_refusal_says_what_the_request_came_to_in_each_servers_words() {
        let llama = "request (2158 tokens) exceeds the available context size (2048 tokens), try increasing it";
        assert_eq!(prompt_named(llama), Some(2158));
        let openai = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.";
        assert_eq!(prompt_named(openai), Some(9000));
        let vllm = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).";
        assert_eq!(prompt_named(vllm), Some(4000), "the messages' count, not the reply's room");
        let bare = "maximum context length is 4096 tokens. However, you requested 4200 tokens";
        assert_eq!(prompt_named(bare), Some(4200));
        assert_eq!(prompt_named("the request exceeds the available context size"), None);
        assert_eq!(prompt_named("request (99999999999 tokens) exceeds"), None, "not a count");
    }
}
