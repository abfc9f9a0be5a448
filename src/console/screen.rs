//! The one event loop every screen runs in: the console over a session, the session browser
//! and the prep interview. One input thread and one channel feed it; tailed lines, jobs that
//! finished off the UI thread and the interview's model all report on the same channel, so a
//! screen never blocks on anything but that channel.
//!
//! Screens form a stack: the browser opens a session's console over itself and is shown again
//! when that console closes.

use super::jobs::Job;
use crate::session::tail::TailEvent;
use crossterm::event::{self, Event as TermEvent};
use ratatui::Frame;
use ratatui::layout::Size;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// Everything the loop can be told.
#[derive(Debug)]
pub enum Msg {
    Term(TermEvent),
    /// The terminal can no longer be read.
    InputGone,
    Tail(TailEvent),
    /// A job's report, as the screen it is for receives it (and, unaddressed, for the screen
    /// on top: the interview's thread reports so).
    Job(Job),
    /// A job's report addressed to the screen that started it: the loop hands it to that
    /// screen as [`Msg::Job`] wherever it is in the stack, and drops it when that screen is
    /// gone.
    For(ScreenId, Job),
}

/// Which screen of the loop's stack: given as each is opened, never reused.
pub type ScreenId = u64;

/// What the screen says while quitting waits for `jobs` still at work.
fn finishing(jobs: &[super::jobs::AtWork]) -> String {
    let what: Vec<String> = jobs.iter().map(|j| crate::printable::line(&j.what)).collect();
    format!(
        "Finishing what is still at work before quitting: {}. Press any key to quit now and leave it unfinished.",
        what.join("; ")
    )
}

/// What is said, once the terminal is given back, of a job left unfinished at quit.
fn left_unfinished(job: &super::jobs::AtWork) -> String {
    let again = (job.again.as_deref())
        .map(|c| format!("; `{}` does it again", crate::printable::line(c)))
        .unwrap_or_default();
    format!(
        "harrow: quit while {}: it was stopped unfinished{again}",
        crate::printable::line(&job.what)
    )
}

/// What a screen asks of the loop after a message.
pub enum Flow {
    Stay,
    /// Show this screen over the current one until it closes.
    Open(Box<dyn Screen>),
    /// Close the current screen (the last one closing ends the loop).
    Close,
}

/// What a screen may use of the loop: a sender for its jobs and tailers, the terminal's size
/// (for the mouse), and which screen it is.
#[derive(Debug, Clone)]
pub struct Cx {
    pub tx: Sender<Msg>,
    pub size: Size,
    pub screen: ScreenId,
    /// Jobs started and not finished, across every screen.
    pub running: super::jobs::Running,
}

impl Cx {
    /// Where the screen's slow work reports: this loop's channel, addressed to this screen.
    pub fn jobs(&self) -> super::jobs::Jobs {
        let (tx, screen) = (self.tx.clone(), self.screen);
        super::jobs::Jobs::Spawned {
            report: Arc::new(move |job| {
                let _ = tx.send(Msg::For(screen, job));
            }),
            running: self.running.clone(),
        }
    }
}

/// One screen of the console.
pub trait Screen {
    /// Shown for the first time: start what feeds it (a tailer, the opening effects).
    fn open(&mut self, _cx: &Cx) {}
    /// Whether a frame is due now.
    fn due(&self, now: Instant) -> bool;
    fn draw(&mut self, frame: &mut Frame);
    /// A frame was drawn at `now`.
    fn drawn(&mut self, now: Instant);
    /// How long the loop may wait for a message before the screen needs a turn; `None` waits
    /// until one comes (an idle screen uses no CPU).
    fn wait(&self, now: Instant) -> Option<Duration>;
    /// One message.
    fn on(&mut self, msg: Msg, cx: &Cx) -> Flow;
    /// After the messages that were waiting (or a timeout): clocks and checks.
    fn turn(&mut self, _now: Instant, _cx: &Cx) -> Flow {
        Flow::Stay
    }
    /// Shown again after the screen opened over it closed.
    fn back(&mut self, _cx: &Cx) {}
    /// Closing: give back what the screen took of the terminal (mouse capture).
    fn close(&mut self) {}
}

/// How often the input thread looks up from waiting to see whether it should stop.
const INPUT_POLL: Duration = Duration::from_millis(200);

