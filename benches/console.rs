//! The console at size: one frame at 200×60, a keystroke to its frame, and a seek, on a
//! generated 100k-event session (`cargo bench --bench console`). The first frame at 100k and 1M
//! events, and the peak RSS, come from `examples/console-timing` under `/usr/bin/time -v`.

// A bench that cannot set up its input has nothing to measure: failing loudly is right.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use harrow::console::app::App;
use harrow::console::keymap::Action;
use harrow::console::theme::Look;
use harrow::console::ui::draw;
use harrow::session::synth::{Dialect, write_session};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

fn console_benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    write_session(dir.path(), 100_000, Dialect::Harrow, 3).expect("generate");
    let mut app = App::open_live(dir.path(), "bench", Look::built_in(true)).expect("open");
    // The console reads a large log a piece at a time between frames; the bench reads it whole.
    while app.player.reading_percent().is_some() {
        app.read_more().expect("read");
    }
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut group = c.benchmark_group("console");
    group.bench_function("frame_200x60_at_100k", |b| {
        b.iter(|| {
            app.prepare(Rect::new(0, 0, 200, 60));
            terminal.draw(|f| draw(f, &app)).unwrap();
        });
    });
    let mut keys =
        [Action::Up, Action::Down, Action::Focus, Action::NextVerdict].into_iter().cycle();
    group.bench_function("keystroke_to_frame_at_100k", |b| {
        b.iter(|| {
            app.act(keys.next().unwrap_or(Action::Up)).unwrap();
            app.prepare(Rect::new(0, 0, 200, 60));
            terminal.draw(|f| draw(f, &app)).unwrap();
        });
    });
    let mut tenths = [3u8, 9, 1, 6].into_iter().cycle();
    group.bench_function("seek_and_frame_at_100k", |b| {
        b.iter(|| {
            app.act(Action::Seek(tenths.next().unwrap_or(5))).unwrap();
            app.prepare(Rect::new(0, 0, 200, 60));
            terminal.draw(|f| draw(f, &app)).unwrap();
        });
    });
    group.finish();
}

/// A repository whose second commit changes 2,000 lines over 20 files: the diff view's input.
fn two_thousand_line_change() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = git2::Repository::init(dir.path()).expect("init");
    let sig = git2::Signature::now("b", "b@example.com").unwrap();
    let commit = |body: &dyn Fn(usize, usize) -> String, parent: Option<git2::Oid>| {
        let mut builder = repo.treebuilder(None).unwrap();
        for f in 0..20 {
            let text: String = (0..100).map(|l| body(f, l)).collect();
            let blob = repo.blob(text.as_bytes()).unwrap();
            builder.insert(format!("f{f}.rs"), blob, 0o100_644).unwrap();
        }
        let tree = repo.find_tree(builder.write().unwrap()).unwrap();
        let parents: Vec<git2::Commit> =
            parent.into_iter().map(|p| repo.find_commit(p).unwrap()).collect();
        let refs: Vec<&git2::Commit> = parents.iter().collect();
        repo.commit(None, &sig, &sig, "c", &tree, &refs).unwrap()
    };
    let base = commit(&|f, l| format!("fn f{f}_{l}() {{ let x = {l}; }}\n"), None);
    let next = commit(&|f, l| format!("fn f{f}_{l}() {{ let x = {} ; }}\n", l + 1), Some(base));
    (dir, base.to_string(), next.to_string())
}

fn diff_view_bench(c: &mut Criterion) {
    let (dir, base, next) = two_thousand_line_change();
    let repos = [dir.path().to_path_buf()];
    c.bench_function("diff_view_open_2000_changed_lines", |b| {
        b.iter(|| harrow::console::diff::between(&repos, &base, &next, "bench").unwrap());
    });
}

criterion_group!(benches, console_benches, diff_view_bench);
criterion_main!(benches);
