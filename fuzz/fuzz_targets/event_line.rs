//! Any bytes as an `events.jsonl` line or stream: decoding never panics, the sparse and full
//! decoders agree on what is an event, and splitting a stream in two places yields the same
//! lines as splitting it whole.

#![no_main]

use harrow::session::event::Event;
use harrow::session::fact::Fact;
use harrow::session::scan::LineSplitter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(event) = Event::decode(data) {
        let fact = Fact::decode(data).expect("a line the full decoder accepts is a fact");
        assert_eq!(fact.kind(), event.kind);
        let _ = event.payload_value();
        let _ = event.task_id();
    }

    let whole: Vec<_> = LineSplitter::at(0, 1).feed(data);
    let cut = data.first().map_or(0, |b| usize::from(*b) % (data.len() + 1));
    let mut parts = LineSplitter::at(0, 1);
    let mut pieces = parts.feed(&data[..cut]);
    pieces.extend(parts.feed(&data[cut..]));
    assert_eq!(whole, pieces);
    for (at, line) in &whole {
        assert_eq!(at.len as usize, line.len());
        let _ = Fact::decode(line);
    }
});