/// The thread that reads the terminal into the channel; stopped and joined when dropped.
struct Input {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Input {
    fn start(tx: Sender<Msg>) -> std::io::Result<Input> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new().name("harrow-input".into()).spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match event::poll(INPUT_POLL) {
                    Ok(false) => {}
                    Ok(true) => {
                        let Ok(e) = event::read() else { break };
                        if tx.send(Msg::Term(e)).is_err() {
                            break;
                        }
                    }
                    Err(_) => {
                        let _ = tx.send(Msg::InputGone);
                        break;
                    }
                }
            }
        })?;
        Ok(Input { stop, thread: Some(thread) })
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // The reader looks up from its poll every INPUT_POLL. A terminal that hung up — seen
        // by the watcher, or only by a SIGHUP — can hold it inside crossterm's poll for ever:
        // it is waited for a little, then left behind to end with the process.
        let Some(t) = self.thread.take() else { return };
        if HUNG_UP.load(Ordering::SeqCst) {
            return;
        }
        let deadline = Instant::now() + INPUT_POLL * 3;
        while !t.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if t.is_finished() {
            let _ = t.join();
        }
    }
}

/// Set when the terminal hung up: the loop ends and the reader is not waited for.
static HUNG_UP: AtomicBool = AtomicBool::new(false);

/// Watches the terminal (standard input, where the console reads keys) for a hang-up — a
/// window closed without a SIGHUP reaching harrow — which crossterm's reader does not report:
/// it spins inside its poll instead. The loop is woken and ends, giving the terminal back as
/// far as there is one.
fn watch_hangup(tx: Sender<Msg>) {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return;
    }
    let _ = std::thread::Builder::new().name("harrow-hangup".into()).spawn(move || {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        use std::os::fd::AsFd;
        let stdin = std::io::stdin();
        loop {
            let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::empty())];
            match poll(&mut fds, PollTimeout::from(1000u16)) {
                Ok(_) => {
                    let gone = PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL;
                    if fds[0].revents().is_some_and(|r| r.intersects(gone)) {
                        HUNG_UP.store(true, Ordering::SeqCst);
                        let _ = tx.send(Msg::InputGone);
                        return;
                    }
                }
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return,
            }
        }
    });
}

/// Wakes the loop when SIGTERM or SIGHUP arrives, so it closes every screen and gives the
/// terminal back (the loop checks [`crate::signals::received`]). A thread with a runtime of its
/// own: the console runs without one.
fn watch_termination(tx: Sender<Msg>) {
    let _ = std::thread::Builder::new().name("harrow-signals".into()).spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        if runtime.block_on(crate::signals::termination()).is_some() {
            let _ = tx.send(Msg::InputGone);
        }
    });
}

/// The terminal, taken for the console, with the one channel and the one input thread. The
/// terminal is given back when it is dropped; a panic gives it back too (ratatui's hook).
pub struct Console {
    terminal: ratatui::DefaultTerminal,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    input: Option<Input>,
    /// Jobs started by any screen and not finished.
    running: super::jobs::Running,
    /// Jobs the person quit without waiting for: said once the terminal is given back.
    left: Vec<super::jobs::AtWork>,
}

impl Console {
    /// Takes the terminal and starts reading it.
    pub fn open() -> std::io::Result<Console> {
        let terminal = ratatui::try_init()?;
        let (tx, rx) = mpsc::channel();
        watch_termination(tx.clone());
        watch_hangup(tx.clone());
        let input = match Input::start(tx.clone()) {
            Ok(input) => input,
            Err(e) => {
                ratatui::restore();
                return Err(e);
            }
        };
        let running = super::jobs::Running::default();
        Ok(Console { terminal, tx, rx, input: Some(input), running, left: Vec::new() })
    }

    /// A sender into the loop's channel, for work started before the loop runs.
    pub fn sender(&self) -> Sender<Msg> {
        self.tx.clone()
    }

