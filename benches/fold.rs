//! Throughput of reading a session: the summary fold (what `show` and `sessions` do), building
//! the console's byte-offset index, and decoding one event fully versus sparsely.

// A bench that cannot set up its input has nothing to measure: failing loudly is right.
#![allow(clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use harrow::session::event::Event;
use harrow::session::fact::{Fact, KeptValues};
use harrow::session::index::EventIndex;
use harrow::session::scan::scan;
use harrow::session::summary::SummaryFold;
use harrow::session::synth::{Dialect, generate};
use std::hint::black_box;
use std::io::{BufWriter, Write};

fn fold_benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    for dialect in [Dialect::Tilth, Dialect::Harrow] {
        let path = dir.path().join(format!("{dialect:?}.jsonl"));
        let file = std::fs::File::create(&path).expect("create");
        let mut out = BufWriter::new(file);
        generate(&mut out, 50_000, dialect, 3).expect("generate");
        out.flush().expect("flush");
        drop(out);
        let bytes = std::fs::metadata(&path).expect("size").len();

        let mut group = c.benchmark_group(format!("{dialect:?}"));
        group.throughput(Throughput::Bytes(bytes));
        group.sample_size(20);
        group.bench_function("summary_fold", |b| {
            b.iter(|| {
                let mut fold = SummaryFold::new(None);
                let report = scan(&path, |_, f| fold.apply(f)).expect("scan");
                black_box(fold.finish(&report))
            });
        });
        group.bench_function("index_build", |b| {
            b.iter(|| black_box(EventIndex::build(&path).expect("index").len()));
        });
        group.finish();
    }

    let mut one = Vec::new();
    generate(&mut one, 40, Dialect::Harrow, 9).expect("generate");
    let line = one
        .split(|b| *b == b'\n')
        .find(|l| l.windows(16).any(|w| w == b"prompt_assembled"))
        .expect("a prompt line")
        .to_vec();
    let mut group = c.benchmark_group("one_prompt_line");
    group.throughput(Throughput::Bytes(line.len() as u64));
    let mut kept = KeptValues::default();
    group.bench_function("sparse_fact", |b| {
        b.iter(|| black_box(Fact::decode(&line, &mut kept).map(|f| f.kind().len())));
    });
    group.bench_function("full_event", |b| {
        b.iter(|| black_box(Event::decode(&line).map(|e| e.kind.len())));
    });
    group.finish();
}

criterion_group!(benches, fold_benches);
criterion_main!(benches);
