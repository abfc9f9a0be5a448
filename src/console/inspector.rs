//! The verdict inspector: one verdict with everything needed to judge it — what its category
//! means, the concern, the evidence, the next step, the case it judged, the validators of that
//! attempt, and the task's earlier verdicts and whether their concerns came back.

use super::chrome::{footer, popup};
use super::evidence::Source;
use super::keymap::Mode;
use super::layout::wrapped_rows;
use super::panes::{case_lines, validator_lines, verdict_lines};
use super::player::Player;
use crate::session::event::{Event, Payload, Verdict};
use crate::session::state::Ruling;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use std::fmt::Write as _;

/// What the inspector shows, built once when it opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspector {
    pub title: String,
    pub lines: Vec<String>,
    /// The verdict's evidence pointers, in the order the lines number them.
    pub evidence: Vec<String>,
    /// First line shown.
    pub scroll: super::scroll::Scroll,
    /// Where the session's worktree was, to open evidence from.
    pub worktree: Option<std::path::PathBuf>,
    /// The repository the session came from, for when the worktree is gone.
    pub source: Option<std::path::PathBuf>,
    /// The commit the verdict judged, when its work was committed.
    pub commit: Option<String>,
    /// Where the verdict is in the log.
    pub pos: usize,
}

impl Inspector {
    /// Scrolls, or asks for an evidence pointer's file or the judged diff.
    pub fn act(&mut self, action: super::keymap::Action) -> super::outcome::Outcome {
        use super::keymap::Action;
        use super::outcome::Outcome;
        match action {
            Action::Evidence(n) => Outcome::OpenEvidence(usize::from(n)),
            Action::Diff | Action::DiffSincePrevious => Outcome::OpenDiff {
                pos: self.pos,
                since_previous: action == Action::DiffSincePrevious,
            },
            _ if self.scroll.act(action, usize::MAX) => Outcome::Stay,
            _ => Outcome::Unbound,
        }
    }

    /// Draws the inspector over `area`.
    pub fn draw(&self, frame: &mut ratatui::Frame, area: ratatui::layout::Rect) {
        let rect =
            popup(frame, area, area.width.saturating_sub(4), area.height.saturating_sub(2), 1);
        let lines: Vec<Line> = self.lines.iter().map(|l| Line::raw(l.clone())).collect();
        // The table says 1–9; the footer says how many pointers this verdict has.
        let hint = match self.evidence.len() {
            0 => footer(Mode::Inspector, rect.width).replace("1–9 evidence  ", "no evidence  "),
            n => footer(Mode::Inspector, rect.width).replacen("1–9", &format!("1–{}", n.min(9)), 1),
        };
        let block =
            Block::default().borders(Borders::ALL).title(self.title.clone()).title_bottom(hint);
        let rows =
            wrapped_rows(self.lines.iter().map(String::as_str), rect.width.saturating_sub(2));
        let top = self.scroll.shown_from(rows, usize::from(rect.height.saturating_sub(2)));
        frame.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).scroll((top, 0)).block(block),
            rect,
        );
    }
}

fn verdict_of(e: &Event) -> Option<&Verdict> {
    match &e.payload {
        Payload::Verdict(v) => Some(v),
        _ => None,
    }
}

/// Builds the inspector for `verdict`, given the task's earlier events in order: its earlier
/// verdicts, its submitted cases and its validator runs (latest last).
pub fn build(verdict: &Event, earlier: &[Event]) -> Inspector {
    let v = verdict_of(verdict).cloned().unwrap_or_default();
    let task = verdict.task_id().unwrap_or("?").to_owned();
    let attempt = match (v.scope.attempt, v.scope.iter) {
        (Some(a), _) => format!(" · attempt {a}"),
        (None, Some(i)) => format!(" · iteration {i}"),
        (None, None) => String::new(),
    };
    let mut lines = verdict_lines(&v);
    if let Some(case) = earlier.iter().rev().find_map(|e| match &e.payload {
        Payload::ToolCall(c)
            if crate::session::vocabulary::ToolName::SubmitCase.is(c.tool.as_deref()) =>
        {
            c.args.clone()
        }
        _ => None,
    }) {
        lines.push(String::new());
        lines.extend(case_lines(&case));
    }
    if let Some(run) = earlier.iter().rev().find_map(|e| match &e.payload {
        Payload::ValidatorRun(r) => Some(r.clone()),
        _ => None,
    }) {
        lines.push(String::new());
        lines.extend(validator_lines(&run));
    }
    let prior: Vec<&Verdict> = earlier.iter().filter_map(verdict_of).collect();
    if !prior.is_empty() {
        lines.push(String::new());
        lines.push("Earlier verdicts on this task:".into());
        for (i, p) in prior.iter().enumerate() {
            let category = p.rejection_category.as_deref();
            let later = prior[i + 1..]
                .iter()
                .map(|q| q.rejection_category.as_deref())
                .chain(std::iter::once(v.rejection_category.as_deref()));
            let status = match category {
                None => String::new(),
                Some(c) if later.clone().any(|l| l == Some(c)) => format!(" — {c} came back"),
                Some(_) => " — resolved".into(),
            };
            let mut line = format!("  {}. {}", i + 1, p.verdict.as_deref().unwrap_or("?"));
            if let Some(c) = category {
                let _ = write!(line, " ({c})");
            }
            let _ = write!(line, "{status}: {}", p.concern.as_deref().unwrap_or(""));
            lines.push(line);
        }
    }
    Inspector {
        title: format!(" Verdict on {task}{attempt} "),
        lines,
        evidence: v.evidence.clone().unwrap_or_default(),
        scroll: super::scroll::Scroll::default(),
        worktree: None,
        source: None,
        commit: None,
        pos: 0,
    }
}