    /// Runs `first` (and whatever it opens) until the last screen closes, then gives jobs
    /// still at work a moment to finish.
    pub fn run(&mut self, first: Box<dyn Screen>) -> std::io::Result<()> {
        let mut next: ScreenId = 0;
        let mut stack: Vec<(ScreenId, Box<dyn Screen>)> = vec![(next, first)];
        if let Some((id, top)) = stack.last_mut() {
            top.open(&self.cx(*id));
        }
        while let Some((top_id, top)) = stack.last_mut() {
            if crate::signals::received().is_some() || HUNG_UP.load(Ordering::SeqCst) {
                // SIGTERM or SIGHUP, or a terminal that hung up: every screen closes and the
                // terminal is given back (as far as there is one).
                break;
            }
            let top_id = *top_id;
            let now = Instant::now();
            if top.due(now) {
                self.terminal.draw(|f| top.draw(f))?;
                top.drawn(now);
            }
            let Ok(first) = self.next_message(top.wait(Instant::now())) else { break };
            let cx = self.cx(top_id);
            let mut flow = Flow::Stay;
            for msg in first.into_iter().chain(self.rx.try_iter()) {
                let msg = match msg {
                    Msg::For(to, job) if to == top_id => Msg::Job(job),
                    Msg::For(to, job) => {
                        // For a screen under the top one, or for one that is gone (dropped).
                        if let Some((_, under)) = stack.iter_mut().find(|(id, _)| *id == to) {
                            under.on(Msg::Job(job), &self.cx(to));
                        }
                        continue;
                    }
                    other => other,
                };
                let Some((_, top)) = stack.last_mut() else { break };
                flow = top.on(msg, &cx);
                if !matches!(flow, Flow::Stay) {
                    break;
                }
            }
            let Some((_, top)) = stack.last_mut() else { break };
            if matches!(flow, Flow::Stay) {
                flow = top.turn(Instant::now(), &cx);
            }
            match flow {
                Flow::Stay => {}
                Flow::Open(mut screen) => {
                    self.terminal.clear()?;
                    next += 1;
                    screen.open(&self.cx(next));
                    stack.push((next, screen));
                }
                Flow::Close => {
                    top.close();
                    stack.pop();
                    self.terminal.clear()?;
                    if let Some((id, under)) = stack.last_mut() {
                        under.back(&self.cx(*id));
                    }
                }
            }
        }
        for (_, screen) in stack.iter_mut().rev() {
            screen.close();
        }
        self.let_jobs_finish();
        Ok(())
    }

    /// The context a screen's calls get.
    fn cx(&self, screen: ScreenId) -> Cx {
        Cx {
            tx: self.tx.clone(),
            size: self.terminal.size().unwrap_or_default(),
            screen,
            running: self.running.clone(),
        }
    }

    /// Waits up to `wait` (or, with none, until one comes) for a message: `Ok(None)` on a
    /// timeout, an error when the channel is gone.
    fn next_message(&self, wait: Option<Duration>) -> Result<Option<Msg>, mpsc::RecvError> {
        match wait {
            Some(wait) => match self.rx.recv_timeout(wait) {
                Ok(m) => Ok(Some(m)),
                Err(RecvTimeoutError::Timeout) => Ok(None),
                Err(RecvTimeoutError::Disconnected) => Err(mpsc::RecvError),
            },
            None => self.rx.recv().map(Some),
        }
    }

    /// Jobs still at work when the last screen closed (an export writing its file, a push)
    /// finish before the console ends, however long they take on this machine, with a line on
    /// screen naming them: a key, a signal or a hung-up terminal ends the wait, and each job
    /// left is said on the terminal given back, with the command that does it again.
    fn let_jobs_finish(&mut self) {
        let mut shown = Vec::new();
        while !self.running.is_empty() {
            let now = self.running.at_work();
            if now != shown {
                let text = finishing(&now);
                let _ = self.terminal.draw(|frame| {
                    let line = ratatui::widgets::Paragraph::new(text.as_str())
                        .wrap(ratatui::widgets::Wrap { trim: true });
                    frame.render_widget(line, frame.area());
                });
                shown = now;
            }
            let gone = crate::signals::received().is_some() || HUNG_UP.load(Ordering::SeqCst);
            let left = gone
                || match self.rx.recv_timeout(Duration::from_millis(50)) {
                    Ok(Msg::Term(TermEvent::Key(_)) | Msg::InputGone)
                    | Err(RecvTimeoutError::Disconnected) => true,
                    Ok(_) | Err(RecvTimeoutError::Timeout) => false,
                };
            if left {
                self.left = self.running.at_work();
                return;
            }
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.input.take();
        ratatui::restore();
        for job in &self.left {
            eprintln!("{}", left_unfinished(job));
        }
    }
}

impl std::fmt::Debug for Flow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Flow::Stay => "Stay",
            Flow::Open(_) => "Open",
            Flow::Close => "Close",
        })
    }
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::jobs::AtWork;

    /// What a job is called comes from a session folder's name, which another user can
    /// choose: the lines that name it, on screen and on the terminal given back, are printable.
    #[test]
    fn a_job_named_from_a_hostile_folder_is_said_printably() {
        let job = AtWork {
            what: "pushing x\u{1b}]0;owned\u{7}\u{1b}[2J".into(),
            again: Some("harrow push x\u{1b}[31m\ny".into()),
        };
        for said in [finishing(std::slice::from_ref(&job)), left_unfinished(&job)] {
            assert!(!said.chars().any(char::is_control), "{said:?}");
            assert!(said.contains("pushing x"), "{said}");
        }
        assert!(left_unfinished(&job).contains("does it again"));
    }
}