/// Opens the inspector on the verdict at `pos`: the task's earlier cases, validator runs and
/// verdicts from its trail, the worktree to open evidence from, and for an accept the commit
/// it became. A position that holds no verdict says why instead.
pub fn open_at(player: &mut Player, pos: usize) -> Result<Inspector, String> {
    let verdict = player.fetch(pos).map_err(|e| format!("the verdict cannot be read: {e}"))?;
    if !matches!(verdict.payload, Payload::Verdict(_)) {
        return Err("that row is an operator's decision, not a verdict".into());
    }
    let task = player.task_of(pos).unwrap_or_default().to_owned();
    let trail = player.view.trail(&task).unwrap_or_default();
    let next_verdict = trail.verdicts.iter().copied().find(|p| *p > pos).unwrap_or(usize::MAX);
    let ledger = trail.ledger.clone();
    let mut positions: Vec<usize> = [trail.cases, trail.validators, trail.verdicts]
        .concat()
        .into_iter()
        .filter(|p| *p < pos)
        .collect();
    positions.sort_unstable();
    let earlier: Vec<_> = positions.iter().filter_map(|p| player.fetch(*p).ok()).collect();
    let reviews: Vec<_> = (ledger.iter())
        .filter(|p| **p > pos && **p < next_verdict)
        .filter_map(|p| player.fetch(*p).ok())
        .filter(|e| matches!(e.payload, Payload::OperatorReview(_)))
        .collect();
    let mut inspector = build(&verdict, &earlier);
    for review in &reviews {
        inspector.lines.extend(review_lines(review));
    }
    inspector.pos = pos;
    let start = player.session_start();
    inspector.worktree = start.as_ref().and_then(|s| s.worktree.clone()).map(Into::into);
    inspector.source = start.and_then(|s| s.source).map(Into::into);
    let kept = match &verdict.payload {
        Payload::Verdict(v) => v.attempt_commit.as_deref(),
        _ => None,
    };
    inspector.commit = kept.map(str::to_owned);
    if !inspector.evidence.is_empty()
        && inspector.commit.is_none()
        && let Some(gone) = inspector.worktree.as_ref().filter(|w| !w.is_dir())
    {
        inspector.lines.push(String::new());
        inspector.lines.push(format!(
            "The worktree {} is gone (archived or cleansed): the evidence cannot be opened.",
            gone.display()
        ));
    }
    if inspector.commit.is_none() && verdict.payload.ruling() == Some(Ruling::Accept) {
        inspector.commit = player.commit_after(pos);
    }
    Ok(inspector)
}

/// The operator's review of the attempt a verdict judged, each comment under its line.
fn review_lines(e: &crate::session::event::Event) -> Vec<String> {
    let Payload::OperatorReview(r) = &e.payload else { return Vec::new() };
    let said = r.reason.as_deref().filter(|s| !s.is_empty()).map(|s| format!(": {s}"));
    let mut lines = vec![
        String::new(),
        crate::printable::line(&format!(
            "THE OPERATOR'S REVIEW of this attempt — {}{}",
            super::describe::review_verdict(r),
            said.unwrap_or_default()
        )),
    ];
    for c in r.comments.iter().flatten() {
        lines.push(crate::printable::line(&format!("  {}:{}", c.path, c.line)));
        lines.push(crate::printable::line(&format!("    > {}", c.text)));
        lines.push(crate::printable::line(&format!("    {}", c.comment)));
    }
    lines
}

/// Opens the inspector's evidence pointer number `n` (1-based) at its file.
pub fn open_evidence(inspector: &Inspector, n: usize) -> Result<Source, String> {
    let Some(pointer) = n.checked_sub(1).and_then(|i| inspector.evidence.get(i)) else {
        return Err(format!(
            "this verdict has {} evidence pointer(s); press 1–{} to open one",
            inspector.evidence.len(),
            inspector.evidence.len().max(1)
        ));
    };
    super::evidence::open(
        pointer,
        inspector.worktree.as_deref(),
        inspector.source.as_deref(),
        inspector.commit.as_deref(),
    )
}

impl super::views::View for Inspector {
    fn mode(&self) -> super::keymap::Mode {
        super::keymap::Mode::Inspector
    }

    fn act(&mut self, action: super::keymap::Action) -> super::views::Step {
        use super::keymap::Action;
        match action {
            Action::Close | Action::Cancel => {
                super::views::Step::Close(super::outcome::Outcome::Closed)
            }
            a => super::views::Step::Stay(Inspector::act(self, a)),
        }
    }

    fn draw(
        &self,
        frame: &mut ratatui::Frame,
        area: ratatui::layout::Rect,
        _paint: &super::views::Paint<'_>,
    ) {
        Inspector::draw(self, frame, area);
    }
}
